// write_safetensors: the header as JSON (nlohmann), padded with spaces to a multiple of 8 bytes,
// then the tensors back to back, widest dtype first (stable), so every tensor's data is aligned
// to its element size in the file, as the reference implementation's writer also arranges.
#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <memory>

#include <nlohmann/json.hpp>

#include "lowbit/error.h"
#include "lowbit/safetensors.h"

namespace lowbit {

void write_safetensors(const std::string& path, const std::vector<SafetensorsWriteEntry>& given,
                       const std::map<std::string, std::string>& metadata) {
  constexpr const char* kOp = "write_safetensors";
  std::vector<SafetensorsWriteEntry> tensors = given;
  std::stable_sort(tensors.begin(), tensors.end(),
                   [](const SafetensorsWriteEntry& a, const SafetensorsWriteEntry& b) {
                     return dtype_size(a.dtype) > dtype_size(b.dtype);
                   });
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<std::uint64_t> sizes;
  std::uint64_t offset = 0;
  for (const SafetensorsWriteEntry& tensor : tensors) {
    if (tensor.name == "__metadata__" || header.contains(tensor.name)) {
      throw Error(kOp, "tensors", "unique names other than __metadata__", "'" + tensor.name + "'");
    }
    std::uint64_t bytes = dtype_size(tensor.dtype);
    for (std::int64_t extent : tensor.shape) {
      if (extent < 0) throw Error(kOp, tensor.name, "a non-negative shape", std::to_string(extent));
      bytes *= static_cast<std::uint64_t>(extent);
    }
    if (bytes > 0 && tensor.data == nullptr) throw Error(kOp, tensor.name, "data", "nullptr");
    header[tensor.name] = {{"dtype", safetensors_dtype_name(tensor.dtype)},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + bytes}}};
    sizes.push_back(bytes);
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "wb"), std::fclose);
  if (!file) throw Error(kOp, "path", "a writable file", "'" + path + "': " + std::strerror(errno));
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(text.size() >> (8 * i));
  bool ok = std::fwrite(length, 1, 8, file.get()) == 8 &&
            std::fwrite(text.data(), 1, text.size(), file.get()) == text.size();
  for (std::size_t i = 0; ok && i < tensors.size(); ++i) {
    ok = std::fwrite(tensors[i].data, 1, sizes[i], file.get()) == sizes[i];
  }
  if (!ok || std::fflush(file.get()) != 0) {
    throw Error(kOp, "path", "a complete write", "'" + path + "': " + std::strerror(errno));
  }
}

}  // namespace lowbit
