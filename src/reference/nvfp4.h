// CPU references of the NVFP4 ops (arguments already validated by src/ops/nvfp4.cpp).
#pragma once

#include <cstdint>

#include "lowbit/nvfp4.h"

namespace lowbit::reference {

void nvfp4_quantize_weight(const Nvfp4QuantizeWeightArgs& args);
void nvfp4_dequantize_weight(const Nvfp4DequantizeWeightArgs& args);
void nvfp4_gemv(const Nvfp4GemvArgs& args);
void nvfp4_sparse24_gemv(const Nvfp4Sparse24GemvArgs& args);

// Nibble `index` (byte index / 2, high nibble when odd) of a byte array.
inline std::uint8_t read_nibble(const std::uint8_t* bytes, std::int64_t index) {
  return static_cast<std::uint8_t>((bytes[index / 2] >> (4 * (index % 2))) & 0xF);
}
inline void write_nibble(std::uint8_t* bytes, std::int64_t index, std::uint8_t value) {
  const int shift = 4 * static_cast<int>(index % 2);
  bytes[index / 2] = static_cast<std::uint8_t>((bytes[index / 2] & ~(0xF << shift)) |
                                               ((value & 0xF) << shift));
}

}  // namespace lowbit::reference
