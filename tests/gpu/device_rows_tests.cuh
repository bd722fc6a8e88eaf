// The row forms of etc/device/rows.cuh against the generic ops they stand in for: the same
// inputs through both must give the same bits, and a row form must decline (return false,
// write nothing) where its views or the CTA do not have its form. Included by
// device_ops_test.cu (Buf, HV, report, ...).

// ---- kernels: row form (ROW) or the generic op, *took = whether the row form ran -------------

template <bool ROW, int N, class TY>
__global__ void k_rows_reduce(View<const float> x, View<TY> y, int* took) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall};
  bool ran = false;
  if constexpr (ROW) ran = reduce_parts_rows<N>(c, x, y);
  else reduce_sum(c, x, 0, y);
  if (threadIdx.x == 0) *took = ran;
}

template <bool ROW, int N, class TX, class TR, class TW, class TY>
__global__ void k_rows_norm(View<const TX> x, View<TR> r, View<const TW> w, float eps, View<TY> y, bool add, int* took) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall};
  bool ran = false;
  View<const TR> rc;
  memcpy(&rc, &r, sizeof(rc));
  if constexpr (ROW) ran = add ? add_rmsnorm_rows<N>(c, x, rc, w, eps, y, r) : rmsnorm_rows<N>(c, x, w, eps, y);
  else if (add) add_rmsnorm(c, x, rc, w, eps, y, r);
  else rmsnorm(c, x, w, eps, y);
  if (threadIdx.x == 0) *took = ran;
}

template <bool ROW, int N, class T>
__global__ void k_rows_silu(View<const T> g, View<const T> u, View<T> y, int* took) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall};
  bool ran = false;
  if constexpr (ROW) ran = silu_mul_rows<N>(c, g, u, y);
  else silu_mul(c, g, u, y);
  if (threadIdx.x == 0) *took = ran;
}

template <bool ROW, int NQ, int NK, int D, class T>
__global__ void k_rows_rope(View<const T> q, View<const T> k, View<const int> pos, View<T> qo, View<T> ko, RopeParams rp,
                            int* took) {
  SMEM_DECL; Ctx c{smem_, kSmemSmall};
  bool ran = false;
  if constexpr (ROW) ran = rope_row<NQ, NK, D>(c, q, k, pos, qo, ko, rp);
  else rope(c, q, k, pos, qo, ko, rp);
  if (threadIdx.x == 0) *took = ran;
}

template <bool ROW, int P, int W, int D, class TO>
__global__ void k_rows_merge(View<const float> op, View<const float> lp, View<TO> o, View<float> lse, int* took) {
  SMEM_DECL; Ctx c{smem_, kAttnMergeSmem};
  bool ran = false;
  if constexpr (ROW) ran = attention_merge_row<P, W, D>(c, op, lp, o, lse);
  else attention_merge(c, op, lp, o, lse, D);
  if (threadIdx.x == 0) *took = ran;
}

template <bool ROW, int P, int W, int D, class TO>
__global__ void k_rows_merge_rows(View<const float> op, View<const float> lp, View<TO> o, int* took) {
  SMEM_DECL; Ctx c{smem_, kAttnMergeSmem};
  bool ran = false;
  if constexpr (ROW) ran = attention_merge_rows<P, W, D>(c, op, lp, o);
  else attention_merge(c, op, lp, o, D);
  if (threadIdx.x == 0) *took = ran;
}

// ---- helpers --------------------------------------------------------------------------------

// Runs launch(row, took) for the row form and the generic op on copies of the same outputs;
// `outs` lists (buffer bytes on the device, size) pairs restored before each run.
struct RowsRun {
  std::vector<std::pair<void*, size_t>> outs;
  std::vector<std::vector<unsigned char>> init, row_out, gen_out;
  Buf<int> took{1};
  template <class Launch>
  bool run(const Launch& launch, bool& row_ran) {
    init.clear();
    for (auto& [p, n] : outs) {
      init.emplace_back(n);
      CK(cudaMemcpy(init.back().data(), p, n, cudaMemcpyDeviceToHost));
    }
    auto once = [&](bool row, std::vector<std::vector<unsigned char>>& out) {
      for (size_t i = 0; i < outs.size(); ++i)
        CK(cudaMemcpy(outs[i].first, init[i].data(), outs[i].second, cudaMemcpyHostToDevice));
      took.h[0] = -1;
      took.up();
      launch(row, took.d);
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      took.down();
      out.clear();
      for (auto& [p, n] : outs) {
        out.emplace_back(n);
        CK(cudaMemcpy(out.back().data(), p, n, cudaMemcpyDeviceToHost));
      }
      return took.h[0];
    };
    row_ran = once(true, row_out) == 1;
    once(false, gen_out);
    if (!row_ran) return row_out == init;  // declined: nothing written
    return row_out == gen_out;
  }
};

