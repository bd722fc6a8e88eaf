// The fused row chains of etc/device/fused_rows.cuh against the op sequences they stand in for
// (the generic ops, one after another on one CTA, as a merged task runs them): the norm chain
// must give the same bits, the q/k/v chain the same bits without the per-head norm and values
// within a bf16 rounding with it (its sums of squares add in another order). A fused form must
// decline (return false, write nothing) where its views do not have its shape. Included by
// device_ops_test.cu after device_rows_tests.cuh (RowsRun, rows_report, ...).

// ---- kernels: the fused form (FUSED) or the op sequence; *took = whether the fused form ran ----

template <bool FUSED, int N, int MAXR>
__global__ void k_fused_norm(View<const float> x, View<bf16> t, View<float> r, View<const bf16> w, float eps, View<bf16> y,
                             int* took) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall};
  bool ran = false;
  View<const float> rc;
  View<const bf16> tc;
  memcpy(&rc, &r, sizeof(rc));
  memcpy(&tc, &t, sizeof(tc));
  if constexpr (FUSED) {
    ran = reduce_add_rmsnorm_rows<N, MAXR>(c, x, t, rc, w, eps, y, r);
  } else {
    reduce_sum(c, x, 0, t);
    __syncthreads();
    add_rmsnorm(c, tc, rc, w, eps, y, r);
  }
  if (threadIdx.x == 0) *took = ran;
}

// q, k, v, qn, kn and kr: the sequence's temps, which the fused form does not write.
struct QkvTemps {
  View<bf16> q, k, v, qn, kn, kr;
};

template <class T>
__device__ View<const T> as_const(const View<T>& v) {
  View<const T> c;
  memcpy(&c, &v, sizeof(c));
  return c;
}

template <bool FUSED, int NQ, int NK, int D, bool NORM>
__global__ void k_fused_qkv(View<const float> qp, View<const float> kp, View<const float> vp, View<const bf16> qw,
                            View<const bf16> kw, View<const int> pos, RopeParams rp, QkvTemps tmp, View<bf16> qo,
                            View<bf16> kc, View<bf16> vc, int* took) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall};
  bool ran = false;
  const float eps = 1e-6f;
  if constexpr (FUSED) {
    ran = qkv_rope_append_row<NQ, NK, D, 4, NORM, bf16>(c, qp, kp, vp, qw, kw, eps, pos, rp, qo, kc, vc);
  } else {
    reduce_sum(c, kp, 0, tmp.k);
    __syncthreads();
    reduce_sum(c, qp, 0, tmp.q);
    __syncthreads();
    reduce_sum(c, vp, 0, tmp.v);
    __syncthreads();
    if constexpr (NORM) {
      rmsnorm(c, as_const(tmp.q), qw, eps, tmp.qn);
      __syncthreads();
      rmsnorm(c, as_const(tmp.k), kw, eps, tmp.kn);
      __syncthreads();
      rope(c, as_const(tmp.qn), as_const(tmp.kn), pos, qo, tmp.kr, rp);
    } else {
      rope(c, as_const(tmp.q), as_const(tmp.k), pos, qo, tmp.kr, rp);
    }
    __syncthreads();
    kv_append(c, as_const(tmp.kr), as_const(tmp.v), pos, kc, vc);
  }
  if (threadIdx.x == 0) *took = ran;
}

// ---- tests ----------------------------------------------------------------------------------

