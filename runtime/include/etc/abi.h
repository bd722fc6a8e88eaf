/* The binary interface between code that etcc generates and the runtime that launches it.
 * Plain C, included by the runtime (host) and by the generated CUDA (device). Changing any
 * layout here changes ETC_ABI_VERSION, which the descriptor records and the runtime checks. */
#ifndef ETC_ABI_H
#define ETC_ABI_H

#define ETC_ABI_VERSION 2

/* Upper limits that both sides rely on. */
#define ETC_MAX_RANK 4   /* tensor, event and task-grid rank */

/* Error codes written into EtcError.code by the kernel. 0 = no error. */
#define ETC_ERR_NONE 0u
#define ETC_ERR_WAIT_TIMEOUT 1u   /* a wait spun longer than the watchdog budget */
#define ETC_ERR_OVER_NOTIFY 2u    /* debug mode: an element got more notifies than its count */
#define ETC_ERR_BOUND 3u          /* a data-dependent extent exceeded its stated bound */
#define ETC_ERR_ABORTED 4u        /* (runtime only) another CTA's error stopped the kernel */
#define ETC_ERR_QUEUE_STARVED 5u  /* dynamic schedule: no task became ready within the watchdog
                                     budget (count = tasks that became ready, target = tasks in all) */

/* Launch flags (EtcParams.flags). */
#define ETC_FLAG_DEBUG 1u         /* check notify counts against the initial counts */

/* One error record per launch, zeroed by the runtime before the launch. The first CTA that
 * fails wins an atomicCAS on `code` from 0 and fills the rest; every spinning CTA sees
 * code != 0 and leaves the kernel. */
typedef struct EtcError {
  unsigned int code;                /* ETC_ERR_* */
  int task;                         /* index into the descriptor's "tasks", -1 if none */
  int event;                        /* index into the descriptor's "events", -1 if none */
  int ncoords;                      /* valid entries of coords */
  long long coords[ETC_MAX_RANK];   /* the failing task's coordinates */
  long long element;                /* row-major linear index of the event element */
  unsigned int count;               /* the counter value seen (notifies received) */
  unsigned int target;              /* the count waited for / the initial count exceeded */
  unsigned int done;                /* written last (1) by the winner, after the fields above */
  unsigned int pad_;
} EtcError;

/* Kernel parameters. The generated code declares, for a module with NS syms and NT tensors
 * (each at least 1 in the layout, even when the module has none):
 *
 *   struct EtcParams {
 *     long long sym[NS];          // offset 0: sym values, in declaration order
 *     void* tensor[NT];           // offset 8*NS: device pointers, in declaration order
 *                                 //   (temps point into the runtime's workspace)
 *     unsigned int* events;       // offset 8*(NS+NT): event counters (descriptor event_words)
 *     EtcError* error;            // +8
 *     long long watchdog_ns;      // +16: spin budget of one wait
 *     unsigned int flags;         // +24: ETC_FLAG_*
 *     unsigned int pad_;          // +28
 *     const void* tmaps;          // +32: the tensor maps of the descriptor's "tmaps" (abi 2): a
 *                                 //   128-byte CUtensorMap per tensor, in declaration order, of
 *                                 //   which those listed are valid; null where there are none
 *                                 //   (etc/device/tma.cuh)
 *     long long derived[ND];      // +40: only where the descriptor lists ND > 0 "derived" syms:
 *                                 //   sym-only expressions, evaluated by the runtime per binding
 *   };                            // size 8*(NS+NT) + 40 + 8*ND, alignment 8
 *
 * and every kernel is `extern "C" __global__ void NAME(const __grid_constant__ EtcParams p)`.
 * The runtime fills a byte buffer of that layout and passes its address as the one entry of
 * kernelParams. */
#define ETC_PARAMS_TAIL_BYTES 40

/* Profiled megakernels (etcc --profile; descriptor "profile"): inside the zeroed counter area,
 * at word profile.offset (even), one u32 count of records written (a CTA takes slot = old
 * count; slots >= profile.max_records are dropped but still counted), a u32 pad, then
 * max_records records of this layout, one per task run: */
typedef struct EtcProfileRecord {
  unsigned long long start_ns;      /* %globaltimer before the task */
  unsigned long long end_ns;        /* %globaltimer after it (every thread done) */
  unsigned int wait_ns;             /* time the task spent spinning in waits */
  unsigned int sm;                  /* %smid */
  unsigned int cta;                 /* blockIdx.x */
  int task;                         /* index into the descriptor's "tasks" */
  int coords[ETC_MAX_RANK];         /* the task's coordinates (unused entries 0) */
  unsigned int ops_begin_ns;        /* from start_ns to the task's first op (its waits done) */
  unsigned int ops_ns;              /* from there to its first notify (or its end): its ops */
} EtcProfileRecord;                 /* 56 bytes */
#define ETC_PROFILE_RECORD_WORDS 14

#endif /* ETC_ABI_H */
