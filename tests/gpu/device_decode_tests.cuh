// Device tests of the decode ops (decode.cuh, attention.cuh, add_rmsnorm and per-head rmsnorm
// of reduce.cuh; kv_append and attention_decode both contiguous and paged) against CPU
// references in double. Included by device_ops_test.cu after its helpers (Buf, HV, hv, dv,
// report, rel_l2, untouched_outside); run_decode_tests() runs them all.
#pragma once

// ---- kernels ----------------------------------------------------------------------------------

template <class T, class TW>
__global__ void k_rms_heads(View<const T> x, View<const TW> w, float eps, View<T> y) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall}; rmsnorm(c, x, w, eps, y);
}
template <class T, class TW>
__global__ void k_add_rms(View<const T> x, View<const T> r, View<const TW> w, float eps, View<T> y, View<T> ro) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall}; add_rmsnorm(c, x, r, w, eps, y, ro);
}
template <class T>
__global__ void k_embedding(View<const int> ids, View<const T> table, View<T> y) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall}; embedding(c, ids, table, y);
}
template <class T>
__global__ void k_argmax(View<const T> x, View<int> y) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall}; argmax(c, x, y);
}
template <class T>
__global__ void k_rope(View<const T> q, View<const T> k, View<const int> pos, View<T> qo, View<T> ko, RopeParams rp) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall}; rope(c, q, k, pos, qo, ko, rp);
}
template <class T>
__global__ void k_kv_append(View<const T> k, View<const T> v, View<const int> pos, View<T> kc, View<T> vc) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall}; kv_append(c, k, v, pos, kc, vc);
}
template <class T>
__global__ void k_kv_append_paged(View<const T> k, View<const T> v, View<const int> pos, View<const int> table,
                                  View<T> kp, View<T> vp) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall}; kv_append_paged(c, k, v, pos, table, kp, vp);
}
__global__ void k_split_lens(View<const int> lens, View<int> y, long long chunk) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall}; split_lens(c, lens, y, chunk);
}
__global__ void k_kv_ranges(View<const int> lens, View<int> y, long long min_chunk, long long spread) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall}; kv_ranges(c, lens, y, min_chunk, spread);
}
// Part p's [first, count] (ranges [P, 2]) and cache head g's slices of the f32 partials
// (o [P, Hq*D], lse [P, Hq]).
struct PartViews {
  View<const int> lens;
  View<float> o, lse;
  __device__ PartViews(const View<const int>& ranges, const View<float>& o_parts, const View<float>& lse_parts,
                       long long p, long long g, long long width, long long heads)
      : lens(ranges), o(o_parts), lse(lse_parts) {
    lens.ptr += p * ranges.stride[0];
    lens.rank = 1;
    lens.ext[0] = 2;
    lens.stride[0] = ranges.stride[1];
    o.ptr += p * o_parts.stride[0] + g * width;
    o.rank = 1;
    o.ext[0] = width;
    o.stride[0] = 1;
    lse.ptr += p * lse_parts.stride[0] + g * heads;
    lse.rank = 1;
    lse.ext[0] = heads;
    lse.stride[0] = 1;
  }
};
// Cache head g's views: its G query heads of q and its D columns (dimension dim: 1 of caches
// [len, Hk*D], 2 of page pools [P, PAGE, Hk*D]) of the caches.
template <int D, int G, class T>
struct HeadViews {
  View<const T> q, k, v;
  __device__ HeadViews(const View<const T>& q0, const View<const T>& kc, const View<const T>& vc, long long g,
                       int dim = 1)
      : q(q0), k(kc), v(vc) {
    q.ptr += g * G * D * q0.stride[0];
    q.ext[0] = G * D;
    k.ptr += g * D * kc.stride[dim];
    k.ext[dim] = D;
    v.ptr += g * D * vc.stride[dim];
    v.ext[dim] = D;
  }
};
// The lowered form of split-KV attention: CTA (g, p) runs cache head g on part p's positions
// (its [first, count] from kv_ranges, over the whole cache) into f32 partials, then a second
// launch merges per cache head.
template <int D, int G, class T>
__global__ void __launch_bounds__(256, 1) k_attn_parts(View<const T> q, View<const T> kc, View<const T> vc,
                                                        View<const int> ranges, View<float> o_parts,
                                                        View<float> lse_parts, float scale) {
  SMEM_DECL;
  Ctx c{smem_, attention_decode_smem_bytes<D, G>()};
  const long long g = blockIdx.x, p = blockIdx.y;
  const HeadViews<D, G, T> head(q, kc, vc, g);
  const PartViews pv(ranges, o_parts, lse_parts, p, g, G * D, G);
  attention_decode<D, G>(c, head.q, head.k, head.v, pv.lens, pv.o, pv.lse, scale);
}
template <int D, class TO>
__global__ void k_attn_merge(View<const float> o_parts, View<const float> lse_parts, View<TO> o, View<float> lse, int g_heads,
                             unsigned smem_bytes = kSmemSmall) {
  SMEM_DECL; Ctx c{smem_, smem_bytes};
  const long long g = blockIdx.x;
  View<const float> op = o_parts, lp = lse_parts;
  op.ptr += g * g_heads * D;
  op.ext[1] = g_heads * D;
  lp.ptr += g * g_heads;
  lp.ext[1] = g_heads;
  View<TO> ot = o;
  ot.ptr += g * g_heads * D;
  ot.ext[0] = g_heads * D;
  View<float> lt = lse;
  lt.ptr += g * g_heads;
  lt.ext[0] = g_heads;
  attention_merge(c, op, lp, ot, lt, D);
}
// The unsplit form with every cache head in one call, compiled for several (HK = 2: on tensor
// cores one ring through the heads; one head takes the single-head code).
template <int D, int G, class T, class TO>
__global__ void __launch_bounds__(256, 1) k_attn_whole(View<const T> q, View<const T> kc, View<const T> vc,
                                                        View<const int> lens, View<TO> o, View<float> lse, float scale) {
  SMEM_DECL;
  Ctx c{smem_, attention_decode_smem_bytes<D, G, 2>()};
  attention_decode<D, G, 2>(c, q, kc, vc, lens, o, lse, scale);
}

