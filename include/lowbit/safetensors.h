// Safetensors checkpoints: a validating header parser, a memory-mapped reader and a small writer.
//
// File layout (https://github.com/huggingface/safetensors): 8 bytes little-endian u64 N, then N
// bytes of UTF-8 JSON (may end in spaces), then the data buffer. The JSON maps each tensor name to
// {"dtype": "F8_E4M3", "shape": [N, K], "data_offsets": [begin, end]} (offsets relative to the
// data buffer) and may hold "__metadata__": {string: string}. The parser checks everything before
// any byte of data is touched: N fits in the file and is <= 100 MB, the JSON is an object of such
// entries, each dtype is known, each shape is non-negative and its byte count does not overflow,
// end - begin equals that byte count, and the tensors tile the data buffer with no gap, overlap
// or byte past its end. A violation throws lowbit::Error naming the file and the tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lowbit/tensor.h"

namespace lowbit {

struct SafetensorsEntry {
  std::string name;
  std::string dtype_name;           // as written: "F8_E4M3", "BF16", "I64", ...
  std::optional<DType> dtype;       // empty for dtypes lowbit has no DType for (e.g. I64, F64)
  std::size_t element_size = 0;     // bytes per element of dtype_name
  std::vector<std::int64_t> shape;  // any rank, including 0 (a scalar)
  std::uint64_t data_begin = 0;     // byte offsets into the data buffer
  std::uint64_t data_end = 0;
  std::int64_t numel() const;
  std::uint64_t nbytes() const { return data_end - data_begin; }
};

struct SafetensorsHeader {
  std::uint64_t header_bytes = 0;  // N: JSON length
  std::uint64_t data_offset = 0;   // 8 + N: where the data buffer starts in the file
  std::vector<SafetensorsEntry> tensors;  // in data-offset order
  std::map<std::string, std::string> metadata;
};

// Largest JSON header accepted (the reference implementation's limit).
inline constexpr std::uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

// Parses and validates the header of a whole file held in memory ([bytes, bytes + size)).
// `source` names the file in error messages. Never reads outside the given range.
SafetensorsHeader parse_safetensors_header(const std::uint8_t* bytes, std::size_t size,
                                           const std::string& source);

// A read-only, memory-mapped safetensors file. Move-only; unmaps on destruction.
class SafetensorsFile {
 public:
  static SafetensorsFile open(const std::string& path);
  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  const std::string& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }
  const std::vector<SafetensorsEntry>& tensors() const { return header_.tensors; }
  // nullptr when absent.
  const SafetensorsEntry* find(const std::string& name) const;
  // Throws naming the tensor (and listing a few names present) when absent.
  const SafetensorsEntry& at(const std::string& name) const;
  // The tensor's bytes inside the mapping (valid while this object lives).
  const std::uint8_t* data(const SafetensorsEntry& entry) const;
  // A host TensorView over the mapped bytes (contiguous, rank <= 4). Throws if the dtype has no
  // lowbit DType, if it is not `expected` (when given), or if the bytes are not aligned to the
  // element size (copy them out with data() instead).
  TensorView view(const std::string& name, std::optional<DType> expected = std::nullopt) const;

 private:
  SafetensorsFile() = default;
  void release();
  std::string path_;
  const std::uint8_t* mapping_ = nullptr;
  std::size_t mapping_size_ = 0;
  SafetensorsHeader header_;
};

// One tensor to write: host bytes, contiguous, `nbytes` = numel * element size of dtype.
struct SafetensorsWriteEntry {
  std::string name;
  DType dtype = DType::kFP32;
  std::vector<std::int64_t> shape;
  const void* data = nullptr;
};

// Writes a safetensors file: header padded to 8 bytes, data ordered widest dtype first so each
// tensor is aligned to its element size.
void write_safetensors(const std::string& path, const std::vector<SafetensorsWriteEntry>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// The safetensors dtype string of a lowbit DType ("BF16", "F8_E4M3", "U8", ...).
const char* safetensors_dtype_name(DType dtype);

}  // namespace lowbit
