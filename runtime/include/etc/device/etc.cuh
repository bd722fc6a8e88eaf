// The device tile library that etcc's generated CUDA includes: views and context, the tile
// ops, event counters and index helpers, all in namespace etc::dev. See docs/backend.md.
// Every tile op is called by all threads of the CTA (1-D, blockDim.x a multiple of 32 in
// [128, 512]) and ends with __syncthreads().
//
//   View<T>  {T* ptr; int rank; long long ext[4]; long long stride[4];}   (T may be const)
//   Ctx      {unsigned char* smem; unsigned smem_bytes;}
//   copy(ctx, x, y)          fill(ctx, y, double v)        cast(ctx, x, y)
//   add(ctx, a, b, y)        mul(ctx, a, b, y)             silu_mul(ctx, g, u, y)
//   reduce_sum(ctx, x, axis, y)    reduce_max(ctx, x, axis, y)
//   rmsnorm(ctx, x, w, eps, y)
//   matmul<TM, TN, TK>(ctx, a, b, transpose_b, y)   smem: matmul_smem_bytes<T, TM, TN, TK>()
//   topk_softmax<EPL>(ctx, x, w, ids, renormalize)
//   moe_align(ctx, ids, sorted, bexp, nblk, num_experts, block)   smem: moe_align_smem_bytes(E)
//   grouped_matmul<BLOCK, RG, KC, NC>(ctx, x, w, sorted, bexp, nblk, [w_up,] y, top_k[, silu_mul])
//                            smem: grouped_matmul_smem_bytes<T, BLOCK, RG, KC, NC>()
//   moe_combine(ctx, y, weights, out)
//   add_rmsnorm(ctx, x, residual, w, eps, normed, residual_out)
//   embedding(ctx, ids, table, y)      argmax(ctx, x, y)      split_lens(ctx, lens, y, chunk)
//   rope(ctx, q, k, pos, q_out, k_out, RopeParams)    kv_append(ctx, k, v, pos, k_cache, v_cache)
//   kv_append_paged(ctx, k, v, pos, page_table, k_pages, v_pages)
//   attention_decode<D, G[, HK]>(ctx, q, k_cache, v_cache, lens, o, [lse,] scale)
//   attention_decode_paged<D, G[, HK]>(ctx, q, k_pages, v_pages, lens, page_table, o, [lse,] scale)
//                            smem: attention_decode_smem_bytes<D, G[, HK]>()
//   attention_merge(ctx, o_parts, lse_parts, o, [lse,] head_dim)
//   other ops need at most kSmallOpSmem bytes of ctx.smem
//   notify(p, counter[, n_elements])   notify_checked(p, counter, n, initial, site)
//   wait(p, counter, target, site) -> bool      aborted(p) -> bool
//   floordiv, floormod, cdiv, imin, imax (long long)
#pragma once

// The fewest CTAs of a generated kernel that must fit on one SM (its __launch_bounds__' second
// argument): 2 caps registers at 128 a thread so that two CTAs share an SM, when their shared
// memory fits too (the runtime launches as many CTAs as the occupancy API fits).
#ifndef ETC_MIN_CTAS_PER_SM
#define ETC_MIN_CTAS_PER_SM 1
#endif

#include "etc/device/common.cuh"
#include "etc/device/elementwise.cuh"
#include "etc/device/reduce.cuh"
#include "etc/device/matmul.cuh"
#include "etc/device/moe.cuh"
#include "etc/device/decode.cuh"
#include "etc/device/attention.cuh"
#include "etc/device/rows.cuh"
#include "etc/device/fused_rows.cuh"
#include "etc/device/events.cuh"
