// Safetensors: round trips through write_safetensors and the memory-mapped reader for every
// dtype lowbit maps, and one test per way a header or file can be malformed (each must throw a
// lowbit::Error naming the problem, never crash or read past the file).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/temp_path.h"
#include "lowbit/error.h"
#include "lowbit/safetensors.h"

namespace lowbit {
namespace {

std::string temp_path(const std::string& name) { return testing::temp_path("lowbit_", name); }

// A file of: declared header length, header text, data bytes.
std::string raw_file(const std::string& name, const std::string& header, std::size_t data_bytes,
                     std::uint64_t declared_length) {
  const std::string path = temp_path(name);
  std::ofstream file(path, std::ios::binary);
  for (int i = 0; i < 8; ++i) file.put(static_cast<char>(declared_length >> (8 * i)));
  file << header << std::string(data_bytes, '\x5a');
  return path;
}

std::string raw_file(const std::string& name, const std::string& header, std::size_t data_bytes) {
  return raw_file(name, header, data_bytes, header.size());
}

// Opens `path` and returns the error message (empty if it opened).
std::string open_error(const std::string& path) {
  try {
    SafetensorsFile::open(path);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

#define EXPECT_OPEN_FAILS(path, text) EXPECT_THAT_ERROR(open_error(path), text)
#define EXPECT_THAT_ERROR(message, text)                                  \
  do {                                                                    \
    const std::string m = (message);                                      \
    EXPECT_NE(m.find(text), std::string::npos) << "message: '" << m << "'"; \
  } while (0)

TEST(Safetensors, RoundTripEveryDType) {
  const std::vector<std::uint16_t> bf16 = {0x3f80, 0xc000, 0x7fc0, 0x0000, 0x1234, 0xffff};
  const std::vector<float> fp32 = {1.5f, -2.0f, 3.25f};
  const std::vector<std::uint8_t> fp8 = {0x00, 0x7e, 0xfe, 0x38, 0x7f, 0x01, 0x02, 0x03};
  const std::vector<std::int32_t> i32 = {-7, 1 << 30};
  const std::vector<std::int8_t> i8 = {-128, 127, 0};
  const std::string path = temp_path("roundtrip.safetensors");
  write_safetensors(path,
                    {{"model.w.weight", DType::kFP8E4M3, {2, 4}, fp8.data()},
                     {"model.w.weight_scale_inv", DType::kFP32, {1, 3}, fp32.data()},
                     {"x.bf16", DType::kBF16, {3, 2}, bf16.data()},
                     {"x.f16", DType::kFP16, {6}, bf16.data()},
                     {"x.e5m2", DType::kFP8E5M2, {8}, fp8.data()},
                     {"x.u8", DType::kUInt8, {2, 2, 2}, fp8.data()},
                     {"x.i8", DType::kInt8, {3}, i8.data()},
                     {"x.i32", DType::kInt32, {2}, i32.data()},
                     {"x.empty", DType::kFP32, {0, 5}, nullptr},
                     {"x.scalar", DType::kFP32, {}, fp32.data()}},
                    {{"format", "pt"}});
  const SafetensorsFile file = SafetensorsFile::open(path);
  ASSERT_EQ(file.tensors().size(), 10u);
  EXPECT_EQ(file.header().metadata.at("format"), "pt");
  EXPECT_EQ(file.header().data_offset % 8, 0u);

  const SafetensorsEntry& weight = file.at("model.w.weight");
  EXPECT_EQ(weight.dtype_name, "F8_E4M3");
  EXPECT_EQ(weight.shape, (std::vector<std::int64_t>{2, 4}));
  EXPECT_EQ(std::vector<std::uint8_t>(file.data(weight), file.data(weight) + 8), fp8);

  const TensorView scales = file.view("model.w.weight_scale_inv", DType::kFP32);
  EXPECT_EQ(scales.rank, 2);
  EXPECT_EQ(scales.shape[0], 1);
  EXPECT_EQ(scales.shape[1], 3);
  EXPECT_EQ(scales.strides[0], 3);
  EXPECT_EQ(static_cast<const float*>(scales.data)[2], 3.25f);

  const std::pair<const char*, const char*> names[] = {
      {"x.bf16", "BF16"}, {"x.f16", "F16"}, {"x.e5m2", "F8_E5M2"}, {"x.u8", "U8"},
      {"x.i8", "I8"},     {"x.i32", "I32"}, {"x.empty", "F32"},    {"x.scalar", "F32"}};
  for (const auto& [name, dtype] : names) EXPECT_EQ(file.at(name).dtype_name, dtype) << name;
  EXPECT_EQ(static_cast<const std::int32_t*>(file.view("x.i32").data)[1], 1 << 30);
  EXPECT_EQ(file.view("x.empty").numel(), 0);
  EXPECT_EQ(file.view("x.scalar").rank, 0);
  EXPECT_EQ(file.find("absent"), nullptr);
  std::remove(path.c_str());
}

TEST(Safetensors, LookupErrorsNameTheTensor) {
  const float value = 1.0f;
  const std::string path = temp_path("lookup.safetensors");
  write_safetensors(path, {{"a", DType::kFP32, {1}, &value}});
  const SafetensorsFile file = SafetensorsFile::open(path);
  try {
    file.at("b");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_THAT_ERROR(error.what(), "a tensor named 'b'");
    EXPECT_THAT_ERROR(error.what(), "'a'");
  }
  try {
    file.view("a", DType::kBF16);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_THAT_ERROR(error.what(), "dtype BF16");
  }
}

TEST(Safetensors, ReadsDTypesLowbitDoesNotMapButRefusesViews) {
  const std::string path =
      raw_file("i64.safetensors", R"({"t":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})", 16);
  const SafetensorsFile file = SafetensorsFile::open(path);
  EXPECT_FALSE(file.at("t").dtype.has_value());
  EXPECT_EQ(file.at("t").element_size, 8u);
  EXPECT_THROW(file.view("t"), Error);
}

TEST(Safetensors, MissingOrTinyFile) {
  EXPECT_OPEN_FAILS(temp_path("does-not-exist"), "a readable file");
  const std::string path = temp_path("tiny");
  std::ofstream(path, std::ios::binary) << "abc";
  EXPECT_OPEN_FAILS(path, "at least 8 bytes");
  std::ofstream(path, std::ios::binary) << "";
  EXPECT_OPEN_FAILS(path, "at least 8 bytes");
}

TEST(Safetensors, HeaderLengthOutOfRange) {
  EXPECT_OPEN_FAILS(raw_file("short.safetensors", "{}", 0, 1), "a valid JSON header");
  EXPECT_OPEN_FAILS(raw_file("past-end.safetensors", "{}", 0, 1000), "a header that fits");
  EXPECT_OPEN_FAILS(raw_file("huge.safetensors", "{}", 0, 1ull << 40), "at most 100000000");
  EXPECT_OPEN_FAILS(raw_file("max.safetensors", "{}", 0, ~0ull), "at most 100000000");
  EXPECT_OPEN_FAILS(raw_file("zero.safetensors", "", 0), "an empty header");
}

TEST(Safetensors, HeaderNotAnObjectOfEntries) {
  EXPECT_OPEN_FAILS(raw_file("array.safetensors", "[1, 2]", 0), "starting with '{'");
  EXPECT_OPEN_FAILS(raw_file("garbage.safetensors", "{\"a\": }", 0), "a valid JSON header");
  EXPECT_OPEN_FAILS(raw_file("trailing.safetensors", "{} x", 0), "a valid JSON header");
  EXPECT_OPEN_FAILS(raw_file("entry.safetensors", R"({"t": 3})", 0), "tensor 't' to be a JSON object");
  EXPECT_OPEN_FAILS(raw_file("keys.safetensors", R"({"t": {"dtype": "F32", "shape": [1]}})", 0),
                    "to have \"data_offsets\"");
  EXPECT_OPEN_FAILS(raw_file("meta.safetensors", R"({"__metadata__": {"a": 1}})", 0),
                    "__metadata__ values to be strings");
  EXPECT_OPEN_FAILS(raw_file("deep.safetensors", R"({"t": {"shape": [[[[1]]]]}})", 0),
                    "nested at most 3 deep");
  EXPECT_OPEN_FAILS(
      raw_file("dup.safetensors",
               R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
               R"("t":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
               2),
      "'t' twice");
  // Spaces after the JSON (writers pad the header) are fine.
  EXPECT_EQ(open_error(raw_file("padded.safetensors", "{}      ", 0)), "");
}

TEST(Safetensors, BadDTypeOrShape) {
  EXPECT_OPEN_FAILS(
      raw_file("dtype.safetensors", R"({"t":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})", 16),
      "dtype to be one of");
  EXPECT_OPEN_FAILS(
      raw_file("neg.safetensors", R"({"t":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}})", 0),
      "shape to be a non-negative integer");
  EXPECT_OPEN_FAILS(
      raw_file("float.safetensors", R"({"t":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}})", 1),
      "shape to be a non-negative integer");
  EXPECT_OPEN_FAILS(
      raw_file("overflow.safetensors",
               R"({"t":{"dtype":"F32","shape":[4611686018427387904, 8],"data_offsets":[0,0]}})", 0),
      "byte count to fit in 64 bits");
}

TEST(Safetensors, BadOffsets) {
  const char* kOneByte = R"({"t":{"dtype":"F32","shape":[2],"data_offsets":%s}})";
  auto header = [&](const char* offsets) {
    char text[200];
    std::snprintf(text, sizeof text, kOneByte, offsets);
    return std::string(text);
  };
  EXPECT_OPEN_FAILS(raw_file("count.safetensors", header("[0]"), 8), "data_offsets to be [begin, end]");
  EXPECT_OPEN_FAILS(raw_file("order.safetensors", header("[8, 0]"), 8), "begin <= end");
  EXPECT_OPEN_FAILS(raw_file("size.safetensors", header("[0, 4]"), 4), "to span 8 bytes");
  EXPECT_OPEN_FAILS(raw_file("gap.safetensors", header("[4, 12]"), 12), "to start at data byte 0");
  EXPECT_OPEN_FAILS(raw_file("truncated.safetensors", header("[0, 8]"), 7), "to end at the file's end");
  EXPECT_OPEN_FAILS(raw_file("extra.safetensors", header("[0, 8]"), 9), "to end at the file's end");
  EXPECT_OPEN_FAILS(
      raw_file("wrap.safetensors", header("[18446744073709551615, 7]"), 8), "begin <= end");
  EXPECT_OPEN_FAILS(
      raw_file("overlap.safetensors",
               R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
               R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
               6),
      "tensor 'b' to start at data byte 4");
}

TEST(Safetensors, TruncatedCopyOfAValidFile) {
  const std::vector<float> values(64, 0.5f);
  const std::string path = temp_path("whole.safetensors");
  write_safetensors(path, {{"w", DType::kFP32, {8, 8}, values.data()}});
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Every prefix shorter than the file fails cleanly.
  for (std::size_t length = 0; length < bytes.size(); length += 7) {
    const std::string cut = temp_path("cut.safetensors");
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, length);
    EXPECT_NE(open_error(cut), "") << "length " << length;
  }
  EXPECT_EQ(open_error(path), "");
}

TEST(Safetensors, WriterValidatesItsArguments) {
  const float value = 0.0f;
  EXPECT_THROW(write_safetensors(temp_path("w1"), {{"a", DType::kFP32, {1}, &value},
                                                   {"a", DType::kFP32, {1}, &value}}),
               Error);
  EXPECT_THROW(write_safetensors(temp_path("w2"), {{"a", DType::kFP32, {-1}, &value}}), Error);
  EXPECT_THROW(write_safetensors(temp_path("w3"), {{"a", DType::kFP32, {2}, nullptr}}), Error);
  EXPECT_THROW(write_safetensors("/nonexistent-dir/x.safetensors", {}), Error);
}

}  // namespace
}  // namespace lowbit
