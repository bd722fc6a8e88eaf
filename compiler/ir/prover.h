// Decides facts about symbolic expressions over every value the syms (and, inside a task,
// its coordinates) can take: first symbolically (simplify + interval bounds), then by looking
// for a counterexample at chosen sample points. A fact is Proved, Refuted (with the point
// that breaks it) or Unknown (neither; e.g. it depends on data read at run time).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/ir/ir.h"

namespace etc::ir {

struct SamplePoint {
  std::vector<int64_t> syms;    // indexed by sym id
  std::vector<int64_t> coords;  // indexed by coordinate id (empty outside a task)
};

struct Fact {
  enum Kind { Proved, Refuted, Unknown } kind = Unknown;
  SamplePoint at;  // Refuted: where it fails
  bool proved() const { return kind == Proved; }
  bool refuted() const { return kind == Refuted; }
};

class Prover {
 public:
  explicit Prover(const Module& m) : m_(m) {}
  // Facts over the values of sym `sym` in [lo, hi] only (a part of its range; the other syms
  // over theirs).
  Prover(const Module& m, uint32_t sym, int64_t lo, int64_t hi) : m_(m), restricted_(true), sym_(sym), lo_(lo), hi_(hi) {}
  // Coordinates in the expressions that follow belong to this task (nullptr: none).
  void setTask(const Task* t) { task_ = t; }
  const Task* task() const { return task_; }

  Fact nonNegative(const Expr& e) const;  // e >= 0
  Fact positive(const Expr& e) const;     // e >= 1
  Fact lessEqual(const Expr& a, const Expr& b) const { return nonNegative(sub(b, a)); }
  Fact lessThan(const Expr& a, const Expr& b) const { return positive(sub(b, a)); }
  Fact equalValues(const Expr& a, const Expr& b) const;

  // The value of e at a point (nullopt if it cannot be evaluated there, e.g. reads data).
  std::optional<int64_t> valueAt(const Expr& e, const SamplePoint& p) const;
  // The same for messages about a counterexample: where e as written overflows on the way
  // (`min(C * 4, N)` with a huge const C) the value is that of its range-simplified form, the
  // form the prover refutes, which is the exact value there (nullopt if that fails too).
  std::optional<int64_t> exactValueAt(const Expr& e, const SamplePoint& p) const;
  // "N = 1, i = 0": the syms and coordinates that occur in `exprs`, at p.
  std::string describe(const SamplePoint& p, const std::vector<Expr>& exprs) const;

  RangeEnv rangeEnv() const;  // sym ranges, and coordinate ranges from the task's grid

 private:
  // Facts are memoised: models repeat the same slices layer after layer, and the same
  // expression over the same grid has the same answer.
  enum class Query : uint8_t { NonNegative, Positive, Equal };
  struct MemoEntry {
    Query q;
    Expr a, b;
    std::vector<Expr> grid;  // the grid the coordinates ranged over (tasks come and go)
    Fact fact;
  };
  const Fact* recall(Query q, const Expr& a, const Expr& b, size_t* key) const;
  Fact remember(Query q, const Expr& a, const Expr& b, size_t key, Fact f) const;
  Fact decideNonNegative(const Expr& e, int64_t min_ok) const;

  Fact search(const Expr& e, int64_t min_ok) const;
  std::vector<std::vector<int64_t>> symSamples(const Expr& e) const;
  Bindings bindingsAt(const SamplePoint& p) const;

  RangeEnv symRanges() const;
  std::pair<int64_t, int64_t> symRange(uint32_t id) const;

  const Module& m_;
  bool restricted_ = false;
  uint32_t sym_ = 0;
  int64_t lo_ = 0, hi_ = 0;
  const Task* task_ = nullptr;
  mutable std::unordered_multimap<size_t, MemoEntry> memo_;
};

}  // namespace etc::ir
