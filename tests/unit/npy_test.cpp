#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "npy.h"

namespace {

using etc::interp::HostTensor;
using etc::ir::DType;
using etc::tools::encodeNpy;
using etc::tools::parseNpy;

std::vector<uint8_t> bytesOf(const std::string& s) { return {s.begin(), s.end()}; }

std::vector<uint8_t> fileWith(const std::string& header, size_t data_bytes) {
  std::string h = header;
  std::vector<uint8_t> out = bytesOf(std::string("\x93NUMPY\x01\x00", 8));
  out.push_back(static_cast<uint8_t>(h.size()));
  out.push_back(0);
  out.insert(out.end(), h.begin(), h.end());
  out.resize(out.size() + data_bytes, 0x11);
  return out;
}

std::string errorOf(const std::vector<uint8_t>& b) {
  try {
    parseNpy(b);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(parsed)";
}

TEST(Npy, RoundTripEveryDtype) {
  const std::pair<DType, const char*> cases[] = {{DType::F32, "<f4"}, {DType::F16, "<f2"}, {DType::BF16, "<V2"},
                                                 {DType::I32, "<i4"}, {DType::I64, "<i8"}, {DType::U8, "|u1"}};
  for (const auto& [dt, descr] : cases) {
    for (std::vector<int64_t> shape : {std::vector<int64_t>{}, {5}, {2, 3}, {1, 2, 3, 2}}) {
      HostTensor t = etc::interp::makeTensor(dt, shape, std::vector<double>(static_cast<size_t>(etc::interp::zeros(dt, shape).numel()), 3.0));
      for (size_t i = 0; i < t.bytes.size(); ++i) t.bytes[i] = static_cast<uint8_t>(i * 7 + 1);
      std::vector<uint8_t> file = encodeNpy(t);
      std::string text(file.begin(), file.end());
      EXPECT_NE(text.find(std::string("'descr': '") + descr + "'"), std::string::npos) << text.substr(0, 80);
      size_t header_end = text.find('\n') + 1;
      EXPECT_EQ(header_end % 64, 0u);
      HostTensor back = parseNpy(file);
      EXPECT_EQ(back.dtype, dt);
      EXPECT_EQ(back.shape, shape);
      EXPECT_EQ(back.bytes, t.bytes);
    }
  }
}

TEST(Npy, HeaderTextMatchesNumpy) {
  HostTensor t = etc::interp::zeros(DType::F32, {3});
  std::vector<uint8_t> f = encodeNpy(t);
  std::string s(f.begin() + 10, f.end());
  EXPECT_TRUE(s.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }")) << s;
  t = etc::interp::zeros(DType::F32, {3, 4});
  f = encodeNpy(t);
  s.assign(f.begin() + 10, f.end());
  EXPECT_TRUE(s.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }")) << s;
}

TEST(Npy, ReadsWhatNumpyWrites) {
  // np.save of np.arange(6, dtype='<i4').reshape(2, 3), header as numpy 1.x writes it.
  std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }";
  header.append(118 - header.size() - 1, ' ');
  header += '\n';
  std::vector<uint8_t> f = fileWith(header, 0);
  for (int32_t i = 0; i < 6; ++i)
    for (int k = 0; k < 4; ++k) f.push_back(static_cast<uint8_t>(i >> (8 * k)));
  HostTensor t = parseNpy(f);
  EXPECT_EQ(t.dtype, DType::I32);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(etc::interp::toInts(t), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(parseNpy(fileWith("{'descr': '|V2', 'fortran_order': False, 'shape': (2,), }\n", 4)).dtype, DType::BF16);
}

TEST(Npy, BadFilesAreOneSentence) {
  EXPECT_EQ(errorOf(bytesOf("hello world")), "not a .npy file (no \\x93NUMPY magic)");
  EXPECT_EQ(errorOf(fileWith("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }\n", 16)),
            "unsupported .npy dtype '<f8' (supported: <f4 <f2 <V2 (bf16) <i4 <i8 |u1)");
  EXPECT_EQ(errorOf(fileWith("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", 8)),
            "big-endian .npy data ('>f4') is not supported");
  EXPECT_EQ(errorOf(fileWith("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }\n", 16)),
            "Fortran-order .npy data is not supported (save a C-contiguous array)");
  EXPECT_EQ(errorOf(fileWith("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }\n", 12)),
            "the .npy data is 12 bytes, its header says 16");
  EXPECT_EQ(errorOf(fileWith("{'descr': '<f4', 'shape': (2, 2), }\n", 16)), "the .npy header lacks descr, fortran_order or shape");
  EXPECT_EQ(errorOf(fileWith("{'descr': '<f4', 'fortran_order': False, 'shape': (a,), }\n", 16)),
            "the .npy header's shape is not a tuple of integers");
  std::vector<uint8_t> f = fileWith("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", 8);
  f[8] = 200;  // header length past the end
  EXPECT_EQ(errorOf(f), "the .npy header runs past the end of the file");
  f = fileWith("{}", 0);
  f[6] = 9;
  EXPECT_EQ(errorOf(f), "unsupported .npy format version 9");
}

TEST(Npy, FilesNameThemselvesAndWritesAreAtomic) {
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/npy_test_out.npy";
  HostTensor t = etc::interp::makeTensor(DType::F32, {2}, {1.5, -2.0});
  etc::tools::writeNpy(path, t);
  EXPECT_EQ(etc::tools::readNpy(path).bytes, t.bytes);
  std::remove(path.c_str());
  try {
    etc::tools::writeNpy(dir + "/no/such/dir/y.npy", t);
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), dir + "/no/such/dir/y.npy: cannot write (No such file or directory)");
  }
  std::ofstream(path) << "garbage";
  try {
    etc::tools::readNpy(path);
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": not a .npy file (no \\x93NUMPY magic)");
  }
  std::remove(path.c_str());
}

}  // namespace