// P split-K partials of R rows of N ([P, N] for one row, or [P, R, N] with rank3: the tile of a
// norm task, whose sum is [R, N]; R > 1 is etcc --norm-rows's tile), the residual in f32. MAXR:
// the tile's most rows as etcc passes it (1 << 20: not known; the form of rows in flight takes
// min(MAXR, ETC_NORM_ROWS_IN_FLIGHT) rows at a time).
template <int N, int MAXR = (1 << 20)>
static void t_fused_norm(const char* what, long long P, bool rank3, long long off, bool expect_fused, long long R = 1) {
  Buf<float> x(P * R * N + off + 8), r(R * N + off + 8);
  Buf<bf16> t(R * N + off + 8), w(N + 8), y(R * N + off + 8);
  x.random(-3, 3);
  r.random(-3, 3);
  w.random(0.5, 1.5);
  t.poison();
  y.poison();
  x.up();
  r.up();
  w.up();
  t.up();
  y.up();
  HV xv = rank3 ? hv(off, {P, R, N}, {R * N, N, 1}) : hv(off, {P, N}, {N, 1});
  HV v = hv(off, {R, N}, {N, 1}), wv = hv(0, {N}, {1});
  RowsRun rr;
  rr.outs = {{y.d, y.n * sizeof(bf16)}, {r.d, r.n * sizeof(float)}};  // t: not written by the fused form
  bool ran = false;
  const float eps = 1e-5f;
  bool same = rr.run(
      [&](bool fused, int* took) {
        if (fused)
          k_fused_norm<true, N, MAXR><<<1, 256, kSmemSmall>>>(dv<const float>(x, xv), dv<bf16>(t, v), dv<float>(r, v),
                                                        dv<const bf16>(w, wv), eps, dv<bf16>(y, v), took);
        else
          k_fused_norm<false, N, MAXR><<<1, 256, kSmemSmall>>>(dv<const float>(x, xv), dv<bf16>(t, v), dv<float>(r, v),
                                                         dv<const bf16>(w, wv), eps, dv<bf16>(y, v), took);
      },
      ran);
  rows_report(same, ran, expect_fused, std::string("fused_reduce_add_rmsnorm_") + what);
}

// One request's q/k/v partials (P parts; q of NQ, k and v of NK) at position p of a cache of S
// rows; with norm, Qwen3's per-head rmsnorm of q and k. koff: k's partials start unaligned.
template <int NQ, int NK, int D, bool NORM>
static void t_fused_qkv(const char* what, RopeParams rp, long long P, int p, bool expect_fused, int qcols = NQ) {
  constexpr long long S = 8;
  Buf<float> qp(P * NQ), kp(P * NK), vp(P * NK);
  Buf<bf16> qw(D), kw(D), q(NQ), k(NK), v(NK), qn(NQ), kn(NK), kr(NK), qo(NQ), kc(S * NK), vc(S * NK);
  Buf<int> pos(1);
  qp.random(-1, 1);
  kp.random(-1, 1);
  vp.random(-1, 1);
  qw.random(0.5, 1.5);
  kw.random(0.5, 1.5);
  kc.random(-1, 1);  // a cache that holds a past: rows other than p must keep it
  vc.random(-1, 1);
  qo.poison();
  pos.h[0] = p;
  for (auto* b : {&q, &k, &v, &qn, &kn, &kr}) b->poison(), b->up();
  qp.up(), kp.up(), vp.up(), qw.up(), kw.up(), kc.up(), vc.up(), qo.up(), pos.up();
  // qcols != NQ: q's view is not the compiled width (the fused form declines).
  HV qpv = hv(0, {P, qcols}, {NQ, 1}), kpv = hv(0, {P, NK}, {NK, 1}), qv = hv(0, {qcols}, {1}), kv = hv(0, {NK}, {1});
  HV wv = hv(0, {D}, {1}), pv = hv(0, {}, {}), cv = hv(0, {S, NK}, {NK, 1});
  QkvTemps tmp{dv<bf16>(q, qv), dv<bf16>(k, kv), dv<bf16>(v, kv), dv<bf16>(qn, qv), dv<bf16>(kn, kv), dv<bf16>(kr, kv)};
  RowsRun rr;
  rr.outs = {{qo.d, qo.n * sizeof(bf16)}, {kc.d, kc.n * sizeof(bf16)}, {vc.d, vc.n * sizeof(bf16)}};
  bool ran = false;
  bool same = rr.run(
      [&](bool fused, int* took) {
        auto args = [&](auto kernel) {
          kernel<<<1, 256, kSmemSmall>>>(dv<const float>(qp, qpv), dv<const float>(kp, kpv), dv<const float>(vp, kpv),
                                         dv<const bf16>(qw, wv), dv<const bf16>(kw, wv), dv<const int>(pos, pv), rp, tmp,
                                         dv<bf16>(qo, qv), dv<bf16>(kc, cv), dv<bf16>(vc, cv), took);
        };
        if (fused) args(k_fused_qkv<true, NQ, NK, D, NORM>);
        else args(k_fused_qkv<false, NQ, NK, D, NORM>);
      },
      ran);
  if (NORM && ran && !same) {
    // Within a bf16 rounding of the sequence's values: rel L2 over all three outputs.
    double num = 0, den = 0;
    for (size_t i = 0; i < rr.row_out.size(); ++i) {
      const bf16* a = reinterpret_cast<const bf16*>(rr.row_out[i].data());
      const bf16* b = reinterpret_cast<const bf16*>(rr.gen_out[i].data());
      for (size_t j = 0; j < rr.row_out[i].size() / sizeof(bf16); ++j) {
        const double x = __bfloat162float(a[j]), y = __bfloat162float(b[j]);
        num += (x - y) * (x - y);
        den += y * y;
      }
    }
    same = den > 0 && std::sqrt(num / den) < 4e-3;
  }
  rows_report(same, ran, expect_fused, std::string("fused_qkv_rope_append_") + what);
}

