// Reductions over one axis: reduce_sum, reduce_max, argmax and topk_softmax.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "compiler/interp/kernels.h"

namespace etc::interp {

namespace {

// x with the reduced axis moved last, so that each output element's inputs are one dense row.
View axisLast(const View& x, int64_t axis) {
  std::vector<int> order;
  for (int d = 0; d < x.rank(); ++d)
    if (d != axis) order.push_back(d);
  order.push_back(static_cast<int>(axis));
  return x.permuted(order);
}

template <class Reduce>
std::string reduce(OpArgs& a, Reduce reduceFloats, bool is_max) {
  const View &x = a.in[0], &out = a.out[0];
  int64_t axis = a.attrInt("axis");
  if (axis < 0) axis += x.rank();
  if (axis < 0 || axis >= x.rank()) return fmt::format("axis {} is outside rank {}", a.attrInt("axis"), x.rank());
  View v = axisLast(x, axis);
  const int64_t len = v.lastDim();
  int64_t n_out = 1;
  for (int d = 0; d + 1 < v.rank(); ++d) n_out *= v.shape[d];
  if (n_out != out.numel()) return fmt::format("the destination has {} elements; expected {}", out.numel(), n_out);
  if (ir::isInteger(x.dtype)) {
    std::vector<int64_t> in = readInts(v), res(static_cast<size_t>(n_out));
    for (int64_t r = 0; r < n_out; ++r) {
      const int64_t* row = in.data() + r * len;
      if (is_max) {
        int64_t m = std::numeric_limits<int64_t>::min();
        for (int64_t k = 0; k < len; ++k) m = std::max(m, row[k]);
        res[r] = m;
      } else {
        uint64_t s = 0;  // wraps; the store truncates to the dtype's width
        for (int64_t k = 0; k < len; ++k) s += static_cast<uint64_t>(row[k]);
        res[r] = static_cast<int64_t>(s);
      }
    }
    writeInts(out, res.data());
  } else {
    std::vector<double> in = readFloats(v), res(static_cast<size_t>(n_out));
    for (int64_t r = 0; r < n_out; ++r) res[r] = reduceFloats(in.data() + r * len, len);
    writeFloats(out, res.data());
  }
  return "";
}

// Softmax of one row in double.
// NaN logits take no part (p = 0), as the device kernel never picks one: a row's NaN must
// not turn every weight of that row into NaN.
void softmaxSkippingNaN(const double* x, int64_t n, double* p) {
  double m = -HUGE_VAL;
  for (int64_t i = 0; i < n; ++i)
    if (!std::isnan(x[i])) m = std::max(m, x[i]);
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += p[i] = std::isnan(x[i]) ? 0.0 : std::exp(x[i] - m);
  for (int64_t i = 0; i < n; ++i) p[i] = s > 0 ? p[i] / s : 0.0;
}

}  // namespace

std::string opReduceSum(OpArgs& a) {
  return reduce(
      a,
      [](const double* x, int64_t n) {
        double s = 0;  // in index order
        for (int64_t i = 0; i < n; ++i) s += x[i];
        return s;
      },
      false);
}

// The maximum of an empty range is -inf (the integers': the type's minimum).
std::string opReduceMax(OpArgs& a) {
  return reduce(
      a,
      [](const double* x, int64_t n) {
        double m = -HUGE_VAL;
        for (int64_t i = 0; i < n; ++i) {
          if (std::isnan(x[i])) return x[i];
          m = std::max(m, x[i]);
        }
        return m;
      },
      true);
}

// Ties go to the lowest index; a NaN counts as the maximum (the first NaN wins), as in
// reduce_max.
std::string opArgmax(OpArgs& a) {
  const View &x = a.in[0], &out = a.out[0];
  const int64_t len = x.lastDim(), rows = x.rank() == 0 ? 1 : (len ? x.numel() / len : 0);
  if (out.numel() != rows) return fmt::format("the destination has {} elements; expected {}", out.numel(), rows);
  std::vector<int64_t> res(static_cast<size_t>(rows), 0);
  if (ir::isInteger(x.dtype)) {
    std::vector<int64_t> in = readInts(x);
    for (int64_t r = 0; r < rows; ++r)
      res[r] = std::max_element(in.begin() + r * len, in.begin() + (r + 1) * len) - (in.begin() + r * len);
  } else {
    std::vector<double> in = readFloats(x);
    for (int64_t r = 0; r < rows; ++r) {
      const double* row = in.data() + r * len;
      int64_t best = 0;
      for (int64_t k = 1; k < len && !std::isnan(row[best]); ++k)
        if (std::isnan(row[k]) || row[k] > row[best]) best = k;
      res[r] = best;
    }
  }
  writeInts(out, res.data());
  return "";
}

std::string opTopkSoftmax(OpArgs& a) {
  const View &x = a.in[0], &w = a.out[0], &ids = a.out[1];
  const int64_t e = x.lastDim(), k = a.attrInt("k"), rows = e ? x.numel() / e : 0;
  if (k < 1 || k > e) return fmt::format("k = {} is outside [1, {}]", k, e);
  if (w.numel() != rows * k || ids.numel() != rows * k)
    return fmt::format("the destinations do not hold {} rows of {}", rows, k);
  std::vector<double> in = readFloats(x), p(static_cast<size_t>(e)), wout(static_cast<size_t>(rows * k));
  std::vector<int64_t> order, iout(static_cast<size_t>(rows * k));
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = in.data() + r * e;
    softmaxSkippingNaN(xr, e, p.data());
    order.clear();
    for (int64_t i = 0; i < e; ++i)
      if (!std::isnan(xr[i])) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return p[i] > p[j]; });
    const int64_t picked = std::min<int64_t>(k, static_cast<int64_t>(order.size()));
    double chosen = 0;
    for (int64_t j = 0; j < picked; ++j) chosen += p[order[j]];
    for (int64_t j = 0; j < k; ++j) {  // fewer than k numbers: the rest is id 0, weight 0
      iout[r * k + j] = j < picked ? order[j] : 0;
      const double pj = j < picked ? p[order[j]] : 0.0;
      wout[r * k + j] = a.attrBool("renormalize") ? (chosen > 0 ? pj / chosen : 0.0) : pj;
    }
  }
  writeFloats(w, wout.data());
  writeInts(ids, iout.data());
  return "";
}

}  // namespace etc::interp
