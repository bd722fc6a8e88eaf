// Row-wise references over the last axis: rmsnorm, add_rmsnorm and rope.
#include <fmt/format.h>

#include <cmath>

#include "compiler/interp/kernels.h"

namespace etc::interp {

namespace {

// y = x / sqrt(mean(x^2) + eps) * w for each row of x (rows of length w.size()).
void rmsnormRows(const std::vector<double>& x, const std::vector<double>& w, double eps, std::vector<double>& y) {
  const size_t h = w.size();
  y.resize(x.size());
  if (h == 0) return;
  for (size_t r = 0; r < x.size() / h; ++r) {
    const double* row = x.data() + r * h;
    double ss = 0;
    for (size_t i = 0; i < h; ++i) ss += row[i] * row[i];
    double inv = 1.0 / std::sqrt(ss / static_cast<double>(h) + eps);
    for (size_t i = 0; i < h; ++i) y[r * h + i] = row[i] * inv * w[i];
  }
}

}  // namespace

std::string opRmsnorm(OpArgs& a) {
  const View &x = a.in[0], &w = a.in[1], &out = a.out[0];
  // With head_dim, the weight covers one head and each head of a row is a row of its own.
  const int64_t hd = a.attrInt("head_dim");
  const bool heads_ok = hd > 0 ? w.numel() == hd && x.lastDim() % hd == 0 : x.lastDim() == w.numel();
  if (x.numel() != out.numel() || !heads_ok)
    return fmt::format("shapes disagree: x has {} elements in rows of {}, weight {}, destination {}", x.numel(),
                       x.lastDim(), w.numel(), out.numel());
  std::vector<double> y;
  rmsnormRows(readFloats(x), readFloats(w), a.attrFloat("eps"), y);
  writeFloats(out, y.data());
  return "";
}

std::string opAddRmsnorm(OpArgs& a) {
  const View &x = a.in[0], &res = a.in[1], &w = a.in[2], &normed = a.out[0], &res_out = a.out[1];
  if (x.numel() != res.numel() || x.numel() != normed.numel() || x.numel() != res_out.numel() ||
      x.lastDim() != w.numel())
    return "operand and destination shapes disagree";
  // Every operand is read before anything is written: residual_out may be residual itself.
  std::vector<double> s = readFloats(x), r = readFloats(res), y;
  for (size_t i = 0; i < s.size(); ++i) s[i] = roundTo(res_out.dtype, s[i] + r[i]);
  rmsnormRows(s, readFloats(w), a.attrFloat("eps"), y);
  writeFloats(res_out, s.data());
  writeFloats(normed, y.data());
  return "";
}

std::string opRope(OpArgs& a) {
  const View &q = a.in[0], &k = a.in[1], &pos = a.in[2];
  const int64_t d = a.attrInt("head_dim");
  if (d <= 0 || d % 2) return fmt::format("head_dim {} is not a positive even number", d);
  std::vector<int64_t> p = readInts(pos);
  const int64_t rows = static_cast<int64_t>(p.size());
  if (q.numel() != rows * q.lastDim() || k.numel() != rows * k.lastDim() || q.lastDim() % d || k.lastDim() % d)
    return "q, k and pos do not have matching rows of whole heads";

  // The per-pair frequencies, rescaled as in Llama 3.1 when asked.
  const int64_t half = d / 2;
  const double theta = a.attrFloat("theta");
  std::vector<double> freq(static_cast<size_t>(half));
  const bool llama3 = a.attrString("scaling") == "llama3";
  const double factor = a.attrFloat("scaling_factor"), low = a.attrFloat("low_freq_factor"),
               high = a.attrFloat("high_freq_factor"), orig = static_cast<double>(a.attrInt("original_max_position"));
  for (int64_t j = 0; j < half; ++j) {
    double f = std::pow(theta, -2.0 * static_cast<double>(j) / static_cast<double>(d));
    if (llama3) {
      const double wavelen = 2 * M_PI / f, lo_wavelen = orig / low, hi_wavelen = orig / high;
      if (wavelen > lo_wavelen) {
        f = f / factor;
      } else if (wavelen >= hi_wavelen) {
        double s = (orig / wavelen - low) / (high - low);
        f = (1 - s) * f / factor + s * f;
      }
    }
    freq[j] = f;
  }

  auto rotate = [&](const View& in, const View& out) {
    std::vector<double> x = readFloats(in), y(x.size());
    const int64_t width = in.lastDim();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t h = 0; h < width / d; ++h) {
        const double* xs = x.data() + r * width + h * d;
        double* ys = y.data() + r * width + h * d;
        for (int64_t j = 0; j < half; ++j) {
          double angle = static_cast<double>(p[r]) * freq[j], c = std::cos(angle), s = std::sin(angle);
          ys[j] = xs[j] * c - xs[j + half] * s;
          ys[j + half] = xs[j + half] * c + xs[j] * s;
        }
      }
    }
    writeFloats(out, y.data());
  };
  rotate(q, a.out[0]);
  rotate(k, a.out[1]);
  return "";
}

}  // namespace etc::interp
