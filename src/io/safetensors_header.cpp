// Safetensors header parsing and validation (format: include/lowbit/safetensors.h). Pure: takes
// the file's bytes, returns the entries, throws lowbit::Error on anything malformed. The fuzz
// target tests/fuzz/fuzz_safetensors_header.cpp drives this function directly.
#include <algorithm>
#include <limits>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "lowbit/error.h"
#include "lowbit/safetensors.h"
#include "safetensors_dtypes.h"

namespace lowbit {
namespace {

using nlohmann::json;

constexpr const char* kOp = "read_safetensors";
// A safetensors header nests to depth 3 at most: {name: {"shape": [dim]}}.
constexpr int kMaxJsonDepth = 3;

[[noreturn]] void fail(const std::string& source, const std::string& expected,
                       const std::string& got) {
  throw Error(kOp, source, expected, got);
}

std::uint64_t read_le_u64(const std::uint8_t* bytes) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

// A JSON value that must be a non-negative integer no larger than `limit`.
std::uint64_t unsigned_field(const json& value, std::uint64_t limit, const std::string& source,
                             const std::string& what) {
  if (!value.is_number_unsigned()) {
    fail(source, what + " to be a non-negative integer", value.dump());
  }
  const auto number = value.get<std::uint64_t>();
  if (number > limit) fail(source, what + " <= " + std::to_string(limit), std::to_string(number));
  return number;
}

SafetensorsEntry parse_entry(const std::string& name, const json& info, const std::string& source) {
  const std::string where = "tensor '" + name + "'";
  if (!info.is_object()) fail(source, where + " to be a JSON object", info.dump());
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!info.contains(key)) fail(source, where + " to have \"" + key + "\"", info.dump());
  }
  SafetensorsEntry entry;
  entry.name = name;

  const json& dtype = info["dtype"];
  if (!dtype.is_string()) fail(source, where + " dtype to be a string", dtype.dump());
  entry.dtype_name = dtype.get<std::string>();
  const SafetensorsDTypeInfo* dtype_info = find_safetensors_dtype(entry.dtype_name);
  if (dtype_info == nullptr) {
    fail(source, where + " dtype to be one of " + safetensors_dtype_list(), entry.dtype_name);
  }
  entry.element_size = dtype_info->element_size;
  entry.dtype = dtype_info->dtype;

  const json& shape = info["shape"];
  if (!shape.is_array()) fail(source, where + " shape to be an array", shape.dump());
  std::uint64_t bytes = entry.element_size;
  for (const json& dim : shape) {
    const std::uint64_t extent =
        unsigned_field(dim, std::numeric_limits<std::int64_t>::max(), source, where + " shape");
    entry.shape.push_back(static_cast<std::int64_t>(extent));
    if (extent != 0 && bytes > std::numeric_limits<std::uint64_t>::max() / extent) {
      fail(source, where + " byte count to fit in 64 bits", shape.dump());
    }
    bytes *= extent;
  }

  const json& offsets = info["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) {
    fail(source, where + " data_offsets to be [begin, end]", offsets.dump());
  }
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max();
  entry.data_begin = unsigned_field(offsets[0], limit, source, where + " data_offsets begin");
  entry.data_end = unsigned_field(offsets[1], limit, source, where + " data_offsets end");
  if (entry.data_end < entry.data_begin) {
    fail(source, where + " data_offsets begin <= end", offsets.dump());
  }
  if (entry.data_end - entry.data_begin != bytes) {
    fail(source,
         where + " data_offsets to span " + std::to_string(bytes) + " bytes (" +
             entry.dtype_name + " " + shape.dump() + ")",
         offsets.dump());
  }
  return entry;
}

json parse_json(const std::uint8_t* first, const std::uint8_t* last, const std::string& source) {
  std::set<std::string> top_level_keys;
  // Rejects deep nesting and duplicate tensor names while parsing, before a DOM is built.
  const json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth > kMaxJsonDepth) {
      fail(source, "JSON nested at most " + std::to_string(kMaxJsonDepth) + " deep",
           "deeper nesting");
    }
    if (event == json::parse_event_t::key && depth == 1 &&
        !top_level_keys.insert(parsed.get<std::string>()).second) {
      fail(source, "each tensor named once", "'" + parsed.get<std::string>() + "' twice");
    }
    return true;
  };
  try {
    return json::parse(first, last, check);
  } catch (const json::exception& error) {
    fail(source, "a valid JSON header", error.what());
  }
}

}  // namespace

std::int64_t SafetensorsEntry::numel() const {
  std::int64_t count = 1;
  for (std::int64_t extent : shape) count *= extent;
  return count;
}

SafetensorsHeader parse_safetensors_header(const std::uint8_t* bytes, std::size_t size,
                                           const std::string& source) {
  if (size < 8) fail(source, "at least 8 bytes (the header length)", std::to_string(size) + " bytes");
  SafetensorsHeader header;
  header.header_bytes = read_le_u64(bytes);
  if (header.header_bytes > kSafetensorsMaxHeaderBytes) {
    fail(source, "a header of at most " + std::to_string(kSafetensorsMaxHeaderBytes) + " bytes",
         std::to_string(header.header_bytes) + " bytes");
  }
  if (header.header_bytes > size - 8) {
    fail(source, "a header that fits in the file",
         std::to_string(header.header_bytes) + " header bytes in a file of " +
             std::to_string(size) + " bytes");
  }
  header.data_offset = 8 + header.header_bytes;
  const std::uint8_t* json_begin = bytes + 8;
  if (header.header_bytes == 0 || json_begin[0] != '{') {
    fail(source, "a header starting with '{'",
         header.header_bytes == 0 ? "an empty header" : "another first byte");
  }
  const json root = parse_json(json_begin, json_begin + header.header_bytes, source);
  if (!root.is_object()) fail(source, "a JSON object header", root.type_name());

  for (const auto& [name, value] : root.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) fail(source, "__metadata__ to be an object", value.type_name());
      for (const auto& [key, text] : value.items()) {
        if (!text.is_string()) fail(source, "__metadata__ values to be strings", text.dump());
        header.metadata[key] = text.get<std::string>();
      }
      continue;
    }
    header.tensors.push_back(parse_entry(name, value, source));
  }

  // The tensors must tile the data buffer exactly: sorted by offset, each starts where the
  // previous ended, and the last ends at the end of the file.
  std::sort(header.tensors.begin(), header.tensors.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
              return a.data_begin != b.data_begin ? a.data_begin < b.data_begin
                                                  : a.data_end < b.data_end;
            });
  const std::uint64_t data_size = size - header.data_offset;
  std::uint64_t cursor = 0;
  for (const SafetensorsEntry& entry : header.tensors) {
    if (entry.data_begin != cursor) {
      fail(source,
           "tensor '" + entry.name + "' to start at data byte " + std::to_string(cursor) +
               " (tensors tile the data buffer with no gap or overlap)",
           std::to_string(entry.data_begin));
    }
    cursor = entry.data_end;
  }
  if (cursor != data_size) {
    fail(source, "tensors to end at the file's end (data buffer of " + std::to_string(data_size) +
                     " bytes)",
         "tensors ending at data byte " + std::to_string(cursor));
  }
  return header;
}

}  // namespace lowbit