// A row form that should run (expect_row) or decline: the verdict and the check's name.
static void rows_report(bool same, bool row_ran, bool expect_row, const std::string& name) {
  report(same && row_ran == expect_row, name + (expect_row ? "" : "_declines"), same ? 0.0 : 1.0);
}

// ---- tests ----------------------------------------------------------------------------------

// Split-K partials [P, rows, N] (part pitch pp >= rows * pitch) summed into [rows, N].
template <int N, class TY>
static void t_rows_reduce(const char* what, long long P, long long rows, long long pitch, long long off, int threads,
                          bool expect_row) {
  const long long pp = rows * pitch + 4;
  Buf<float> x(P * pp + off + 8);
  Buf<TY> y(rows * pitch + off + 8);
  x.random(-3, 3);
  y.poison();
  x.up();
  y.up();
  HV xv = rows == 1 ? hv(off, {P, N}, {pp, 1}) : hv(off, {P, rows, N}, {pp, pitch, 1});
  HV yv = rows == 1 ? hv(off, {N}, {1}) : hv(off, {rows, N}, {pitch, 1});
  RowsRun rr;
  rr.outs = {{y.d, y.n * sizeof(TY)}};
  bool ran = false;
  bool same = rr.run(
      [&](bool row, int* took) {
        if (row) k_rows_reduce<true, N, TY><<<1, threads, kSmemSmall>>>(dv<const float>(x, xv), dv<TY>(y, yv), took);
        else k_rows_reduce<false, N, TY><<<1, threads, kSmemSmall>>>(dv<const float>(x, xv), dv<TY>(y, yv), took);
      },
      ran);
  rows_report(same, ran, expect_row, std::string("rows_reduce_") + tname<TY>() + "_" + what);
}

template <int N, class TX, class TR, class TW, class TY>
static void t_rows_norm(const char* what, bool add, long long rows, long long pitch, long long off, int threads,
                        bool expect_row) {
  Buf<TX> x(rows * pitch + off + 8);
  Buf<TR> r(rows * pitch + off + 8);
  Buf<TW> w(N + 8);
  Buf<TY> y(rows * pitch + off + 8);
  x.random(-3, 3);
  r.random(-3, 3);
  w.random(0.5, 1.5);
  y.poison();
  x.up();
  r.up();
  w.up();
  y.up();
  HV v = rows == 1 ? hv(off, {N}, {1}) : hv(off, {rows, N}, {pitch, 1});
  HV wv = hv(0, {N}, {1});
  RowsRun rr;
  rr.outs = {{y.d, y.n * sizeof(TY)}, {r.d, r.n * sizeof(TR)}};
  bool ran = false;
  const float eps = 1e-5f;
  bool same = rr.run(
      [&](bool row, int* took) {
        if (row)
          k_rows_norm<true, N, TX, TR, TW, TY><<<1, threads, kSmemSmall>>>(dv<const TX>(x, v), dv<TR>(r, v), dv<const TW>(w, wv),
                                                                          eps, dv<TY>(y, v), add, took);
        else
          k_rows_norm<false, N, TX, TR, TW, TY><<<1, threads, kSmemSmall>>>(dv<const TX>(x, v), dv<TR>(r, v), dv<const TW>(w, wv),
                                                                           eps, dv<TY>(y, v), add, took);
      },
      ran);
  rows_report(same, ran, expect_row,
              std::string(add ? "rows_add_rmsnorm_" : "rows_rmsnorm_") + tname<TX>() + "_" + tname<TR>() + "_" + what);
}

