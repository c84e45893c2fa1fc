// SafetensorsFile: maps a checkpoint read-only (POSIX mmap) and validates its header before any
// tensor byte is handed out.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "lowbit/error.h"
#include "lowbit/safetensors.h"

namespace lowbit {
namespace {

constexpr const char* kOp = "read_safetensors";

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// Closes a file descriptor on every path out of open().
struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  FileDescriptor file;
  file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0) throw Error(kOp, "path", "a readable file", "'" + path + "': " + std::strerror(errno));
  struct stat info {};
  if (::fstat(file.fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    throw Error(kOp, "path", "a regular file", "'" + path + "'");
  }
  SafetensorsFile result;
  result.path_ = path;
  result.mapping_size_ = static_cast<std::size_t>(info.st_size);
  if (result.mapping_size_ < 8) {
    throw Error(kOp, path, "at least 8 bytes (the header length)",
                std::to_string(result.mapping_size_) + " bytes");
  }
  void* mapping = ::mmap(nullptr, result.mapping_size_, PROT_READ, MAP_PRIVATE, file.fd, 0);
  if (mapping == MAP_FAILED) {
    throw Error(kOp, path, "a file that can be memory-mapped", std::strerror(errno));
  }
  result.mapping_ = static_cast<const std::uint8_t*>(mapping);
  result.header_ = parse_safetensors_header(result.mapping_, result.mapping_size_, path);
  return result;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept { *this = std::move(other); }

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    header_ = std::move(other.header_);
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_size_ = std::exchange(other.mapping_size_, 0);
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() { release(); }

void SafetensorsFile::release() {
  if (mapping_ != nullptr) ::munmap(const_cast<std::uint8_t*>(mapping_), mapping_size_);
  mapping_ = nullptr;
  mapping_size_ = 0;
}

const SafetensorsEntry* SafetensorsFile::find(const std::string& name) const {
  for (const SafetensorsEntry& entry : header_.tensors) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

const SafetensorsEntry& SafetensorsFile::at(const std::string& name) const {
  if (const SafetensorsEntry* entry = find(name)) return *entry;
  std::string present;
  for (std::size_t i = 0; i < header_.tensors.size() && i < 5; ++i) {
    present += (i ? ", '" : "'") + header_.tensors[i].name + "'";
  }
  if (header_.tensors.size() > 5) present += ", ...";
  throw Error(kOp, path_, "a tensor named '" + name + "'",
              std::to_string(header_.tensors.size()) + " tensors: " + present);
}

const std::uint8_t* SafetensorsFile::data(const SafetensorsEntry& entry) const {
  return mapping_ + header_.data_offset + entry.data_begin;
}

TensorView SafetensorsFile::view(const std::string& name, std::optional<DType> expected) const {
  const SafetensorsEntry& entry = at(name);
  const std::string where = path_ + ": tensor '" + name + "'";
  if (!entry.dtype) throw Error(kOp, where, "a dtype lowbit has", entry.dtype_name);
  if (expected && *entry.dtype != *expected) {
    throw Error(kOp, where, std::string("dtype ") + safetensors_dtype_name(*expected),
                entry.dtype_name);
  }
  if (entry.shape.size() > static_cast<std::size_t>(kMaxRank)) {
    throw Error(kOp, where, "rank <= " + std::to_string(kMaxRank), shape_text(entry.shape));
  }
  const std::uint8_t* bytes = data(entry);
  if (reinterpret_cast<std::uintptr_t>(bytes) % entry.element_size != 0) {
    throw Error(kOp, where, "data aligned to its element size", "an unaligned offset");
  }
  TensorView view;
  view.data = const_cast<std::uint8_t*>(bytes);  // views are mutable by type; this one is read-only
  view.dtype = *entry.dtype;
  view.device = Device::kCPU;
  view.rank = static_cast<int>(entry.shape.size());
  std::int64_t stride = 1;
  for (int dim = view.rank - 1; dim >= 0; --dim) {
    view.shape[dim] = entry.shape[dim];
    view.strides[dim] = stride;
    stride *= entry.shape[dim];
  }
  return view;
}

}  // namespace lowbit
