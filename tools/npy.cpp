#include "npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "bad_input.h"

namespace etc::tools {
namespace {

const char kMagic[] = "\x93NUMPY";

struct Descr {
  const char* text;
  ir::DType dtype;
};
constexpr Descr kDescrs[] = {{"<f4", ir::DType::F32}, {"<f2", ir::DType::F16}, {"<V2", ir::DType::BF16},
                             {"|V2", ir::DType::BF16}, {"<i4", ir::DType::I32}, {"<i8", ir::DType::I64},
                             {"|u1", ir::DType::U8},  {"<u1", ir::DType::U8}};

// A reader for the header's Python dict literal: {'descr': '<f4', 'fortran_order': False,
// 'shape': (3, 4), }. Only the forms np.save writes.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view s) : s_(s) {}

  void parse(std::string& descr, bool& fortran, std::vector<int64_t>& shape) {
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    expect('{');
    while (true) {
      skip();
      if (peek() == '}') break;
      std::string key = quoted();
      expect(':');
      skip();
      if (key == "descr") {
        descr = quoted();
        seen_descr = true;
      } else if (key == "fortran_order") {
        if (s_.substr(i_, 4) == "True") fortran = true, i_ += 4;
        else if (s_.substr(i_, 5) == "False") fortran = false, i_ += 5;
        else bad("the .npy header's fortran_order is not True or False");
        seen_fortran = true;
      } else if (key == "shape") {
        expect('(');
        while (true) {
          skip();
          if (peek() == ')') break;
          shape.push_back(number());
          skip();
          if (peek() == ',') ++i_;
        }
        ++i_;
        seen_shape = true;
      } else {
        bad("the .npy header has an unknown key '" + key + "'");
      }
      skip();
      if (peek() == ',') ++i_;
    }
    if (!seen_descr || !seen_fortran || !seen_shape) bad("the .npy header lacks descr, fortran_order or shape");
  }

 private:
  char peek() {
    if (i_ >= s_.size()) bad("the .npy header ends early");
    return s_[i_];
  }
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }
  void expect(char c) {
    skip();
    if (peek() != c) bad(std::string("the .npy header is malformed (expected '") + c + "')");
    ++i_;
  }
  std::string quoted() {
    skip();
    char q = peek();
    if (q != '\'' && q != '"') bad("the .npy header is malformed (expected a quoted key or value)");
    size_t end = s_.find(q, i_ + 1);
    if (end == std::string_view::npos) bad("the .npy header has an unterminated string");
    std::string out(s_.substr(i_ + 1, end - i_ - 1));
    i_ = end + 1;
    return out;
  }
  int64_t number() {
    int64_t v = 0;
    size_t start = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s_[i_] - '0', &v)) bad("a .npy shape extent is too large");
      ++i_;
    }
    if (i_ == start) bad("the .npy header's shape is not a tuple of integers");
    return v;
  }

  std::string_view s_;
  size_t i_ = 0;
};

uint64_t loadLe(std::span<const uint8_t> b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | b[at + i];
  return v;
}

}  // namespace

std::string npyDescr(ir::DType t) {
  for (const Descr& d : kDescrs)
    if (d.dtype == t) return d.text;
  return "?";
}

HostTensor parseNpy(std::span<const uint8_t> b) {
  if (b.size() < 10 || std::memcmp(b.data(), kMagic, 6) != 0) bad("not a .npy file (no \\x93NUMPY magic)");
  const int major = b[6];
  if (major < 1 || major > 3) bad("unsupported .npy format version " + std::to_string(major));
  const int len_bytes = major == 1 ? 2 : 4;
  const size_t header_start = 8 + len_bytes;
  if (b.size() < header_start) bad("the .npy file is truncated in its header");
  const uint64_t header_len = loadLe(b, 8, len_bytes);
  if (header_len > b.size() - header_start) bad("the .npy header runs past the end of the file");
  std::string_view header(reinterpret_cast<const char*>(b.data()) + header_start, header_len);
  std::string descr;
  bool fortran = false;
  HostTensor t;
  HeaderParser(header).parse(descr, fortran, t.shape);
  if (fortran) bad("Fortran-order .npy data is not supported (save a C-contiguous array)");
  bool known = false;
  for (const Descr& d : kDescrs)
    if (descr == d.text) t.dtype = d.dtype, known = true;
  if (!known) {
    if (!descr.empty() && descr[0] == '>') bad("big-endian .npy data ('" + descr + "') is not supported");
    bad("unsupported .npy dtype '" + descr + "' (supported: <f4 <f2 <V2 (bf16) <i4 <i8 |u1)");
  }
  uint64_t bytes = static_cast<uint64_t>(ir::dtypeBytes(t.dtype));
  for (int64_t x : t.shape)
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(x), &bytes)) bad("the .npy shape is too large");
  const uint64_t data_start = header_start + header_len;
  if (b.size() - data_start != bytes)
    bad("the .npy data is " + std::to_string(b.size() - data_start) + " bytes, its header says " + std::to_string(bytes));
  t.bytes.assign(b.begin() + data_start, b.end());
  return t;
}

std::vector<uint8_t> encodeNpy(const HostTensor& t) {
  std::string shape;
  for (size_t i = 0; i < t.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape[i]);
  if (t.shape.size() == 1) shape += ",";  // a Python 1-tuple
  std::string header = "{'descr': '" + npyDescr(t.dtype) + "', 'fortran_order': False, 'shape': (" + shape + ")";
  header += ", }";
  // Pad with spaces so that the data starts at a multiple of 64 (numpy's alignment), then '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::vector<uint8_t> out(kMagic, kMagic + 6);
  out.push_back(1);
  out.push_back(0);
  out.push_back(static_cast<uint8_t>(header.size() & 0xff));
  out.push_back(static_cast<uint8_t>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), t.bytes.begin(), t.bytes.end());
  return out;
}

std::vector<uint8_t> readWholeFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot open (" + std::strerror(errno) + ")");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw std::runtime_error(path + ": cannot read");
  return bytes;
}

void writeWholeFile(const std::string& path, std::span<const uint8_t> bytes) {
  const std::string tmp = path + ".tmp-etc-run";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error(path + ": cannot write (" + std::strerror(errno) + ")");
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    f.close();
    if (!f) {
      std::remove(tmp.c_str());
      throw std::runtime_error(path + ": cannot write");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot write (" + why + ")");
  }
}

HostTensor readNpy(const std::string& path) {
  std::vector<uint8_t> bytes = readWholeFile(path);
  try {
    return parseNpy(bytes);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

void writeNpy(const std::string& path, const HostTensor& t) { writeWholeFile(path, encodeNpy(t)); }

}  // namespace etc::tools
