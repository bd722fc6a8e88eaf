#include "compiler/interp/view.h"

#include <cmath>

namespace etc::interp {

namespace {

template <class T>
T get(const View& v, int64_t off) {
  T x;
  std::memcpy(&x, v.base + off * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return x;
}

template <class T>
void put(const View& v, int64_t off, T x) {
  std::memcpy(v.base + off * static_cast<int64_t>(sizeof(T)), &x, sizeof(T));
}

}  // namespace

void View::advance(int64_t elems) {
  if (base) base += elems * ir::dtypeBytes(dtype);
}

View View::whole(HostTensor& t) {
  View v;
  v.dtype = t.dtype;
  v.base = t.bytes.data();
  v.shape = t.shape;
  v.strides.assign(t.shape.size(), 1);
  for (int d = static_cast<int>(t.shape.size()) - 2; d >= 0; --d) v.strides[d] = v.strides[d + 1] * t.shape[d + 1];
  return v;
}

int64_t View::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

View View::at(int dim, int64_t index) const {
  View v = *this;
  v.advance(index * strides[dim]);
  v.shape.erase(v.shape.begin() + dim);
  v.strides.erase(v.strides.begin() + dim);
  return v;
}

View View::range(int dim, int64_t lo, int64_t hi) const {
  View v = *this;
  v.advance(lo * strides[dim]);
  v.shape[dim] = hi - lo;
  return v;
}

View View::lead(int64_t r, int keep) const {
  View v = *this;
  const int drop = rank() - keep;
  int64_t off = 0;
  for (int d = drop - 1; d >= 0; --d) {
    off += (r % shape[d]) * strides[d];
    r /= shape[d];
  }
  v.advance(off);
  v.shape.erase(v.shape.begin(), v.shape.begin() + drop);
  v.strides.erase(v.strides.begin(), v.strides.begin() + drop);
  return v;
}

View View::permuted(const std::vector<int>& order) const {
  View v = *this;
  for (size_t k = 0; k < order.size(); ++k) {
    v.shape[k] = shape[order[k]];
    v.strides[k] = strides[order[k]];
  }
  return v;
}

double loadFloat(const View& v, int64_t off) {
  switch (v.dtype) {
    case ir::DType::F32: return get<float>(v, off);
    case ir::DType::F16: return f16ToDouble(get<uint16_t>(v, off));
    case ir::DType::BF16: return bf16ToDouble(get<uint16_t>(v, off));
    case ir::DType::I32: return get<int32_t>(v, off);
    case ir::DType::I64: return static_cast<double>(get<int64_t>(v, off));
    case ir::DType::U8: return get<uint8_t>(v, off);
  }
  return 0;
}

void storeFloat(const View& v, int64_t off, double x) {
  switch (v.dtype) {
    case ir::DType::F32: put<float>(v, off, doubleToF32(x)); return;
    case ir::DType::F16: put<uint16_t>(v, off, doubleToF16(x)); return;
    case ir::DType::BF16: put<uint16_t>(v, off, doubleToBf16(x)); return;
    default: storeInt(v, off, std::isfinite(x) ? static_cast<int64_t>(std::trunc(x)) : 0); return;
  }
}

int64_t loadInt(const View& v, int64_t off) {
  switch (v.dtype) {
    case ir::DType::I32: return get<int32_t>(v, off);
    case ir::DType::I64: return get<int64_t>(v, off);
    case ir::DType::U8: return get<uint8_t>(v, off);
    default: {
      double x = loadFloat(v, off);
      return std::isfinite(x) ? static_cast<int64_t>(std::trunc(x)) : 0;
    }
  }
}

void storeInt(const View& v, int64_t off, int64_t x) {
  // Wrapping through the unsigned type of the destination's width is the modulo 2^bits rule.
  switch (v.dtype) {
    case ir::DType::I32: put<int32_t>(v, off, static_cast<int32_t>(static_cast<uint32_t>(x))); return;
    case ir::DType::I64: put<int64_t>(v, off, x); return;
    case ir::DType::U8: put<uint8_t>(v, off, static_cast<uint8_t>(x)); return;
    default: storeFloat(v, off, static_cast<double>(x)); return;
  }
}

double roundTo(ir::DType t, double x) {
  switch (t) {
    case ir::DType::F32: return doubleToF32(x);
    case ir::DType::F16: return f16ToDouble(doubleToF16(x));
    case ir::DType::BF16: return bf16ToDouble(doubleToBf16(x));
    default: return x;
  }
}

std::vector<double> readFloats(const View& v) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(v.numel()));
  // The dtype switch sits outside the element loop for the common float dtypes.
  switch (v.dtype) {
    case ir::DType::F32: forEachOffset(v, [&](int64_t o) { out.push_back(get<float>(v, o)); }); break;
    case ir::DType::BF16:
      forEachOffset(v, [&](int64_t o) { out.push_back(bf16BitsToFloat(v.base + 2 * o)); });
      break;
    default: forEachOffset(v, [&](int64_t o) { out.push_back(loadFloat(v, o)); }); break;
  }
  return out;
}

std::vector<int64_t> readInts(const View& v) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(v.numel()));
  forEachOffset(v, [&](int64_t o) { out.push_back(loadInt(v, o)); });
  return out;
}

void writeFloats(const View& v, const double* values) {
  size_t i = 0;
  if (v.dtype == ir::DType::F32) {
    forEachOffset(v, [&](int64_t o) { put<float>(v, o, static_cast<float>(values[i++])); });
  } else {
    forEachOffset(v, [&](int64_t o) { storeFloat(v, o, values[i++]); });
  }
}

void writeInts(const View& v, const int64_t* values) {
  size_t i = 0;
  forEachOffset(v, [&](int64_t o) { storeInt(v, o, values[i++]); });
}

void copyElements(const View& src, const View& dst) {
  if (src.dtype == dst.dtype) {
    const int64_t b = ir::dtypeBytes(src.dtype);
    std::vector<int64_t> offs;
    offs.reserve(static_cast<size_t>(src.numel()));
    forEachOffset(src, [&](int64_t o) { offs.push_back(o); });
    size_t i = 0;
    forEachOffset(dst, [&](int64_t o) {
      std::memcpy(dst.base + o * b, src.base + offs[i++] * b, static_cast<size_t>(b));
    });
    return;
  }
  if (ir::isFloat(src.dtype) || ir::isFloat(dst.dtype)) {
    std::vector<double> x = readFloats(src);
    writeFloats(dst, x.data());
  } else {
    std::vector<int64_t> x = readInts(src);
    writeInts(dst, x.data());
  }
}

}  // namespace etc::interp