template <int N, class T>
static void t_rows_silu(const char* what, long long rows, long long pitch, long long off, int threads, bool expect_row) {
  Buf<T> g(rows * pitch + off + 8), u(rows * pitch + off + 8), y(rows * pitch + off + 8);
  g.random(-6, 6);
  u.random(-3, 3);
  y.poison();
  g.up();
  u.up();
  y.up();
  HV v = rows == 1 ? hv(off, {N}, {1}) : hv(off, {rows, N}, {pitch, 1});
  RowsRun rr;
  rr.outs = {{y.d, y.n * sizeof(T)}};
  bool ran = false;
  bool same = rr.run(
      [&](bool row, int* took) {
        if (row) k_rows_silu<true, N, T><<<1, threads, kSmemSmall>>>(dv<const T>(g, v), dv<const T>(u, v), dv<T>(y, v), took);
        else k_rows_silu<false, N, T><<<1, threads, kSmemSmall>>>(dv<const T>(g, v), dv<const T>(u, v), dv<T>(y, v), took);
      },
      ran);
  rows_report(same, ran, expect_row, std::string("rows_silu_mul_") + tname<T>() + "_" + what);
}

template <int NQ, int NK, int D, class T>
static void t_rows_rope(const char* what, RopeParams rp, int p, long long koff, int threads, bool expect_row) {
  Buf<T> q(NQ), k(NK + koff), qo(NQ), ko(NK + koff);
  Buf<int> pos(1);
  q.random(-3, 3);
  k.random(-3, 3);
  qo.poison();
  ko.poison();
  pos.h[0] = p;
  q.up();
  k.up();
  qo.up();
  ko.up();
  pos.up();
  HV qv = hv(0, {NQ}, {1}), kv = hv(koff, {NK}, {1}), pv = hv(0, {}, {});
  RowsRun rr;
  rr.outs = {{qo.d, qo.n * sizeof(T)}, {ko.d, ko.n * sizeof(T)}};
  bool ran = false;
  bool same = rr.run(
      [&](bool row, int* took) {
        if (row)
          k_rows_rope<true, NQ, NK, D, T><<<1, threads, kSmemSmall>>>(dv<const T>(q, qv), dv<const T>(k, kv), dv<const int>(pos, pv),
                                                                    dv<T>(qo, qv), dv<T>(ko, kv), rp, took);
        else
          k_rows_rope<false, NQ, NK, D, T><<<1, threads, kSmemSmall>>>(dv<const T>(q, qv), dv<const T>(k, kv), dv<const int>(pos, pv),
                                                                     dv<T>(qo, qv), dv<T>(ko, kv), rp, took);
      },
      ran);
  rows_report(same, ran, expect_row, std::string("rows_rope_") + tname<T>() + "_" + what);
}

// Split-KV parts of one request: some parts empty (lse -inf), head `dead` empty in every part;
// np parts at run time (the row form takes 1 to P of them).
template <int P, int W, int D, class TO>
static void t_rows_merge(const char* what, int empty_every, int dead, bool with_lse, int threads, bool expect_row,
                         int np = P) {
  constexpr int HEADS = W / D;
  Buf<float> op(np * W), lp(np * HEADS), lse(HEADS);
  Buf<TO> o(W);
  op.random(-2, 2);
  lp.random(-6, 6);
  for (int p = 0; p < np; ++p)
    for (int h = 0; h < HEADS; ++h)
      if ((empty_every && p % empty_every == empty_every - 1) || h == dead) {
        lp.h[p * HEADS + h] = -INFINITY;
        for (int d = 0; d < D; ++d) op.h[p * W + h * D + d] = NAN;  // an empty part's values are never used
      }
  o.poison();
  lse.poison();
  op.up();
  lp.up();
  o.up();
  lse.up();
  HV opv = hv(0, {np, W}, {W, 1}), lpv = hv(0, {np, HEADS}, {HEADS, 1}), ov = hv(0, {W}, {1}), lv = hv(0, {HEADS}, {1});
  View<float> lse_view = dv<float>(lse, lv);
  if (!with_lse) lse_view = View<float>{};
  RowsRun rr;
  rr.outs = {{o.d, o.n * sizeof(TO)}, {lse.d, lse.n * sizeof(float)}};
  bool ran = false;
  bool same = rr.run(
      [&](bool row, int* took) {
        if (row)
          k_rows_merge<true, P, W, D, TO><<<1, threads, kAttnMergeSmem>>>(dv<const float>(op, opv), dv<const float>(lp, lpv),
                                                                        dv<TO>(o, ov), lse_view, took);
        else
          k_rows_merge<false, P, W, D, TO><<<1, threads, kAttnMergeSmem>>>(dv<const float>(op, opv), dv<const float>(lp, lpv),
                                                                         dv<TO>(o, ov), lse_view, took);
      },
      ran);
  rows_report(same, ran, expect_row, std::string("rows_attention_merge_") + tname<TO>() + "_" + what);
}

