#include "compiler/backend/derived_syms.h"

namespace etc::backend {

using namespace ir;

namespace {

bool divides(ExprKind k) { return k == ExprKind::Div || k == ExprKind::Mod || k == ExprKind::CDiv; }

// Whether e has a node worth a parameter slot: a division, a min or a max.
bool nonlinear(const Expr& e) {
  if (divides(e->kind) || e->kind == ExprKind::Min || e->kind == ExprKind::Max) return true;
  for (const Expr& op : e->ops)
    if (nonlinear(op)) return true;
  return false;
}

// Over the sym ranges, no divisor of e can be zero and no node can leave int64: the host's
// exact evaluation (which reports both) then cannot fail for any sym values the runtime binds.
bool safe(const Expr& e, const RangeEnv& env) {
  Interval whole = bounds(e, env);
  if (whole.lowerUnbounded() || whole.upperUnbounded()) return false;
  if (divides(e->kind)) {
    Interval d = bounds(e->ops[1], env);
    if (d.lo <= 0 && d.hi >= 0) return false;
  }
  for (const Expr& op : e->ops)
    if (!safe(op, env)) return false;
  return true;
}

}  // namespace

DerivedSyms::DerivedSyms(const Module& m) : env_(m.symRanges()) {}

std::optional<size_t> DerivedSyms::intern(const Expr& e0) {
  if (e0->ops.empty() || e0->kind == ExprKind::Load || e0->kind == ExprKind::Bounded) return std::nullopt;
  if (hasCoord(e0) || hasLoad(e0) || !nonlinear(e0)) return std::nullopt;
  Expr e = inlineConsts(e0);
  if (asInt(e)) return std::nullopt;  // named consts only: the CUDA compiler folds it
  auto [lo, hi] = by_hash_.equal_range(e->hash);
  for (auto it = lo; it != hi; ++it)
    if (equal(exprs_[it->second], e)) return it->second;
  if (!safe(e, env_)) return std::nullopt;
  exprs_.push_back(e);
  by_hash_.emplace(e->hash, exprs_.size() - 1);
  return exprs_.size() - 1;
}

}  // namespace etc::backend
