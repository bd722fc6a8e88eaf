// Mixture-of-experts references: moe_align (grouping routed rows by expert), grouped_matmul
// (per-expert projections over the aligned blocks) and moe_combine (the weighted sum back).
#include <fmt/format.h>

#include "compiler/interp/kernels.h"

namespace etc::interp {

std::string opMoeAlign(OpArgs& a) {
  const View& ids_view = a.in[0];
  const View &sorted_v = a.out[0], &bexp_v = a.out[1], &nblk_v = a.out[2];
  const int64_t experts = a.attrInt("num_experts"), block = a.attrInt("block");
  if (experts <= 0 || block <= 0) return "num_experts and block must be positive";
  std::vector<int64_t> ids = readInts(ids_view);
  const int64_t total = static_cast<int64_t>(ids.size());  // T * K, also the padding value
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(experts));
  for (int64_t i = 0; i < total; ++i) {
    if (ids[i] < 0 || ids[i] >= experts)
      return fmt::format("expert id {} (entry {}) is outside [0, {})", ids[i], i, experts);
    rows[ids[i]].push_back(i);
  }
  std::vector<int64_t> sorted(static_cast<size_t>(sorted_v.numel()), total);
  std::vector<int64_t> bexp(static_cast<size_t>(bexp_v.numel()), -1);
  int64_t used = 0;
  for (int64_t e = 0; e < experts; ++e) {
    const auto& r = rows[e];
    const int64_t nb = (static_cast<int64_t>(r.size()) + block - 1) / block;
    if ((used + nb) * block > sorted_v.numel() || used + nb > bexp_v.numel())
      return fmt::format("{} blocks do not fit the destinations ({} ids, {} blocks)", used + nb, sorted_v.numel(),
                         bexp_v.numel());
    for (size_t j = 0; j < r.size(); ++j) sorted[used * block + static_cast<int64_t>(j)] = r[j];
    for (int64_t b = 0; b < nb; ++b) bexp[used + b] = e;
    used += nb;
  }
  writeInts(sorted_v, sorted.data());
  writeInts(bexp_v, bexp.data());
  std::vector<int64_t> n(static_cast<size_t>(nblk_v.numel()), used);
  writeInts(nblk_v, n.data());
  return "";
}

// At the op level the operands hold every block (block_expert [NB], num_blocks [1]); at the
// task level a tile holds one block (block_expert and num_blocks scalars). Either way a block
// runs when it is among the first num_blocks of its operand and its expert is not -1, and an
// id >= R * top_k is padding. With a sixth operand (w_up), w holds the gate rows and w_up the
// up rows; otherwise silu_mul takes the gate from w's first half and the up from its second.
std::string opGroupedMatmul(OpArgs& a) {
  const View &x = a.in[0], &w = a.in[1], &out = a.out[0];
  const int64_t top_k = a.attrInt("top_k"), block = a.attrInt("block");
  const bool silu_mul = a.attrString("act") == "silu_mul";
  const bool split = a.in.size() == 6;
  if (x.rank() != 2 || w.rank() != 3 || out.rank() != 2) return "x, w and y must have ranks 2, 3 and 2";
  const int64_t rows = x.shape[0], kd = x.shape[1], experts = w.shape[0], n_w = w.shape[1];
  const int64_t n_out = silu_mul && !split ? n_w / 2 : n_w;
  const int64_t n = silu_mul ? 2 * n_out : n_out;  // rows of h: gate then up
  if (w.shape[2] != kd || out.shape[1] != n_out || out.shape[0] != rows * top_k || block <= 0 ||
      (split && (!silu_mul || a.in[5].shape != w.shape)))
    return "operand shapes disagree";
  std::vector<int64_t> sorted = readInts(a.in[2]), bexp = readInts(a.in[3]), nblk = readInts(a.in[4]);
  const int64_t blocks = std::min<int64_t>(static_cast<int64_t>(sorted.size()) / block, nblk.at(0));
  std::vector<double> xr, h(static_cast<size_t>(n)), y(static_cast<size_t>(n_out));
  for (int64_t b = 0; b < blocks && b < static_cast<int64_t>(bexp.size()); ++b) {
    const int64_t e = bexp[b];
    if (e == -1) continue;
    if (e < 0 || e >= experts) return fmt::format("block {} names expert {}, outside [0, {})", b, e, experts);
    std::vector<double> we = readFloats(w.at(0, e));  // [N, Kd]: transposed like a linear weight
    if (split) {
      std::vector<double> up = readFloats(a.in[5].at(0, e));
      we.insert(we.end(), up.begin(), up.end());
    }
    for (int64_t j = 0; j < block; ++j) {
      const int64_t s = sorted[b * block + j];
      if (s < 0 || s >= rows * top_k) continue;
      xr = readFloats(x.at(0, s / top_k));
      for (int64_t c = 0; c < n; ++c) {
        double acc = 0;
        for (int64_t t = 0; t < kd; ++t) acc += xr[t] * we[c * kd + t];
        h[c] = acc;
      }
      for (int64_t c = 0; c < n_out; ++c) y[c] = silu_mul ? silu(h[c]) * h[c + n_out] : h[c];
      writeFloats(out.at(0, s), y.data());
    }
  }
  return "";
}

std::string opMoeCombine(OpArgs& a) {
  const View &y = a.in[0], &wts = a.in[1], &out = a.out[0];
  if (y.rank() != 2 || wts.rank() != 2) return "y and weights must have rank 2";
  const int64_t t = wts.shape[0], k = wts.shape[1], h = y.shape[1];
  if (y.shape[0] != t * k || out.numel() != t * h) return "operand shapes disagree";
  std::vector<double> yv = readFloats(y), wv = readFloats(wts), o(static_cast<size_t>(t * h), 0.0);
  for (int64_t r = 0; r < t; ++r)
    for (int64_t j = 0; j < k; ++j)  // in increasing k
      for (int64_t c = 0; c < h; ++c) o[r * h + c] += wv[r * k + j] * yv[(r * k + j) * h + c];
  writeFloats(out, o.data());
  return "";
}

}  // namespace etc::interp
