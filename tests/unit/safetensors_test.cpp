#include <gtest/gtest.h>

#include "safetensors.h"

namespace {

using etc::ir::DType;
using etc::tools::parseSafetensors;

std::vector<uint8_t> file(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out(8);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  for (size_t i = 0; i < data_bytes; ++i) out.push_back(static_cast<uint8_t>(i));
  return out;
}

std::string errorOf(const std::vector<uint8_t>& b) {
  try {
    parseSafetensors(b);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(parsed)";
}

TEST(Safetensors, ReadsEveryDtypeAtItsOffsets) {
  std::string h = R"({"__metadata__": {"format": "pt"},
    "a": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]},
    "b": {"dtype": "F16", "shape": [1], "data_offsets": [8, 10]},
    "c": {"dtype": "F32", "shape": [2], "data_offsets": [10, 18]},
    "d": {"dtype": "I32", "shape": [], "data_offsets": [18, 22]},
    "e": {"dtype": "I64", "shape": [1, 1], "data_offsets": [22, 30]},
    "f": {"dtype": "U8", "shape": [3], "data_offsets": [30, 33]}})";
  auto m = parseSafetensors(file(h, 33));
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m["a"].dtype, DType::BF16);
  EXPECT_EQ(m["a"].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(m["a"].bytes, (std::vector<uint8_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(m["b"].dtype, DType::F16);
  EXPECT_EQ(m["c"].bytes.front(), 10);
  EXPECT_EQ(m["d"].shape, std::vector<int64_t>{});
  EXPECT_EQ(m["e"].dtype, DType::I64);
  EXPECT_EQ(m["f"].bytes, (std::vector<uint8_t>{30, 31, 32}));
}

TEST(Safetensors, BadFilesAreOneSentence) {
  EXPECT_EQ(errorOf({1, 2, 3}), "not a .safetensors file (shorter than its 8-byte header length)");
  std::vector<uint8_t> f = file("{}", 0);
  f[0] = 50;
  EXPECT_EQ(errorOf(f), "the .safetensors header (50 bytes) runs past the end of the file");
  f[0] = 0;
  f[4] = 0x10;
  EXPECT_EQ(errorOf(f), "the .safetensors header length 68719476736 is above the 100 MB limit");
  EXPECT_EQ(errorOf(file("[1, 2]", 0)), "the .safetensors header is not a JSON object");
  EXPECT_EQ(errorOf(file(R"({"w": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}})", 8)),
            "tensor 'w' has unsupported dtype F64 (supported: BF16 F16 F32 I32 I64 U8)");
  EXPECT_EQ(errorOf(file(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8)),
            "tensor 'w' has data_offsets [0, 16] outside the 8 data bytes");
  EXPECT_EQ(errorOf(file(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [8, 4]}})", 8)),
            "tensor 'w' has data_offsets [8, 4] outside the 8 data bytes");
  EXPECT_EQ(errorOf(file(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8)),
            "tensor 'w' has 8 data bytes, its dtype and shape need 12");
  EXPECT_EQ(errorOf(file(R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 8]}})", 8)),
            "tensor 'w' has a shape entry that is not a non-negative integer");
  EXPECT_EQ(errorOf(file(R"({"w": {"dtype": "F32", "shape": [2]}})", 8)),
            "tensor 'w' needs \"dtype\", \"shape\" and two \"data_offsets\"");
}

TEST(Safetensors, RejectsOverlappingTensors) {
  EXPECT_EQ(errorOf(file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                             "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})", 12)),
            "tensors 'a' (data_offsets [0, 8]) and 'b' ([4, 12]) overlap");
  // The same range twice is an overlap too; touching ranges and empty tensors are not.
  EXPECT_EQ(errorOf(file(R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
                             "b": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}})", 4)),
            "tensors 'a' (data_offsets [0, 4]) and 'b' ([0, 4]) overlap");
  auto m = parseSafetensors(file(R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
                                     "e": {"dtype": "U8", "shape": [0], "data_offsets": [2, 2]},
                                     "b": {"dtype": "U8", "shape": [2], "data_offsets": [4, 6]}})", 6));
  EXPECT_EQ(m.size(), 3u);
}

TEST(Safetensors, RejectsATensorNamedTwice) {
  EXPECT_EQ(errorOf(file(R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
                             "w": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}})", 2)),
            "the .safetensors header names tensor 'w' twice");
  // Equal keys inside a tensor's own object are not tensor names.
  EXPECT_EQ(errorOf(file(R"({"__metadata__": {"k": "1", "k": "2"},
                             "w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})", 1)),
            "(parsed)");
}

}  // namespace
