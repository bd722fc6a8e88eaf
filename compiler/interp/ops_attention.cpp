// Decode attention references: kv_append (the in-place cache update), attention_decode (one
// query row against the cached positions, grouped-query heads), split_lens and kv_ranges (the
// lengths, or first positions and counts, of a split-KV attention's parts) and attention_merge (combining the partials through their
// log-sum-exps). kv_append and attention_decode take either contiguous caches (one per row) or
// page pools with a page table (docs/ops.md).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "compiler/interp/kernels.h"

namespace etc::interp {

namespace {

// Where a row's cache positions are: its own cache [S, X], or rows of a page pool
// [P, PAGE, X] through the row's page table.
struct CacheRows {
  const View* cache = nullptr;
  const View* table = nullptr;  // [rows, MAXP] (paged) or null

  bool paged() const { return table != nullptr; }
  int64_t pageSize() const { return cache->shape[1]; }
  // Positions row r can hold.
  int64_t capacity() const { return paged() ? table->lastDim() * pageSize() : cache->shape[cache->rank() - 2]; }

  // Position i of row r ([X]), or the reason it has none.
  std::string row(int64_t r, int64_t i, View& out) const {
    if (!paged()) {
      out = cache->lead(r, 2).at(0, i);
      return "";
    }
    const int64_t page = loadInt(table->lead(r, 1).at(0, i / pageSize()), 0);
    if (page < 0 || page >= cache->shape[0])
      return fmt::format("page {} of row {} (for position {}) is outside the pool [0, {})", page, r, i,
                         cache->shape[0]);
    out = cache->at(0, page).at(0, i % pageSize());
    return "";
  }
};

// The shapes shared by both ops: a cache [rows..., S, X], or a pool [P, PAGE, X] and a page
// table with one row per row.
bool cacheRowsMatch(const CacheRows& c, int64_t rows, int64_t x) {
  if (c.cache->lastDim() != x) return false;
  if (!c.paged()) return c.cache->rank() >= 2 && c.cache->numel() == rows * c.capacity() * x;
  return c.cache->rank() == 3 && c.table->rank() >= 1 && c.table->rows() == rows;
}

}  // namespace

std::string opKvAppend(OpArgs& a) {
  const View &k = a.in[0], &v = a.in[1];
  std::vector<int64_t> pos = readInts(a.in[2]);
  const View* table = a.in.size() > 3 ? &a.in[3] : nullptr;
  const int64_t rows = static_cast<int64_t>(pos.size());
  for (int c = 0; c < 2; ++c) {
    const View& src = c ? v : k;
    const CacheRows cache{&a.out[c], table};
    if (src.numel() != rows * src.lastDim() || !cacheRowsMatch(cache, rows, src.lastDim()))
      return "the operands and the caches do not have matching rows";
    const int64_t len = cache.capacity();
    for (int64_t r = 0; r < rows; ++r) {
      if (pos[r] < 0 || pos[r] >= len)
        return fmt::format("position {} of row {} is outside the cache [0, {})", pos[r], r, len);
      View dst;
      if (std::string err = cache.row(r, pos[r], dst); !err.empty()) return err;
      copyElements(src.lead(r, 1), dst);
    }
  }
  return "";
}

std::string opAttentionDecode(OpArgs& a) {
  const View &q = a.in[0], &kc = a.in[1], &vc = a.in[2];
  // ranged: lens holds each row's first position and count; otherwise its count from 0.
  const bool ranged = a.attrBool("ranged");
  std::vector<int64_t> lens = readInts(a.in[3]);
  const View* table = a.in.size() > 4 ? &a.in[4] : nullptr;
  if (ranged && lens.size() % 2 != 0) return "lens must hold a first position and a count per row";
  const int64_t d = a.attrInt("head_dim"), rows = static_cast<int64_t>(lens.size()) / (ranged ? 2 : 1);
  if (d <= 0 || kc.rank() < 2) return "head_dim must be positive and the caches of rank >= 2";
  const CacheRows kr_at{&kc, table}, vr_at{&vc, table};
  const int64_t hq = q.lastDim() / d, hk = kc.lastDim() / d, len = kr_at.capacity();
  if (!cacheRowsMatch(kr_at, rows, kc.lastDim()) || !cacheRowsMatch(vr_at, rows, kc.lastDim()))
    return "the caches and lens do not have matching rows";
  if (hq * d != q.lastDim() || hk * d != kc.lastDim() || hk == 0 || hq % hk || q.numel() != rows * hq * d ||
      a.out[0].numel() != q.numel() || (a.out.size() > 1 && a.out[1].numel() != rows * hq))
    return "q, the caches, lens and the results do not have matching rows of whole heads";
  double scale = a.attrFloat("scale");
  if (scale == 0) scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> qv = readFloats(q), o(static_cast<size_t>(rows * hq * d), 0.0),
                      lse(static_cast<size_t>(rows * hq), -HUGE_VAL), s;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t first = ranged ? lens[2 * r] : 0, n = ranged ? lens[2 * r + 1] : lens[r];
    if (ranged && (first < 0 || n < 0 || first > len || n > len - first))
      return fmt::format("positions [{}, {} + {}) of row {} are outside [0, {})", first, first, n, r, len);
    if (n < 0 || n > len) return fmt::format("length {} of row {} is outside [0, {}]", n, r, len);
    if (n == 0) continue;
    std::vector<double> kr, vr;
    for (int64_t j = 0; j < n; ++j) {
      View krow, vrow;
      if (std::string err = kr_at.row(r, first + j, krow); !err.empty()) return err;
      if (std::string err = vr_at.row(r, first + j, vrow); !err.empty()) return err;
      for (double x : readFloats(krow)) kr.push_back(x);
      for (double x : readFloats(vrow)) vr.push_back(x);
    }
    s.assign(static_cast<size_t>(n), 0.0);
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t g = h / (hq / hk);
      const double* qh = qv.data() + (r * hq + h) * d;
      double mx = -HUGE_VAL;
      for (int64_t j = 0; j < n; ++j) {
        const double* kj = kr.data() + j * hk * d + g * d;
        double dot = 0;
        for (int64_t t = 0; t < d; ++t) dot += qh[t] * kj[t];
        s[j] = scale * dot;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += s[j] = std::exp(s[j] - mx);
      double* oh = o.data() + (r * hq + h) * d;
      for (int64_t j = 0; j < n; ++j) {
        const double* vj = vr.data() + j * hk * d + g * d;
        for (int64_t t = 0; t < d; ++t) oh[t] += s[j] / sum * vj[t];
      }
      lse[r * hq + h] = mx + std::log(sum);
    }
  }
  writeFloats(a.out[0], o.data());
  if (a.out.size() > 1) writeFloats(a.out[1], lse.data());
  return "";
}

