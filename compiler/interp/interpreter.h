// The CPU reference interpreter: runs one graph of a task-level module on host tensors, in a
// deterministic order, checking every wait and notify. It is the semantics that the GPU
// megakernel is checked against (`etc-run --check`) and what CI proves without a GPU.
//
// Order. The graph's task grids run in the order of their `run` statements, each grid's
// tiles in row-major coordinate order, each tile's statements in order. A `wait` whose slice
// still has an element with a count > 0 suspends the tile (it keeps its place in its body);
// whenever a tile makes progress, the suspended tiles are retried, lowest grid index first,
// then lowest coordinates. Before a grid starts, every suspended tile that can run has run.
// A grid whose extent reads data (`load(n[0]) <= bound`) starts after all the other grids, in
// run order, so that it reads what its producers wrote whatever the order of the `run`s; a
// data-dependent event count is evaluated when the event is first touched (its first wait or
// notify, or the final balance check).
//
// Other orders, for checking a program's events (run order hides an ordering they miss):
// Order::LatestFirst runs, of all the tiles that can make progress, the one of the latest grid
// (then the highest coordinates) first: a tile runs as soon as its waits let it, before the
// earlier grids that no event orders it after, so a reader that does not wait for its writer
// reads too early. Order::Random picks the tile at random (from `seed`) each time: a writer that
// does not wait for the reads of what it overwrites then overwrites it first in some orders
// (latest first runs the reader's own writer last, right before the reader, which hides that).
// With correct events every order gives the same bits.
//
// Checks (each a RunResult error that names the task, its coordinates and the element):
// every sym given and in its range; every input and param the graph reads present with its
// dtype and shape; slices inside their tensors; grid extents and event counts within their
// stated bounds; a notify of an element already at 0; a wait that can never return (nothing
// else can run); an element left above 0 at the end; data that ops index with (embedding ids,
// kv_append and attention positions, moe ids) in range.
//
// Arithmetic. Float ops accumulate in double (a refinement of the "f32 accumulation" of
// docs/ops.md: the reference is at least as exact as the device) and round to the
// destination's dtype on store, round to nearest even; integer ops wrap modulo 2^bits.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/ir.h"

namespace etc::interp {

// A dense row-major tensor in host memory, little-endian elements.
struct HostTensor {
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  int64_t numel() const;
};

using TensorMap = std::map<std::string, HostTensor>;

enum class Order { RunOrder, LatestFirst, Random };

struct RunResult {
  bool ok = false;
  std::string error;  // one sentence when !ok
};

// Runs graph `graph` (its name without '@') of a task-level module: every statement of the
// graph must be a `run` (op-level statements must be lowered first; they are an error).
//
// On entry `tensors` holds every `input` and `param` the graph references (checked: present,
// dtype, shape under `syms`). An `output` that is present on entry (with the right dtype and
// shape) is updated in place, as a KV cache is; an absent one is created zero-filled. Every
// `temp` the graph references is (re)created zero-filled. On success `tensors` also holds
// every output and temp the graph references; on failure its contents are unspecified.
RunResult run(const ir::Module& m, std::string_view graph, const std::map<std::string, int64_t>& syms,
              TensorMap& tensors, Order order = Order::RunOrder, uint64_t seed = 0);

// ---- dtype conversion (round to nearest even; NaN stays NaN, overflow becomes inf) ----------
uint16_t doubleToBf16(double x);
uint16_t doubleToF16(double x);
float doubleToF32(double x);
double bf16ToDouble(uint16_t bits);
double f16ToDouble(uint16_t bits);

// ---- host tensors from and to values ----------------------------------------------------------
// From doubles: floats are rounded to `dtype`; integers are truncated toward zero and wrap.
HostTensor makeTensor(ir::DType dtype, std::vector<int64_t> shape, const std::vector<double>& values);
HostTensor makeIntTensor(ir::DType dtype, std::vector<int64_t> shape, const std::vector<int64_t>& values);
HostTensor zeros(ir::DType dtype, std::vector<int64_t> shape);
// A float tensor of values uniform in [lo, hi), drawn in row-major order from splitmix's
// sequence at `state` (lo + (hi - lo) * (splitmix(state) >> 11) * 2^-53), each rounded to dtype.
HostTensor uniformTensor(ir::DType dtype, std::vector<int64_t> shape, uint64_t state, double lo, double hi);
// Every element as a double (integers converted exactly up to 2^53) / as an int64 (floats
// truncated toward zero).
std::vector<double> toDoubles(const HostTensor& t);
std::vector<int64_t> toInts(const HostTensor& t);

}  // namespace etc::interp