// The unsplit form one cache head a CTA (CTA g: head g alone), for comparing with the call over
// every head (the tensor-core form pipelines the heads through one ring: the same bits).
template <int D, int G, class T, class TO>
__global__ void __launch_bounds__(256, 1) k_attn_each_head(View<const T> q, View<const T> kc, View<const T> vc,
                                                            View<const int> lens, View<TO> o, float scale) {
  SMEM_DECL;
  Ctx c{smem_, attention_decode_smem_bytes<D, G>()};
  const long long g = blockIdx.x;
  const HeadViews<D, G, T> head(q, kc, vc, g);
  View<TO> ot = o;
  ot.ptr += g * G * D * o.stride[0];
  ot.ext[0] = G * D;
  attention_decode<D, G>(c, head.q, head.k, head.v, lens, ot, scale);
}

// The lowered form over page pools [P, PAGE, Hk*D]: CTA (g, p) reads cache head g's columns of
// the pools and the whole page table, from part p's first position on.
template <int D, int G, class T>
__global__ void __launch_bounds__(256, 1) k_attn_parts_paged(View<const T> q, View<const T> kp, View<const T> vp,
                                                              View<const int> ranges, View<const int> table,
                                                              View<float> o_parts, View<float> lse_parts, float scale) {
  SMEM_DECL;
  Ctx c{smem_, attention_decode_smem_bytes<D, G>()};
  const long long g = blockIdx.x, p = blockIdx.y;
  const HeadViews<D, G, T> head(q, kp, vp, g, 2);
  const PartViews pv(ranges, o_parts, lse_parts, p, g, G * D, G);
  attention_decode_paged<D, G>(c, head.q, head.k, head.v, pv.lens, table, pv.o, pv.lse, scale);
}
template <int D, int G, class T, class TO>
__global__ void __launch_bounds__(256, 1) k_attn_whole_paged(View<const T> q, View<const T> kp, View<const T> vp,
                                                              View<const int> lens, View<const int> table, View<TO> o,
                                                              float scale) {
  SMEM_DECL;
  Ctx c{smem_, attention_decode_smem_bytes<D, G, 2>()};  // as k_attn_whole
  attention_decode_paged<D, G, 2>(c, q, kp, vp, lens, table, o, scale);
}

// ---- tests ------------------------------------------------------------------------------------

// A page table of maxp distinct pages of a pool of `pages`, in shuffled order.
static std::vector<int> shuffled_pages(long long pages, long long maxp) {
  std::vector<int> ids((size_t)pages);
  for (long long i = 0; i < pages; ++i) ids[(size_t)i] = (int)i;
  std::shuffle(ids.begin(), ids.end(), rng);
  ids.resize((size_t)maxp);
  return ids;
}

// rmsnorm with head_dim (a weight of D over rows of H heads) and add_rmsnorm (in place or not).
template <class T, class TW>
static void t_norm_heads(const char* what, long long rows, long long heads, long long D, long long pitch, long long off,
                         bool add, bool in_place, int threads) {
  const long long W = heads * D, pn = rows * pitch + off + 8;
  Buf<T> x(pn), r(pn), y(pn), ro(pn);
  Buf<TW> w(add ? W : D);
  x.random(-3, 3);
  r.random(-3, 3);
  w.random(0.5, 1.5);
  y.poison();
  ro.poison();
  x.up();
  r.up();
  w.up();
  y.up();
  ro.up();
  const long long H = add ? W : D;  // the normalized length
  HV xv = hv(off, {rows, W}, {pitch, 1}), wv = hv(0, {H}, {1});
  std::vector<double> s(rows * W);
  for (long long i = 0; i < rows * W; ++i) {
    s[i] = tod(x.h[xv.at(i)]);
    if (add) s[i] = tod(fromd<T>(s[i] + tod(r.h[xv.at(i)])));
  }
  const float eps = 1e-6f;
  if (add)
    k_add_rms<T, TW><<<1, threads, kSmemSmall>>>(dv<const T>(x, xv), dv<const T>(r, xv), dv<const TW>(w, wv), eps,
                                                 dv<T>(y, xv), in_place ? dv<T>(r, xv) : dv<T>(ro, xv));
  else
    k_rms_heads<T, TW><<<1, threads, kSmemSmall>>>(dv<const T>(x, xv), dv<const TW>(w, wv), eps, dv<T>(y, xv));
  CK(cudaGetLastError());  // a launch that could not start
  CK(cudaDeviceSynchronize());
  y.down();
  r.down();
  ro.down();
  std::vector<double> ref(rows * W);
  for (long long g = 0; g < rows * W / H; ++g) {
    double ss = 0;
    for (long long h = 0; h < H; ++h) ss += s[g * H + h] * s[g * H + h];
    const double inv = 1.0 / std::sqrt(ss / H + eps);
    for (long long h = 0; h < H; ++h) ref[g * H + h] = s[g * H + h] * inv * tod(w.h[h]);
  }
  double err = rel_l2(y, xv, ref);
  bool ok = err < tol<T>() && untouched_outside(y, xv);
  if (add) {
    const Buf<T>& res = in_place ? r : ro;
    for (long long i = 0; i < rows * W; ++i) ok = ok && tod(res.h[xv.at(i)]) == s[i];
    if (!in_place) ok = ok && untouched_outside(ro, xv);
  }
  report(ok, std::string(add ? (in_place ? "add_rmsnorm_inplace_" : "add_rmsnorm_") : "rmsnorm_heads_") + tname<T>() + "_" +
                 tname<TW>() + "_" + what + "_t" + std::to_string(threads),
         err);
}

