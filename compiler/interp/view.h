// Strided views of host tensors: what a slice of a tensor is to the op references. An op reads
// its operands into dense vectors (row-major over the view's shape), computes, and writes its
// results back through the destination views, rounding to their dtypes.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "compiler/interp/interpreter.h"

namespace etc::interp {

struct View {
  ir::DType dtype = ir::DType::F32;
  uint8_t* base = nullptr;       // the element at index (0, ..., 0)
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements

  static View whole(HostTensor& t);
  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numel() const;
  // The view with dimension `dim` fixed at `index` (dropped), or restricted to [lo, hi).
  View at(int dim, int64_t index) const;
  View range(int dim, int64_t lo, int64_t hi) const;
  // The r-th sub-view over the leading dimensions, keeping the last `keep` dimensions (row r of
  // a [..., H] view is lead(r, 1)); r counts row-major over the dropped dimensions.
  View lead(int64_t r, int keep) const;
  // The dimensions reordered: dimension k of the result is dimension order[k] of this view.
  View permuted(const std::vector<int>& order) const;
  // The last dimension's extent (1 for a scalar) and the number of rows before it.
  int64_t lastDim() const { return shape.empty() ? 1 : shape.back(); }
  int64_t rows() const { return numel() / (lastDim() ? lastDim() : 1); }

 private:
  // base moved by `elems` elements. A view of an empty tensor keeps its null base: it has no
  // element to point at, and offsetting a null pointer is undefined (clang's UBSan says so).
  void advance(int64_t elems);
};

// Calls f(offset) for every element of v in row-major order; offsets are in elements.
template <class F>
void forEachOffset(const View& v, F&& f) {
  const int r = v.rank();
  if (r == 0) {
    f(int64_t{0});
    return;
  }
  for (int64_t d : v.shape)
    if (d == 0) return;
  const int64_t inner = v.shape[r - 1], step = v.strides[r - 1];
  std::vector<int64_t> idx(static_cast<size_t>(r - 1), 0);
  int64_t off = 0;
  for (;;) {
    for (int64_t k = 0, o = off; k < inner; ++k, o += step) f(o);
    int d = r - 2;
    for (; d >= 0; --d) {
      off += v.strides[d];
      if (++idx[d] < v.shape[d]) break;
      off -= v.strides[d] * v.shape[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// One element at an element offset from base. Floats round to nearest even on store; integers
// wrap modulo 2^bits; a float loaded from an integer dtype is exact up to 2^53.
double loadFloat(const View& v, int64_t off);
void storeFloat(const View& v, int64_t off, double x);
int64_t loadInt(const View& v, int64_t off);  // floats truncate toward zero
void storeInt(const View& v, int64_t off, int64_t x);

// The float at p holding a bf16 (the top half of an f32: widening is a shift) or an f32.
[[gnu::always_inline]] inline float bf16BitsToFloat(const uint8_t* p) {
  uint16_t half;
  std::memcpy(&half, p, 2);
  const uint32_t bits = static_cast<uint32_t>(half) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
[[gnu::always_inline]] inline float f32BitsToFloat(const uint8_t* p) {
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

// x rounded to a float dtype (nearest even), as a double; other dtypes leave x as it is.
double roundTo(ir::DType t, double x);

std::vector<double> readFloats(const View& v);
std::vector<int64_t> readInts(const View& v);
void writeFloats(const View& v, const double* values);  // v.numel() values, row-major
void writeInts(const View& v, const int64_t* values);
// dst = src element by element (same shapes): bit for bit for the same dtype, else converted.
void copyElements(const View& src, const View& dst);

}  // namespace etc::interp
