/* The etc runtime: a small C API with a stable ABI (opaque handles, status codes, plain C
 * types) that loads an etc fatbin, reads its descriptor, sets syms, binds device pointers by
 * tensor name, owns the workspace and launches graphs. See docs/runtime.md.
 *
 * libcuda is opened at run time: everything up to etc_module_load_device (descriptor, syms,
 * shapes) works on a machine without a GPU or driver.
 *
 * Errors: every function that can fail returns an etc_status; on failure the message of the
 * calling thread's last error is etc_last_error_message(). Strings returned by the module stay
 * valid until etc_module_destroy. A module is not thread-safe, and at most one launch of it may
 * be in flight at a time (launches share the module's workspace: event counters, error record,
 * temps); launches on one stream are naturally ordered. */
#ifndef ETC_RUNTIME_H
#define ETC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "etc/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ETC_RUNTIME_ABI_VERSION 2  /* the descriptor "abi" this runtime accepts (= ETC_ABI_VERSION) */

typedef enum etc_status {
  ETC_STATUS_OK = 0,
  ETC_STATUS_INVALID_ARGUMENT = 1, /* null pointer, index out of range, unknown mode */
  ETC_STATUS_IO = 2,               /* a file could not be read */
  ETC_STATUS_BAD_FATBIN = 3,       /* truncated or foreign fatbin, no ELF image, no descriptor */
  ETC_STATUS_BAD_DESCRIPTOR = 4,   /* descriptor JSON malformed, wrong format or abi */
  ETC_STATUS_NO_DRIVER = 5,        /* libcuda.so.1 not found or unusable */
  ETC_STATUS_NO_DEVICE = 6,        /* no CUDA device (or the ordinal does not exist) */
  ETC_STATUS_NO_CODE_FOR_DEVICE = 7, /* the fatbin has no cubin/PTX this GPU can run */
  ETC_STATUS_NOT_FOUND = 8,        /* no sym / tensor / graph of that name */
  ETC_STATUS_BAD_SYM = 9,          /* sym value out of its range, or a needed sym not set */
  ETC_STATUS_BAD_SHAPE = 10,       /* shape arithmetic overflow / zero divisor */
  ETC_STATUS_BAD_BINDING = 11,     /* wrong dtype or shape, temp bound, tensor not bound */
  ETC_STATUS_NOT_LOADED = 12,      /* a device call before etc_module_load_device */
  ETC_STATUS_CUDA = 13,            /* a CUDA driver call failed (the message names it) */
  ETC_STATUS_KERNEL = 14,          /* the kernel wrote an error record (watchdog, debug check) */
  ETC_STATUS_INTERNAL = 15
} etc_status;

typedef enum etc_dtype {
  ETC_DTYPE_F32 = 0, ETC_DTYPE_F16 = 1, ETC_DTYPE_BF16 = 2,
  ETC_DTYPE_I32 = 3, ETC_DTYPE_I64 = 4, ETC_DTYPE_U8 = 5
} etc_dtype;

typedef enum etc_role {
  ETC_ROLE_INPUT = 0, ETC_ROLE_OUTPUT = 1, ETC_ROLE_PARAM = 2, ETC_ROLE_TEMP = 3
} etc_role;

typedef enum etc_mode {
  ETC_MODE_MEGA = 0,          /* one cooperative launch of the persistent megakernel */
  ETC_MODE_UNFUSED = 1,       /* one plain launch per task grid, in order, on the stream */
  ETC_MODE_UNFUSED_GRAPH = 2  /* the unfused launches captured once per sym set, replayed */
} etc_mode;

#define ETC_MAX_SHAPE_RANK 4

typedef struct etc_module_t* etc_module;
typedef uint64_t etc_devptr;      /* a CUdeviceptr */
typedef void* etc_stream;         /* a CUstream (NULL = the legacy default stream) */

typedef struct etc_sym_info {
  const char* name;
  int64_t lo, hi;                 /* inclusive range */
} etc_sym_info;

typedef struct etc_tensor_info {
  const char* name;
  etc_dtype dtype;
  etc_role role;
  int rank;
  const char* shape_text[ETC_MAX_SHAPE_RANK]; /* each extent as written, e.g. "B", "2048" */
} etc_tensor_info;