// ids [rows] (stride ids_st) into table [V, H]; the tile takes columns [c0, c0 + C).
template <class T>
static void t_embedding(const char* what, long long rows, long long V, long long H, long long c0, long long C,
                        long long ids_st, long long pitch) {
  Buf<int> ids(rows * ids_st + 1);
  Buf<T> table(V * H + 8), y(rows * pitch + 8);
  for (long long r = 0; r < rows; ++r) ids.h[r * ids_st] = (int)((r * 7919 + 3) % V);
  if (rows > 2) ids.h[ids_st] = (int)V;  // out of range: the row stays unwritten
  table.random();
  y.poison();
  ids.up();
  table.up();
  y.up();
  HV iv = hv(0, {rows}, {ids_st}), tv = hv(c0, {V, C}, {H, 1}), yv = hv(c0, {rows, C}, {pitch, 1});
  k_embedding<T><<<1, 256, kSmemSmall>>>(dv<const int>(ids, iv), dv<const T>(table, tv), dv<T>(y, yv));
  CK(cudaDeviceSynchronize());
  y.down();
  long long bad = 0;
  for (long long r = 0; r < rows; ++r)
    for (long long c = 0; c < C; ++c) {
      const int id = ids.h[r * ids_st];
      const T got = y.h[yv.at(r * C + c)];
      if (id >= V) {
        unsigned char poison[sizeof(T)];
        std::memset(poison, 0xff, sizeof(T));
        bad += std::memcmp(&got, poison, sizeof(T)) != 0;
      } else {
        bad += std::memcmp(&got, &table.h[tv.at(id * C + c)], sizeof(T)) != 0;
      }
    }
  report(bad == 0, std::string("embedding_") + tname<T>() + "_" + what, (double)bad);
}

// argmax over rows of x [rows, n] (pitch), with exact ties and optionally a NaN; `flat`: every
// element that value instead (all tied; -inf: no element beats the start).
template <class T>
static void t_argmax(const char* what, long long rows, long long n, long long pitch, long long off, bool nan,
                     const double* flat = nullptr) {
  Buf<T> x(rows * pitch + off + 8);
  Buf<int> y(rows);
  x.random(-4, 4);
  if (flat)
    for (auto& v : x.h) v = fromd<T>(*flat);
  HV xv = hv(off, {rows, n}, {pitch, 1});
  for (long long r = 0; !flat && r < rows; ++r) {
    // An exact tie of the maximum at two positions: the lower index wins.
    const long long a = (r * 37 + 5) % n, b = (r * 101 + n / 2) % n;
    x.h[xv.at(r * n + a)] = fromd<T>(8.0);
    x.h[xv.at(r * n + b)] = fromd<T>(8.0);
  }
  if (nan) {
    std::memset(&x.h[xv.at(n - 1)], 0xff, sizeof(T));
    if (rows > 1) std::memset(&x.h[xv.at(n + n / 3)], 0xff, sizeof(T));
  }
  y.poison();
  x.up();
  y.up();
  k_argmax<T><<<1, 256, kSmemSmall>>>(dv<const T>(x, xv), dv<int>(y, hv(0, {rows}, {1})));
  CK(cudaDeviceSynchronize());
  y.down();
  long long bad = 0;
  for (long long r = 0; r < rows; ++r) {
    long long best = 0;
    for (long long k = 1; k < n && !std::isnan(tod(x.h[xv.at(r * n + best)])); ++k) {
      const double v = tod(x.h[xv.at(r * n + k)]);
      if (std::isnan(v) || v > tod(x.h[xv.at(r * n + best)])) best = k;
    }
    bad += y.h[r] != best;
  }
  report(bad == 0, std::string("argmax_") + tname<T>() + "_" + what, (double)bad);
}

static std::vector<double> host_freqs(const RopeParams& rp) {
  std::vector<double> f(rp.head_dim / 2);
  for (int j = 0; j < rp.head_dim / 2; ++j) {
    double v = std::pow(rp.theta, -2.0 * j / rp.head_dim);
    if (rp.llama3) {
      const double wl = 2 * M_PI / v, lo = rp.original / rp.low, hi = rp.original / rp.high;
      if (wl > lo) v /= rp.factor;
      else if (wl >= hi) {
        const double s = (rp.original / wl - rp.low) / (rp.high - rp.low);
        v = (1 - s) * v / rp.factor + s * v;
      }
    }
    f[j] = v;
  }
  return f;
}

// rope on rows of q [rows, Hq*D] and k [rows, Hk*D] at positions up to max_pos.
template <class T>
static void t_rope(const char* what, RopeParams rp, long long rows, long long hq, long long hk, int max_pos) {
  const long long D = rp.head_dim, qw = hq * D, kw = hk * D;
  Buf<T> q(rows * qw), k(rows * kw), qo(rows * qw), ko(rows * kw);
  Buf<int> pos(rows);
  q.random();
  k.random();
  for (long long r = 0; r < rows; ++r) pos.h[r] = (int)((r * 2654435761LL) % (max_pos + 1));
  pos.h[0] = max_pos;
  qo.poison();
  ko.poison();
  q.up();
  k.up();
  pos.up();
  qo.up();
  ko.up();
  HV qv = hv(0, {rows, qw}, {qw, 1}), kv = hv(0, {rows, kw}, {kw, 1});
  HV pv = hv(0, {rows}, {1});
  k_rope<T><<<1, 256, kSmemSmall>>>(dv<const T>(q, qv), dv<const T>(k, kv), dv<const int>(pos, pv), dv<T>(qo, qv),
                                    dv<T>(ko, kv), rp);
  CK(cudaDeviceSynchronize());
  qo.down();
  ko.down();
  std::vector<double> f = host_freqs(rp);
  auto ref = [&](const Buf<T>& x, long long w) {
    std::vector<double> out(rows * w);
    for (long long r = 0; r < rows; ++r)
      for (long long h = 0; h < w / D; ++h)
        for (long long j = 0; j < D / 2; ++j) {
          const double a = pos.h[r] * f[j], c = std::cos(a), s = std::sin(a);
          const double x0 = tod(x.h[r * w + h * D + j]), x1 = tod(x.h[r * w + h * D + j + D / 2]);
          out[r * w + h * D + j] = x0 * c - x1 * s;
          out[r * w + h * D + j + D / 2] = x1 * c + x0 * s;
        }
    return out;
  };
  double err = std::max(rel_l2(qo, qv, ref(q, qw)), rel_l2(ko, kv, ref(k, kw)));
  report(err < tol<T>(), std::string("rope_") + tname<T>() + "_" + what, err);
}

