// Quantized weights as real checkpoints store them, read from a SafetensorsFile as host
// TensorViews into its mapping (valid while the file object lives). Every name, dtype and shape
// is checked; a mismatch throws lowbit::Error naming the tensor.
//   DeepSeek-V3 FP8 (block_fp8_mm's B operand):
//     NAME.weight            F8_E4M3 [N, K]
//     NAME.weight_scale_inv  F32     [ceil(N / 128), ceil(K / 128)]   (w = code * scale)
//   NVIDIA ModelOpt NVFP4 (nvfp4_* ops' dense format):
//     NAME.weight            U8      [N, K / 2]   two e2m1 codes per byte, element 0 low nibble
//     NAME.weight_scale      F8_E4M3 [N, K / 16]
//     NAME.weight_scale_2    F32     [] or [1]    (w = e2m1 * block scale * weight_scale_2)
#pragma once

#include <string>

#include "lowbit/safetensors.h"
#include "lowbit/tensor.h"

namespace lowbit {

struct BlockFp8Weight {
  TensorView weight;  // [N, K] fp8_e4m3fn
  TensorView scales;  // [ceil(N / 128), ceil(K / 128)] fp32
};
BlockFp8Weight read_block_fp8_weight(const SafetensorsFile& file, const std::string& name);

struct Nvfp4Weight {
  TensorView packed;        // [N, K / 2] uint8
  TensorView block_scales;  // [N, K / 16] fp8_e4m3fn
  TensorView global_scale;  // [1] fp32
};
Nvfp4Weight read_modelopt_nvfp4_weight(const SafetensorsFile& file, const std::string& name);

}  // namespace lowbit