typedef struct etc_event_info {
  const char* name;
  int rank;
  const char* shape_text[ETC_MAX_SHAPE_RANK]; /* rendered from the descriptor expression */
  int64_t offset;                 /* first counter word */
  int64_t max_elements;           /* words reserved (element count at the syms' upper bounds) */
} etc_event_info;

typedef struct etc_launch_options {
  etc_mode mode;
  int64_t watchdog_ns;            /* spin budget of one wait; <= 0 = ETC_DEFAULT_WATCHDOG_NS */
  unsigned flags;                 /* ETC_FLAG_* of abi.h (ETC_FLAG_DEBUG = 1) */
} etc_launch_options;

#define ETC_DEFAULT_WATCHDOG_NS 1000000000LL /* 1 s: a wait in a kernel that runs for microseconds */

/* ---- errors ----------------------------------------------------------------------------- */
const char* etc_last_error_message(void);  /* "" when the last call succeeded */
const char* etc_status_name(etc_status s); /* "ETC_STATUS_BAD_SYM", ... */

/* ---- opening a module (no GPU needed) ----------------------------------------------------- */
etc_status etc_module_open_file(const char* path, etc_module* out);
etc_status etc_module_open_memory(const void* data, size_t size, etc_module* out); /* copies */
void etc_module_destroy(etc_module m); /* NULL is fine; frees the workspace, unloads */

const char* etc_module_name(etc_module m);
const char* etc_module_descriptor_json(etc_module m, size_t* size); /* the raw descriptor */
const char* etc_module_ir(etc_module m);                           /* canonical IR text */
size_t etc_module_num_archs(etc_module m);          /* descriptor "archs" */
const char* etc_module_arch(etc_module m, size_t i);
const char* etc_module_fatbin_targets(etc_module m); /* what the fatbin holds: "sm_90a, sm_80, compute_90" */

size_t etc_module_num_syms(etc_module m);
etc_status etc_module_sym_info(etc_module m, size_t i, etc_sym_info* out);
size_t etc_module_num_tensors(etc_module m);
etc_status etc_module_tensor_info(etc_module m, size_t i, etc_tensor_info* out);
etc_status etc_module_find_tensor(etc_module m, const char* name, size_t* index);
size_t etc_module_num_events(etc_module m);
etc_status etc_module_event_info(etc_module m, size_t i, etc_event_info* out);
int64_t etc_module_event_words(etc_module m);
size_t etc_module_num_graphs(etc_module m);
const char* etc_module_graph_name(etc_module m, size_t i);
/* The graph's kernels: first its megakernels (one, or one per range of a sym where etcc
   --specialize made them, in the ranges' order), then the unfused ones in launch order. */
size_t etc_module_graph_num_kernels(etc_module m, size_t graph);
size_t etc_module_graph_num_megakernels(etc_module m, size_t graph);
/* 1 where the graph has its unfused kernels (ETC_MODE_UNFUSED and ETC_MODE_UNFUSED_GRAPH
   launch them), 0 where etcc --megakernel-only left them out (such a launch then fails with
   ETC_STATUS_INVALID_ARGUMENT) or the graph does not exist. */
int etc_module_graph_has_unfused(etc_module m, size_t graph);
etc_status etc_module_graph_kernel(etc_module m, size_t graph, size_t k, const char** name,
                                   int* threads, const char** task /* NULL for a megakernel */);
/* A megakernel's sym range: it runs where sym *sym is in [*lo, *hi]; *sym is NULL for a
   megakernel of every value and for the unfused kernels. */
etc_status etc_module_graph_kernel_range(etc_module m, size_t graph, size_t k, const char** sym,
                                         int64_t* lo, int64_t* hi);

/* ---- syms and shapes ---------------------------------------------------------------------- */
etc_status etc_module_set_sym(etc_module m, const char* name, int64_t value); /* range-checked */
etc_status etc_module_get_sym(etc_module m, const char* name, int64_t* value); /* BAD_SYM if unset */
/* The tensor's extents for the current syms; every sym it uses must be set. */
etc_status etc_module_tensor_shape(etc_module m, const char* name, int* rank,
                                   int64_t shape[ETC_MAX_SHAPE_RANK]);