// kv_append of one row at position p of caches [S, X]; every other element keeps its poison.
template <class T>
static void t_kv_append(const char* what, long long S, long long X, long long p, long long k_off) {
  Buf<T> k(X + k_off + 8), v(X + k_off + 8), kc(S * X), vc(S * X);
  Buf<int> pos(1);
  k.random();
  v.random();
  kc.poison();
  vc.poison();
  pos.h[0] = (int)p;
  k.up();
  v.up();
  kc.up();
  vc.up();
  pos.up();
  HV xv = hv(k_off, {X}, {1}), cv = hv(0, {S, X}, {X, 1});
  k_kv_append<T><<<1, 256, kSmemSmall>>>(dv<const T>(k, xv), dv<const T>(v, xv), dv<const int>(pos, hv(0, {}, {})),
                                         dv<T>(kc, cv), dv<T>(vc, cv));
  CK(cudaDeviceSynchronize());
  kc.down();
  vc.down();
  const bool inside = p >= 0 && p < S;
  HV row = hv(inside ? p * X : 0, {inside ? X : 0}, {1});
  long long bad = 0;
  for (long long i = 0; inside && i < X; ++i) {
    bad += std::memcmp(&kc.h[p * X + i], &k.h[k_off + i], sizeof(T)) != 0;
    bad += std::memcmp(&vc.h[p * X + i], &v.h[k_off + i], sizeof(T)) != 0;
  }
  const bool ok = bad == 0 && untouched_outside(kc, row) && untouched_outside(vc, row);
  report(ok, std::string("kv_append_") + tname<T>() + "_" + what, (double)bad);
}

// Paged kv_append of one row at position p: pools [pages, page, X], a shuffled page table of
// maxp entries; only row p % page of page table[p / page] changes. bad_id puts a page id
// outside the pool in the entry p uses (nothing may be written, as for p outside the table).
template <class T>
static void t_kv_append_paged(const char* what, long long pages, long long page, long long X, long long maxp,
                              long long p, bool bad_id) {
  Buf<T> k(X), v(X), kp(pages * page * X), vp(pages * page * X);
  Buf<int> pos(1), table(maxp);
  std::vector<int> ids = shuffled_pages(pages, maxp);
  const bool in_table = p >= 0 && p < maxp * page;
  if (bad_id && in_table) ids[(size_t)(p / page)] = (int)pages;
  for (long long j = 0; j < maxp; ++j) table.h[j] = ids[(size_t)j];
  k.random();
  v.random();
  kp.poison();
  vp.poison();
  pos.h[0] = (int)p;
  k.up();
  v.up();
  kp.up();
  vp.up();
  pos.up();
  table.up();
  HV xv = hv(0, {X}, {1}), pv = hv(0, {pages, page, X}, {page * X, X, 1});
  k_kv_append_paged<T><<<1, 256, kSmemSmall>>>(dv<const T>(k, xv), dv<const T>(v, xv), dv<const int>(pos, hv(0, {}, {})),
                                               dv<const int>(table, hv(0, {maxp}, {1})), dv<T>(kp, pv), dv<T>(vp, pv));
  CK(cudaDeviceSynchronize());
  kp.down();
  vp.down();
  const bool writes = in_table && !bad_id;
  const long long at = writes ? ((long long)ids[(size_t)(p / page)] * page + p % page) * X : 0;
  HV row = hv(at, {writes ? X : 0}, {1});
  long long bad = 0;
  for (long long i = 0; writes && i < X; ++i) {
    bad += std::memcmp(&kp.h[at + i], &k.h[i], sizeof(T)) != 0;
    bad += std::memcmp(&vp.h[at + i], &v.h[i], sizeof(T)) != 0;
  }
  const bool ok = bad == 0 && untouched_outside(kp, row) && untouched_outside(vp, row);
  report(ok, std::string("kv_append_paged_") + tname<T>() + "_" + what, (double)bad);
}

static void t_split_lens() {
  const long long rows = 5, parts = 17, chunk = 256;
  Buf<int> lens(rows), y(rows * parts);
  const int vals[rows] = {0, 1, 256, 257, 4097};
  for (int r = 0; r < rows; ++r) lens.h[r] = vals[r];
  lens.up();
  k_split_lens<<<1, 256, kSmemSmall>>>(dv<const int>(lens, hv(0, {rows}, {1})), dv<int>(y, hv(0, {rows, parts}, {parts, 1})),
                                       chunk);
  CK(cudaDeviceSynchronize());
  y.down();
  long long bad = 0;
  for (long long r = 0; r < rows; ++r)
    for (long long p = 0; p < parts; ++p)
      bad += y.h[r * parts + p] != (int)std::clamp<long long>(vals[r] - p * chunk, 0, chunk);
  report(bad == 0, "split_lens_5x17", (double)bad);
}

// kv_ranges against its formula: rows of lengths 0 .. 4097 and several row counts, so that the
// parts a row uses (cdiv(spread, R), at most `parts`) go from all of them to one.
static void t_kv_ranges(long long rows, long long parts, long long min_chunk, long long spread) {
  Buf<int> lens(rows), y(rows * parts * 2);
  const int vals[] = {0, 1, 31, 32, 33, 256, 257, 511, 512, 4097};
  for (long long r = 0; r < rows; ++r) lens.h[r] = vals[r % 10];
  lens.up();
  y.poison();
  y.up();
  k_kv_ranges<<<1, 256, kSmemSmall>>>(dv<const int>(lens, hv(0, {rows}, {1})),
                                      dv<int>(y, hv(0, {rows, parts, 2}, {parts * 2, 2, 1})), min_chunk, spread);
  CK(cudaDeviceSynchronize());
  y.down();
  const long long used = std::clamp<long long>((spread + rows - 1) / rows, 1, parts);
  long long bad = 0;
  for (long long r = 0; r < rows; ++r) {
    const long long n = lens.h[r], chunk = std::max(min_chunk, (n + used - 1) / used);
    long long covered = 0;
    for (long long p = 0; p < parts; ++p) {
      const long long first = std::min(n, p * chunk), count = std::min(chunk, n - first);
      bad += y.h[(r * parts + p) * 2] != first || y.h[(r * parts + p) * 2 + 1] != count;
      bad += p >= used && count != 0;
      covered += count;
    }
    bad += covered != n;
  }
  char name[96];
  std::snprintf(name, sizeof name, "kv_ranges_%lldx%lld_min%lld_spread%lld", rows, parts, min_chunk, spread);
  report(bad == 0, name, (double)bad);
}