// The merge of several requests' rows at once (a matmul task's, fold-attention-merge): parts
// [np, R, W] (rows `pitch` apart, parts R * pitch + 8 apart, from element `off`) and their lse
// [np, R, W / D] into o [R, W] (rows W + 8 apart), against the generic op row by row.
template <int P, int W, int D, class TO>
static void t_rows_merge_rows(const char* what, int np, long long R, long long pitch, long long off, int empty_every,
                              int threads, bool expect_row) {
  constexpr int HEADS = W / D;
  const long long pp = R * pitch + 8, opitch = W + 8;
  Buf<float> op(np * pp + off + 8), lp(np * R * HEADS + 1);
  Buf<TO> o(R * opitch + 1);
  op.random(-2, 2);
  lp.random(-6, 6);
  for (int p = 0; p < np; ++p)
    for (long long r = 0; r < R; ++r)
      for (int h = 0; h < HEADS; ++h)
        if ((empty_every && (p + r + h) % empty_every == empty_every - 1) || (r == 1 && h == 0)) {
          lp.h[(p * R + r) * HEADS + h] = -INFINITY;  // row 1's head 0: every part empty
          for (int d = 0; d < D; ++d) op.h[off + p * pp + r * pitch + h * D + d] = NAN;
        }
  o.poison();
  op.up();
  lp.up();
  o.up();
  HV opv = hv(off, {np, R, W}, {pp, pitch, 1}), lpv = hv(0, {np, R, HEADS}, {R * HEADS, HEADS, 1}),
     ov = hv(0, {R, W}, {opitch, 1});
  RowsRun rr;
  rr.outs = {{o.d, o.n * sizeof(TO)}};
  bool ran = false;
  bool same = rr.run(
      [&](bool row, int* took) {
        if (row)
          k_rows_merge_rows<true, P, W, D, TO><<<1, threads, kAttnMergeSmem>>>(dv<const float>(op, opv),
                                                                             dv<const float>(lp, lpv), dv<TO>(o, ov), took);
        else
          k_rows_merge_rows<false, P, W, D, TO><<<1, threads, kAttnMergeSmem>>>(dv<const float>(op, opv),
                                                                              dv<const float>(lp, lpv), dv<TO>(o, ov), took);
      },
      ran);
  rows_report(same, ran, expect_row, std::string("rows_attention_merge_rows_") + tname<TO>() + "_" + what);
}