std::string opSplitLens(OpArgs& a) {
  std::vector<int64_t> lens = readInts(a.in[0]);
  const int64_t chunk = a.attrInt("chunk"), splits = a.attrInt("splits");
  if (chunk <= 0 || splits <= 0) return "chunk and splits must be positive";
  if (a.out[0].numel() != static_cast<int64_t>(lens.size()) * splits)
    return fmt::format("the destination does not hold {} rows of {}", lens.size(), splits);
  std::vector<int64_t> y;
  for (int64_t n : lens)
    for (int64_t p = 0; p < splits; ++p) y.push_back(std::clamp<int64_t>(n - p * chunk, 0, chunk));
  writeInts(a.out[0], y.data());
  return "";
}

std::string opKvRanges(OpArgs& a) {
  std::vector<int64_t> lens = readInts(a.in[0]);
  const int64_t splits = a.attrInt("splits"), min_chunk = a.attrInt("min_chunk"), spread = a.attrInt("spread");
  if (splits <= 0 || min_chunk <= 0 || spread <= 0) return "splits, min_chunk and spread must be positive";
  const auto rows = static_cast<int64_t>(lens.size());
  if (a.out[0].numel() != rows * splits * 2)
    return fmt::format("the destination does not hold {} rows of {} parts", rows, splits);
  const int64_t used = std::clamp<int64_t>((spread + rows - 1) / std::max<int64_t>(rows, 1), 1, splits);
  std::vector<int64_t> y;
  for (int64_t n : lens) {
    if (n < 0) return fmt::format("length {} is negative", n);
    const int64_t chunk = std::max(min_chunk, (n + used - 1) / used);
    for (int64_t p = 0; p < splits; ++p) {
      const int64_t first = std::min(n, p * chunk);
      y.push_back(first);
      y.push_back(std::min(chunk, n - first));  // 0 past the used parts: chunk * used >= n
    }
  }
  writeInts(a.out[0], y.data());
  return "";
}

std::string opAttentionMerge(OpArgs& a) {
  const View &op = a.in[0], &lp = a.in[1];
  const int64_t d = a.attrInt("head_dim");
  if (d <= 0 || op.rank() < 2 || lp.rank() != op.rank()) return "head_dim must be positive and the parts of rank >= 2";
  const int64_t parts = op.shape[0];
  const int64_t heads = parts ? lp.numel() / parts : 0;  // rows * Hq over all rows
  if (op.numel() != parts * heads * d || a.out[0].numel() * parts != op.numel() ||
      (a.out.size() > 1 && a.out[1].numel() != heads))
    return "the parts and the results do not have matching rows of whole heads";
  std::vector<double> ov = readFloats(op), lv = readFloats(lp), o(static_cast<size_t>(heads * d), 0.0),
                      lse(static_cast<size_t>(heads), -HUGE_VAL);
  for (int64_t h = 0; h < heads; ++h) {
    double mx = -HUGE_VAL;
    for (int64_t p = 0; p < parts; ++p) mx = std::max(mx, lv[p * heads + h]);
    if (mx == -HUGE_VAL) continue;  // no part saw a position: o = 0, lse = -inf
    double sum = 0;
    for (int64_t p = 0; p < parts; ++p) sum += std::exp(lv[p * heads + h] - mx);
    const double total = mx + std::log(sum);
    lse[h] = total;
    for (int64_t p = 0; p < parts; ++p) {
      const double wgt = std::exp(lv[p * heads + h] - total);
      if (wgt == 0) continue;  // a -inf part contributes nothing (its o may be anything)
      for (int64_t t = 0; t < d; ++t) o[h * d + t] += wgt * ov[(p * heads + h) * d + t];
    }
  }
  writeFloats(a.out[0], o.data());
  if (a.out.size() > 1) writeFloats(a.out[1], lse.data());
  return "";
}

}  // namespace etc::interp