// Reference attention of one request: q [Hq*D], caches [len, Hk*D] (row pitch), n positions.
template <class T>
static void attn_ref(const Buf<T>& q, const Buf<T>& kc, const Buf<T>& vc, long long pitch, long long koff, long long hq,
                     long long hk, long long D, long long n, double scale, std::vector<double>& o, std::vector<double>& lse) {
  o.assign(hq * D, 0.0);
  lse.assign(hq, -INFINITY);
  const long long G = hq / hk;
  for (long long h = 0; h < hq && n > 0; ++h) {
    const long long g = h / G;
    std::vector<double> s(n);
    double mx = -INFINITY;
    for (long long j = 0; j < n; ++j) {
      double dot = 0;
      for (long long d = 0; d < D; ++d) dot += tod(q.h[h * D + d]) * tod(kc.h[koff + j * pitch + g * D + d]);
      s[j] = scale * dot;
      mx = std::max(mx, s[j]);
    }
    double sum = 0;
    for (double& x : s) sum += x = std::exp(x - mx);
    for (long long j = 0; j < n; ++j)
      for (long long d = 0; d < D; ++d) o[h * D + d] += s[j] / sum * tod(vc.h[koff + j * pitch + g * D + d]);
    lse[h] = mx + std::log(sum);
  }
}

// The split (o, lse) and whole (o2) results against the reference (ro, rl): the o error and
// the lse error. With no positions (n == 0) o must be exactly 0 and lse -inf.
template <class TO>
static std::pair<double, double> attn_errors(const Buf<TO>& o, const Buf<TO>& o2, const Buf<float>& lse, const HV& qv,
                                             const std::vector<double>& ro, const std::vector<double>& rl, long long hq,
                                             int D, long long n) {
  double err = std::max(rel_l2(o, qv, ro), rel_l2(o2, qv, ro));
  if (n == 0) {
    err = 0;
    for (long long i = 0; i < hq * D; ++i) err += std::fabs(tod(o.h[i])) + std::fabs(tod(o2.h[i]));
  }
  double lerr = 0;
  for (long long h = 0; h < hq; ++h)
    lerr = std::max(lerr, n == 0 ? (std::isinf(lse.h[h]) && lse.h[h] < 0 ? 0.0 : 1.0) : std::fabs(lse.h[h] - rl[h]));
  return {err, lerr};
}