static void run_rows_tests() {
  // Split-K reductions as a decode step has them: 4 and 8 parts of one row, a few rows, more
  // parts than one batch of loads, a row length that leaves threads idle; declines on an
  // unaligned start, on 128 threads.
  t_rows_reduce<2048, bf16>("p4_row", 4, 1, 2048, 0, 256, true);
  t_rows_reduce<512, bf16>("p8_row", 8, 1, 512, 0, 256, true);
  t_rows_reduce<1024, bf16>("p4_rows4", 4, 4, 128 * 1024, 0, 256, true);
  t_rows_reduce<2048, float>("p11_rows3", 11, 3, 2056, 0, 256, true);
  t_rows_reduce<1000, bf16>("p3_n1000", 3, 2, 1000, 0, 256, true);
  t_rows_reduce<2048, bf16>("unaligned", 4, 1, 2048, 1, 256, false);
  t_rows_reduce<2048, bf16>("t128", 4, 1, 2048, 0, 128, false);
  // Norms of one row and of a few (the whole CTA per row, as the generic op below 8 rows).
  t_rows_norm<2048, bf16, float, bf16, bf16>("row", true, 1, 2048, 0, 256, true);
  t_rows_norm<1024, bf16, float, bf16, bf16>("rows3", true, 3, 1032, 0, 256, true);
  t_rows_norm<3072, bf16, float, bf16, bf16>("n3072", true, 1, 3072, 0, 256, true);
  t_rows_norm<1000, bf16, float, bf16, bf16>("n1000", true, 2, 1000, 0, 256, true);
  t_rows_norm<2048, bf16, float, bf16, bf16>("rmsnorm_row", false, 1, 2048, 0, 256, true);
  t_rows_norm<2048, bf16, bf16, bf16, bf16>("bf16_res", true, 2, 2048, 0, 256, true);
  t_rows_norm<2048, bf16, float, bf16, bf16>("unaligned", true, 1, 2048, 2, 256, false);
  t_rows_norm<2048, bf16, float, bf16, bf16>("pitch_odd", true, 2, 2049, 0, 256, false);
  t_rows_norm<2048, bf16, float, bf16, bf16>("t512", true, 1, 2048, 0, 512, false);
  // silu_mul tiles of the MLP.
  t_rows_silu<1024, bf16>("rows4", 4, 8192, 0, 256, true);
  t_rows_silu<8192, bf16>("row", 1, 8192, 0, 256, true);
  t_rows_silu<3000, bf16>("n3000", 2, 3008, 0, 256, true);
  t_rows_silu<1024, bf16>("unaligned", 1, 1024, 3, 256, false);
  // rope of a Llama-3 row (llama3 scaling, D 64) and a Qwen3-like row (D 128).
  const RopeParams llama{64, 500000.0, true, 32.0, 1.0, 4.0, 8192.0};
  const RopeParams plain{128, 1000000.0, false, 1.0, 1.0, 1.0, 1.0};
  for (int p : {0, 511, 4096, 100000}) {
    t_rows_rope<2048, 512, 64, bf16>(("llama_p" + std::to_string(p)).c_str(), llama, p, 0, 256, true);
    t_rows_rope<2048, 1024, 128, bf16>(("plain_p" + std::to_string(p)).c_str(), plain, p, 0, 256, true);
  }
  t_rows_rope<2048, 512, 64, bf16>("t128", llama, 7, 0, 128, false);
  // attention_merge of a Llama (4 heads of 64) and a Qwen3-like (2 of 128) cache head's parts,
  // with empty parts and an empty head; more outputs than threads; declines on 128 threads.
  t_rows_merge<17, 256, 64, bf16>("p17_llama", 3, 2, false, 256, true);
  t_rows_merge<17, 256, 128, bf16>("p17_qwen_lse", 4, -1, true, 256, true);
  t_rows_merge<5, 512, 64, float>("p5_w512_lse", 0, 7, true, 256, true);
  t_rows_merge<17, 256, 64, bf16>("t128", 3, 2, false, 128, false);
  // Fewer parts at run time than the form's most (the parts follow the batch), and more.
  t_rows_merge<32, 256, 64, bf16>("p32_np16", 3, 2, true, 256, true, 16);
  t_rows_merge<32, 256, 64, bf16>("p32_np1", 0, -1, true, 256, true, 1);
  t_rows_merge<32, 256, 64, bf16>("p32_np33", 3, 2, false, 256, false, 33);
  // Rows at once, as the o projection's tasks merge them below B = 16 (Llama's 8 parts of one
  // row, 2 of 15, Qwen3's head_dim 128, fewer parts than the form's most), none (B >= 16: the
  // merge is empty), several per thread with an odd count; declines on an unaligned start, on a
  // part count past the form's, on 128 threads.
  t_rows_merge_rows<8, 512, 64, bf16>("p8_r1", 8, 1, 2048, 0, 3, 256, true);
  t_rows_merge_rows<2, 512, 64, bf16>("p2_r15", 2, 15, 2048, 0, 3, 256, true);
  t_rows_merge_rows<8, 512, 128, bf16>("p6_r3_qwen", 6, 3, 2048, 0, 4, 256, true);
  t_rows_merge_rows<8, 512, 64, bf16>("p8_r0", 8, 0, 2048, 0, 3, 256, true);
  t_rows_merge_rows<4, 1024, 64, float>("p4_r9", 3, 9, 1024, 0, 0, 256, true);
  t_rows_merge_rows<8, 512, 64, bf16>("unaligned", 8, 2, 2048, 1, 3, 256, false);
  t_rows_merge_rows<8, 512, 64, bf16>("np9", 9, 2, 2048, 0, 3, 256, false);
  t_rows_merge_rows<8, 512, 64, bf16>("t128", 8, 2, 2048, 0, 3, 128, false);
}