static void run_fused_rows_tests() {
  // The norm: a decode step's 4 split-K parts of 2048, Qwen3's of 1024, more parts than one
  // batch of loads; declines on an unaligned row.
  t_fused_norm<2048>("p4", 4, true, 0, true);
  t_fused_norm<1024>("p4_n1024", 4, true, 0, true);
  t_fused_norm<2048>("p11", 11, true, 0, true);
  t_fused_norm<2048>("unaligned", 4, true, 2, false);
  // Tiles of several rows (etcc --norm-rows): rows in flight together (4 at a time, or the
  // tile's most rows where etcc passes fewer), each with the bits of the op sequence.
  t_fused_norm<2048>("rows4_p4", 4, true, 0, true, 4);
  t_fused_norm<2048>("rows3_p8", 8, true, 0, true, 3);
  t_fused_norm<2048>("rows9_p4", 4, true, 0, true, 9);
  t_fused_norm<2048, 2>("rows2_maxr2_p4", 4, true, 0, true, 2);
  t_fused_norm<2048, 4>("rows4_maxr4_p8", 8, true, 0, true, 4);
  t_fused_norm<2048, 1>("rows1_maxr1_p4", 4, true, 0, true, 1);
  // The q/k/v chain: Llama-3 (4 heads of 64 to a cache head, llama3 rope scaling), Qwen3 (D
  // 128, per-head norms), at the cache's first and last rows and outside it (no row written),
  // with 1 to 4 parts; declines on a q of another width.
  const RopeParams llama{64, 500000.0, true, 32.0, 1.0, 4.0, 8192.0};
  const RopeParams qwen{128, 1000000.0, false, 1.0, 1.0, 1.0, 1.0};
  for (int p : {0, 7, 8}) {
    t_fused_qkv<2048, 512, 64, false>(("llama_pos" + std::to_string(p)).c_str(), llama, 2, p, true);
    t_fused_qkv<2048, 1024, 128, true>(("qwen_pos" + std::to_string(p)).c_str(), qwen, 2, p, true);
  }
  t_fused_qkv<2048, 512, 64, false>("llama_p1", llama, 1, 3, true);
  t_fused_qkv<2048, 1024, 128, true>("qwen_p4", qwen, 4, 3, true);
  t_fused_qkv<2048, 512, 64, false>("q_width", llama, 2, 3, false, 1024);
}