// Split-KV attention as lowered: kv_ranges -> parts -> merge, for one request with a cache of
// len positions (row pitch >= Hk*D, offset koff: the scalar path when unaligned), n of them
// cut into `parts` parts of at least min_chunk.
template <int D, int G, class T, class TO>
static void t_attention(const char* what, long long hk, long long len, long long n, long long parts,
                        long long min_chunk, long long pitch, long long koff) {
  const long long hq = hk * G;
  Buf<T> q(hq * D), kc(len * pitch + koff + 8), vc(len * pitch + koff + 8);
  Buf<int> lens(1), ranges(parts * 2);
  Buf<float> o_parts(parts * hq * D), lse_parts(parts * hq), lse(hq), lse2(hq);
  Buf<TO> o(hq * D), o2(hq * D), o3(hq * D);
  q.random(-1, 1);
  kc.random(-1, 1);
  vc.random(-1, 1);
  lens.h[0] = (int)n;
  o.poison();
  o2.poison();
  o3.poison();
  o_parts.poison();
  lse_parts.poison();
  q.up();
  kc.up();
  vc.up();
  lens.up();
  o.up();
  o2.up();
  o3.up();
  lse2.poison();
  lse2.up();
  o_parts.up();
  lse_parts.up();
  const float scale = 1.0f / std::sqrt((float)D);
  HV qv = hv(0, {hq * D}, {1}), cv = hv(koff, {len, hk * D}, {pitch, 1}), rv = hv(0, {parts, 2}, {2, 1});
  k_kv_ranges<<<1, 256, kSmemSmall>>>(dv<const int>(lens, hv(0, {}, {})), dv<int>(ranges, rv), min_chunk, parts);
  const unsigned smem = attention_decode_smem_bytes<D, G, 2>();  // the most any form below takes
  CK(cudaFuncSetAttribute(k_attn_parts<D, G, T>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(k_attn_whole<D, G, T, TO>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  k_attn_parts<D, G, T><<<dim3((unsigned)hk, (unsigned)parts), 256, smem>>>(
      dv<const T>(q, qv), dv<const T>(kc, cv), dv<const T>(vc, cv), dv<const int>(ranges, rv),
      dv<float>(o_parts, hv(0, {parts, hq * D}, {hq * D, 1})), dv<float>(lse_parts, hv(0, {parts, hq}, {hq, 1})), scale);
  k_attn_merge<D, TO><<<(unsigned)hk, 128, kSmemSmall>>>(
      dv<const float>(o_parts, hv(0, {parts, hq * D}, {hq * D, 1})), dv<const float>(lse_parts, hv(0, {parts, hq}, {hq, 1})),
      dv<TO>(o, qv), dv<float>(lse, hv(0, {hq}, {1})), G);
  // The unsplit form (all cache heads in one call, with its lse) must agree too.
  k_attn_whole<D, G, T, TO><<<1, 256, smem>>>(dv<const T>(q, qv), dv<const T>(kc, cv), dv<const T>(vc, cv),
                                              dv<const int>(lens, hv(0, {}, {})), dv<TO>(o2, qv),
                                              dv<float>(lse2, hv(0, {hq}, {1})), scale);
  // And each cache head alone gives the unsplit form's bits.
  CK(cudaFuncSetAttribute(k_attn_each_head<D, G, T, TO>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  k_attn_each_head<D, G, T, TO><<<(unsigned)hk, 256, smem>>>(dv<const T>(q, qv), dv<const T>(kc, cv), dv<const T>(vc, cv),
                                                             dv<const int>(lens, hv(0, {}, {})), dv<TO>(o3, qv), scale);
  CK(cudaDeviceSynchronize());
  o.down();
  o2.down();
  o3.down();
  lse.down();
  lse2.down();
  std::vector<double> ro, rl;
  attn_ref(q, kc, vc, pitch, koff, hq, hk, D, n, scale, ro, rl);
  const auto [err, lerr_merged] = attn_errors(o, o2, lse, qv, ro, rl, hq, D, n);
  const double lerr = std::max(lerr_merged, attn_errors(o, o2, lse2, qv, ro, rl, hq, D, n).second);
  const bool same_bits = std::memcmp(o2.h.data(), o3.h.data(), sizeof(TO) * (size_t)(hq * D)) == 0;
  char name[160];
  std::snprintf(name, sizeof name, "attention_decode_split_%s_%s_D%d_G%d_hk%lld_len%lld_n%lld_parts%lld_%s", tname<T>(),
                tname<TO>(), D, G, hk, len, n, parts, what);
  if (!same_bits) std::printf("  %s: the call over %lld cache heads and the calls for each differ\n", name, hk);
  report(err < tol<TO>() && lerr < 1e-3 && same_bits, name, std::max(err, lerr));
}

// Split-KV attention over page pools, as lowered (kv_ranges -> parts reading the whole page
// table from their first position -> merge) and unsplit, against the reference on the same positions in a contiguous cache. The
// request's maxp pages are a shuffled subset of a pool of `pages` (rows of pitch >= Hk*D at
// offset koff: the scalar path when unaligned); only its first n positions are written, every
// other pool element is NaN, so a read past n or through a wrong page shows.
template <int D, int G, class T, class TO>
static void t_attention_paged(const char* what, long long hk, long long page, long long maxp, long long pages,
                              long long n, long long parts, long long min_chunk, long long pitch, long long koff) {
  const long long hq = hk * G, len = maxp * page;
  const long long W = hk * D;
  Buf<T> q(hq * D), kc(len * W + 8), vc(len * W + 8), kp(pages * page * pitch + koff + 8), vp(pages * page * pitch + koff + 8);
  Buf<int> lens(1), ranges(parts * 2), table(maxp);
  Buf<float> o_parts(parts * hq * D), lse_parts(parts * hq), lse(hq);
  Buf<TO> o(hq * D), o2(hq * D);
  q.random(-1, 1);
  kc.random(-1, 1);
  vc.random(-1, 1);
  kp.poison();
  vp.poison();
  std::vector<int> ids = shuffled_pages(pages, maxp);
  for (long long j = 0; j < maxp; ++j) table.h[j] = ids[(size_t)j];
  for (long long i = 0; i < n; ++i) {
    const long long at = koff + ((long long)ids[(size_t)(i / page)] * page + i % page) * pitch;
    for (long long e = 0; e < W; ++e) {
      kp.h[at + e] = kc.h[i * W + e];
      vp.h[at + e] = vc.h[i * W + e];
    }
  }
  lens.h[0] = (int)n;
  o.poison();
  o2.poison();
  o_parts.poison();
  lse_parts.poison();
  for (auto* b : {&q, &kp, &vp}) b->up();
  lens.up();
  table.up();
  o.up();
  o2.up();
  o_parts.up();
  lse_parts.up();
  const float scale = 1.0f / std::sqrt((float)D);
  HV qv = hv(0, {hq * D}, {1}), pv = hv(koff, {pages, page, W}, {page * pitch, pitch, 1}), tv = hv(0, {maxp}, {1});
  HV rv = hv(0, {parts, 2}, {2, 1});
  k_kv_ranges<<<1, 256, kSmemSmall>>>(dv<const int>(lens, hv(0, {}, {})), dv<int>(ranges, rv), min_chunk, parts);
  const unsigned smem = attention_decode_smem_bytes<D, G, 2>();  // the most any form below takes
  CK(cudaFuncSetAttribute(k_attn_parts_paged<D, G, T>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(k_attn_whole_paged<D, G, T, TO>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  k_attn_parts_paged<D, G, T><<<dim3((unsigned)hk, (unsigned)parts), 256, smem>>>(
      dv<const T>(q, qv), dv<const T>(kp, pv), dv<const T>(vp, pv), dv<const int>(ranges, rv),
      dv<const int>(table, tv), dv<float>(o_parts, hv(0, {parts, hq * D}, {hq * D, 1})),
      dv<float>(lse_parts, hv(0, {parts, hq}, {hq, 1})), scale);
  k_attn_merge<D, TO><<<(unsigned)hk, 128, kSmemSmall>>>(
      dv<const float>(o_parts, hv(0, {parts, hq * D}, {hq * D, 1})), dv<const float>(lse_parts, hv(0, {parts, hq}, {hq, 1})),
      dv<TO>(o, qv), dv<float>(lse, hv(0, {hq}, {1})), G);
  k_attn_whole_paged<D, G, T, TO><<<1, 256, smem>>>(dv<const T>(q, qv), dv<const T>(kp, pv), dv<const T>(vp, pv),
                                                    dv<const int>(lens, hv(0, {}, {})), dv<const int>(table, tv),
                                                    dv<TO>(o2, qv), scale);
  CK(cudaDeviceSynchronize());
  o.down();
  o2.down();
  lse.down();
  std::vector<double> ro, rl;
  attn_ref(q, kc, vc, W, 0, hq, hk, D, n, scale, ro, rl);
  const auto [err, lerr] = attn_errors(o, o2, lse, qv, ro, rl, hq, D, n);
  char name[192];
  std::snprintf(name, sizeof name, "attention_decode_paged_%s_%s_D%d_G%d_hk%lld_page%lld_maxp%lld_pool%lld_n%lld_parts%lld_%s",
                tname<T>(), tname<TO>(), D, G, hk, page, maxp, pages, n, parts, what);
  report(err < tol<TO>() && lerr < 1e-3, name, std::max(err, lerr));
}

// attention_merge alone: random partials with -inf parts (whose o is NaN: it must not leak)
// and a head whose parts are all -inf (o = 0, lse = -inf). smem_bytes: what the op may use
// (too little for the weights of every part and head: the path without shared memory).
template <int D>
static void t_merge(long long parts, long long heads, int dead, unsigned smem_bytes = kSmemSmall) {
  Buf<float> op(parts * heads * D), lp(parts * heads), lse(heads), o(heads * D);
  op.random(-1, 1);
  lp.random(-3, 3);
  for (long long h = 0; h < heads; ++h)
    for (int p = 0; p < dead && p < parts; ++p) {
      const long long q = (p * 3 + h) % parts;
      lp.h[q * heads + h] = -INFINITY;
      std::memset(&op.h[(q * heads + h) * D], 0xff, D * sizeof(float));
    }
  for (long long p = 0; p < parts; ++p) lp.h[p * heads + heads - 1] = -INFINITY;
  op.up();
  lp.up();
  o.poison();
  o.up();
  lse.poison();
  lse.up();
  k_attn_merge<D, float><<<1, 256, kSmemSmall>>>(dv<const float>(op, hv(0, {parts, heads * D}, {heads * D, 1})),
                                                 dv<const float>(lp, hv(0, {parts, heads}, {heads, 1})),
                                                 dv<float>(o, hv(0, {heads * D}, {1})), dv<float>(lse, hv(0, {heads}, {1})),
                                                 (int)heads, smem_bytes);
  CK(cudaDeviceSynchronize());
  o.down();
  lse.down();
  double err = 0;
  for (long long h = 0; h < heads; ++h) {
    double mx = -INFINITY;
    for (long long p = 0; p < parts; ++p) mx = std::max(mx, (double)lp.h[p * heads + h]);
    double total = mx;
    if (!std::isinf(mx)) {
      double sum = 0;
      for (long long p = 0; p < parts; ++p) sum += std::exp(lp.h[p * heads + h] - mx);
      total = mx + std::log(sum);
    }
    if (std::isinf(total)) err += std::isinf(lse.h[h]) && lse.h[h] < 0 ? 0.0 : 1.0;
    else err += std::fabs(lse.h[h] - total);
    for (long long d = 0; d < D; ++d) {
      double ref = 0;
      for (long long p = 0; p < parts && !std::isinf(total); ++p) {
        const double w = std::exp(lp.h[p * heads + h] - total);
        if (w != 0) ref += w * op.h[(p * heads + h) * D + d];
      }
      err += std::fabs(o.h[h * D + d] - ref);  // NaN from a dead part makes err NaN: a failure
    }
  }
  report(err < 1e-3, "attention_merge_P" + std::to_string(parts) + "_H" + std::to_string(heads) + "_D" +
                         std::to_string(D) + "_dead" + std::to_string(dead) +
                         (parts * heads * sizeof(float) <= smem_bytes ? "_smem" : "_nosmem"),
         err);
}

static void run_decode_tests() {
  // rmsnorm per head (Qwen3 q/k norm) and add_rmsnorm (residual fused, in place or not).
  t_norm_heads<bf16, bf16>("q16x128", 3, 16, 128, 2048, 0, false, false, 256);
  t_norm_heads<bf16, bf16>("k8x128_rows", 40, 8, 128, 1024, 0, false, false, 256);
  t_norm_heads<bf16, float>("5x64_unaligned", 2, 5, 64, 321, 1, false, false, 128);
  t_norm_heads<bf16, bf16>("1x2048", 1, 1, 2048, 2048, 0, true, true, 256);
  t_norm_heads<bf16, bf16>("13x2048", 13, 1, 2048, 2048, 0, true, false, 256);
  t_norm_heads<f16, bf16>("3x999_unaligned", 3, 1, 999, 1001, 1, true, true, 256);
  t_norm_heads<float, float>("9x1024", 9, 1, 1024, 1024, 0, true, false, 128);

  // embedding: a column tile of the table, the vector and scalar paths, an id out of range.
  t_embedding<bf16>("4x1024_of_2048", 4, 1000, 2048, 1024, 1024, 1, 2048);
  t_embedding<bf16>("3x1000_strided_ids", 3, 77, 1001, 1, 1000, 3, 1003);
  t_embedding<float>("2x64", 2, 10, 64, 0, 64, 1, 64);

  // argmax: a 128k vocabulary row, rows, ties to the lowest index, NaN first wins, scalar path.
  t_argmax<bf16>("1x128256", 1, 128256, 128256, 0, false);
  t_argmax<float>("3x151936", 3, 151936, 151936, 0, false);
  t_argmax<bf16>("5x1001_unaligned", 5, 1001, 1003, 1, false);
  t_argmax<float>("4x5000_nan", 4, 5000, 5000, 0, true);
  // The 16-bit rows' chunked form (argmax_row16): NaN, half, rows of one value (-inf, -0),
  // a row that is not a whole number of 2048-element sweeps.
  t_argmax<bf16>("4x5000_nan", 4, 5000, 5000, 0, true);
  t_argmax<f16>("3x32000", 3, 32000, 32000, 0, false);
  t_argmax<f16>("2x4104_nan", 2, 4104, 4104, 0, true);
  const double ninf = -std::numeric_limits<double>::infinity(), nzero = -0.0;
  t_argmax<bf16>("2x2048_all_-inf", 2, 2048, 2048, 0, false, &ninf);
  t_argmax<bf16>("3x1032_all_-0", 3, 1032, 1032, 0, false, &nzero);
  t_argmax<bf16>("7x136", 7, 136, 136, 0, false);

  // rope: Llama 3 scaling (D 64) and Qwen3 (D 128), positions up to 4096 and far beyond.
  RopeParams llama{64, 500000.0, true, 32.0, 1.0, 4.0, 8192.0};
  RopeParams qwen{128, 1000000.0, false, 1.0, 1.0, 4.0, 8192.0};
  t_rope<bf16>("llama3_32q_8k", llama, 3, 32, 8, 4096);
  t_rope<bf16>("qwen3_16q_8k", qwen, 5, 16, 8, 4096);
  t_rope<float>("llama3_pos_1e6", llama, 2, 4, 2, 1000000);

  // kv_append: first, middle and last positions, an unaligned source, a position out of range.
  t_kv_append<bf16>("pos0", 4097, 512, 0, 0);
  t_kv_append<bf16>("pos4096", 4097, 1024, 4096, 0);
  t_kv_append<bf16>("pos77_unaligned", 300, 520, 77, 3);
  t_kv_append<bf16>("pos_out_of_range", 300, 512, 300, 0);

  // Paged kv_append: first row of a page, mid-page, the last position of the table, a position
  // past the table, a page id outside the pool (the last two write nothing).
  t_kv_append_paged<bf16>("pos0", 64, 16, 512, 8, 0, false);
  t_kv_append_paged<bf16>("pos37_midpage", 64, 16, 1024, 8, 37, false);
  t_kv_append_paged<bf16>("pos127_last", 64, 16, 512, 8, 127, false);
  t_kv_append_paged<bf16>("pos128_past_table", 64, 16, 512, 8, 128, false);
  t_kv_append_paged<bf16>("bad_page_id", 64, 16, 512, 8, 40, true);
  t_kv_append_paged<float>("page1_pos5", 16, 1, 64, 8, 5, false);

  t_split_lens();
  t_kv_ranges(1, 32, 32, 32);
  t_kv_ranges(3, 32, 32, 32);
  t_kv_ranges(10, 17, 32, 32);
  t_kv_ranges(64, 32, 32, 32);
  t_kv_ranges(130, 4, 8, 1000);

  // Split-KV attention: Llama (D 64, G 4) and Qwen3 (D 128, G 2); lengths 0, 1, a block edge,
  // ragged, past several blocks and parts; the 16-byte path and the scalar path (odd pitch).
  t_attention<64, 4, bf16, bf16>("vec", 1, 4097, 1, 32, 32, 512, 0);
  t_attention<64, 4, bf16, bf16>("vec", 2, 4097, 4096, 32, 32, 512, 0);
  t_attention<64, 4, bf16, bf16>("vec", 1, 1000, 257, 16, 32, 512, 0);
  t_attention<64, 4, bf16, bf16>("vec_n0", 1, 600, 0, 16, 32, 512, 0);
  t_attention<64, 4, bf16, float>("vec_onepart", 1, 1000, 999, 1, 32, 512, 0);
  t_attention<128, 2, bf16, bf16>("vec", 1, 4097, 511, 32, 32, 1024, 0);
  t_attention<128, 2, bf16, bf16>("vec", 2, 4097, 4097, 17, 32, 1024, 0);
  t_attention<64, 4, bf16, bf16>("scalar_pitch", 2, 700, 613, 5, 32, 131, 1);
  t_attention<96, 3, float, float>("scalar_d96", 1, 300, 300, 3, 32, 96, 0);
  // f32 caches: the staged 16-byte path without tensor cores (swizzled rows, 16 lanes a row).
  t_attention<64, 4, float, float>("vec_f32", 1, 1000, 777, 3, 32, 512, 0);
  t_attention<64, 4, float, float>("vec_f32", 2, 300, 300, 1, 32, 512, 0);
  // Tensor-core scores and o (16-bit q and caches, 2 <= G <= 8): f16, eight query heads a
  // cache head (the n8 side full); G = 2 from a block of positions (128 rows) on, below that the
  // staged FMA path with 16-bit rows (parts of 64 beside a whole call of 128; 127 throughout).
  t_attention<64, 4, f16, f16>("vec_mma_f16", 1, 1000, 777, 3, 32, 512, 0);
  t_attention<128, 8, bf16, bf16>("vec_mma_g8", 1, 600, 600, 2, 32, 1024, 0);
  t_attention<128, 2, bf16, bf16>("vec_g2_block_edge", 2, 300, 128, 2, 32, 1024, 0);
  t_attention<128, 2, bf16, float>("vec_g2_below_block", 2, 300, 127, 1, 32, 1024, 0);
  // Several cache heads a call on tensor cores (one ring through all heads): a head's blocks
  // ending mid-ring, a head of one block, of one position, of none, paddings of a block.
  t_attention<64, 4, bf16, bf16>("vec_mma_heads", 8, 1000, 511, 4, 32, 512, 0);
  t_attention<64, 4, bf16, bf16>("vec_mma_heads", 3, 700, 130, 2, 32, 512, 0);
  t_attention<64, 4, bf16, bf16>("vec_mma_heads", 4, 200, 128, 1, 32, 512, 0);
  t_attention<64, 4, bf16, bf16>("vec_mma_heads", 2, 100, 1, 1, 32, 512, 0);
  t_attention<64, 4, bf16, bf16>("vec_mma_heads_n0", 2, 100, 0, 1, 32, 512, 0);
  t_attention<64, 4, f16, float>("vec_mma_heads", 2, 1000, 333, 3, 32, 256, 0);
  t_attention<128, 8, bf16, bf16>("vec_mma_g8_heads", 2, 600, 517, 2, 32, 2048, 0);
  t_attention<128, 2, bf16, bf16>("vec_mma_g2_heads", 8, 600, 517, 2, 32, 1024, 0);
  t_attention<64, 1, bf16, float>("vec_fma_g1", 2, 700, 389, 1, 32, 128, 0);

  // Paged split-KV attention (shuffled page tables, pools larger than the request): lengths 0,
  // 1, mid-page, a page edge, crossing split boundaries mid-page, the whole table; pages of 16
  // and of 32 with parts of 2 pages; the scalar path (odd pitch, unaligned).
  t_attention_paged<64, 4, bf16, bf16>("vec", 1, 16, 64, 96, 0, 32, 32, 512, 0);
  t_attention_paged<64, 4, bf16, bf16>("vec", 1, 16, 64, 96, 1, 32, 32, 512, 0);
  t_attention_paged<64, 4, bf16, bf16>("vec_midpage", 2, 16, 64, 96, 23, 32, 32, 512, 0);
  t_attention_paged<64, 4, bf16, bf16>("vec_page_edge", 2, 16, 64, 96, 256, 32, 32, 512, 0);
  t_attention_paged<64, 4, bf16, bf16>("vec_cross_split", 2, 16, 64, 96, 263, 32, 32, 512, 0);
  t_attention_paged<64, 4, bf16, float>("vec_full", 1, 16, 64, 64, 1024, 32, 32, 512, 0);
  t_attention_paged<128, 2, bf16, bf16>("vec_page32_midpage_parts", 2, 32, 40, 77, 1000, 16, 32, 1024, 0);
  t_attention_paged<128, 2, bf16, bf16>("vec_ragged_table", 1, 16, 33, 50, 520, 5, 32, 1024, 0);
  t_attention_paged<64, 4, bf16, bf16>("scalar_pitch", 2, 16, 48, 60, 613, 7, 32, 131, 1);
  t_attention_paged<96, 3, float, float>("scalar_d96", 1, 8, 40, 41, 300, 3, 32, 96, 0);

  t_merge<64>(17, 4, 3);
  t_merge<64>(17, 4, 3, 0);
  t_merge<64>(70, 4, 5);  // 280 weights: more than kSmemSmall holds
  t_merge<128>(2, 2, 1);
}