/* Bytes of the workspace for the current syms (all syms set): error record, counters, temps. */
etc_status etc_module_workspace_bytes(etc_module m, uint64_t* bytes);

/* Binds a device pointer to an input, output or param. dtype, rank and shape are what the
 * caller's buffer holds; they must equal the tensor's dtype and its shape for the current
 * syms (checked here and again at every launch, since syms may change after binding). */
etc_status etc_module_bind(etc_module m, const char* name, etc_devptr ptr, etc_dtype dtype,
                           int rank, const int64_t* shape);
/* Forgets the binding of an input, output or param, so that the caller may free its memory
 * (e.g. before allocating a larger KV cache); a launch fails until the tensor is bound again. */
etc_status etc_module_unbind(etc_module m, const char* name);

/* ---- the device --------------------------------------------------------------------------- */
/* Opens libcuda, retains the primary context of `device`, checks that the fatbin has code for
 * it, loads it and looks up every kernel. All later device calls run in that context. */
etc_status etc_module_load_device(etc_module m, int device);
/* The device's name and compute capability, e.g. "NVIDIA H100 80GB HBM3", 9, 0. */
etc_status etc_module_device_info(etc_module m, const char** name, int* major, int* minor);

/* Zeroes the counters and error record on `stream`, then launches the graph (NULL = the
 * module's only graph) with options (NULL = mega, default watchdog, no flags). Asynchronous. */
etc_status etc_module_launch(etc_module m, const char* graph, etc_stream stream,
                             const etc_launch_options* options);
/* Synchronises `stream` and reads the error record of the last launch: ETC_STATUS_KERNEL with
 * a message naming the task, coordinates and event element when the kernel reported one. */
etc_status etc_module_check_error(etc_module m, etc_stream stream);
/* Times `iters` launches with device events after `warmup` launches (not timed); writes the
 * per-launch times in microseconds to times_us[0..iters). Checks the error record at the end. */
etc_status etc_module_benchmark(etc_module m, const char* graph, etc_stream stream,
                                const etc_launch_options* options, int warmup, int iters,
                                double* times_us);

/* ---- timelines (fatbins compiled with etcc --profile; docs/runtime.md, "Traces") ---------- */
typedef struct EtcProfileRecord etc_profile_record; /* etc/abi.h: start/end ns, wait ns, SM, CTA, task, coords */
/* Records one megakernel launch can hold (the tasks at the syms' upper bounds, capped); 0 when
 * the fatbin was compiled without --profile. Needs no GPU. */
int64_t etc_module_profile_capacity(etc_module m);
/* Synchronises `stream` and copies the records of the last launch (a megakernel; unfused
 * launches record nothing) into out[0 .. min(*written, capacity)); *written is how many the
 * kernel wrote, more than etc_module_profile_capacity when some were dropped. Records are in
 * the order CTAs finished their tasks. INVALID_ARGUMENT if the fatbin is not profiled. */
etc_status etc_module_read_profile(etc_module m, etc_stream stream, etc_profile_record* out, size_t capacity,
                                   size_t* written);

/* ---- device memory and streams in the module's context (for tools and tests) -------------- */
etc_status etc_module_mem_alloc(etc_module m, size_t bytes, etc_devptr* out);
etc_status etc_module_mem_free(etc_module m, etc_devptr ptr);
/* Free and total memory of the module's device (cuMemGetInfo), e.g. to see that use stays flat. */
etc_status etc_module_mem_info(etc_module m, size_t* free_bytes, size_t* total_bytes);
etc_status etc_module_memcpy_htod(etc_module m, etc_devptr dst, const void* src, size_t bytes);
etc_status etc_module_memcpy_dtoh(etc_module m, void* dst, etc_devptr src, size_t bytes);
etc_status etc_module_stream_create(etc_module m, etc_stream* out);
etc_status etc_module_stream_destroy(etc_module m, etc_stream s);

#ifdef __cplusplus
}
#endif

#endif /* ETC_RUNTIME_H */
