#include "compiler/passes/access_pattern.h"

namespace etc {

namespace {

using namespace ir;

struct Affine {
  uint32_t coord;
  int64_t coef;
  Expr offset;  // free of coordinates
};

// e = coef * coord + offset with exactly one coordinate, a constant coefficient.
std::optional<Affine> matchAffine(const Expr& e) {
  if (hasLoad(e)) return std::nullopt;
  auto term = [](const Expr& t) -> std::optional<std::pair<uint32_t, int64_t>> {
    if (t->kind == ExprKind::Coord) return std::make_pair(t->id, int64_t{1});
    if (t->kind == ExprKind::Mul && t->ops.size() == 2 && t->ops[0]->kind == ExprKind::Coord)
      if (auto c = asInt(inlineConsts(t->ops[1]))) return std::make_pair(t->ops[0]->id, *c);
    return std::nullopt;
  };
  if (auto t = term(e)) return Affine{t->first, t->second, intConst(0)};
  if (e->kind != ExprKind::Add) return std::nullopt;
  std::optional<Affine> found;
  for (const Expr& op : e->ops) {
    if (!hasCoord(op)) continue;
    auto t = term(op);
    if (!t || found) return std::nullopt;
    found = Affine{t->first, t->second, sub(e, op)};
  }
  return found;
}

// The unclamped end of a tile: `hi` itself, or the one operand of `min(...)` with the coordinate.
std::optional<Affine> matchEnd(const Expr& hi) {
  if (hi->kind == ExprKind::Min) {
    std::optional<Affine> found;
    for (const Expr& op : hi->ops) {
      if (!hasCoord(op)) continue;
      if (found) return std::nullopt;
      found = matchAffine(op);
      if (!found) return std::nullopt;
    }
    return found;
  }
  return matchAffine(hi);
}

}  // namespace

std::optional<std::vector<DimAccess>> matchAccess(const Module& m, const Slice& s) {
  const Tensor& t = m.tensors[s.target];
  std::vector<DimAccess> out;
  for (size_t k = 0; k < t.shape.size(); ++k) {
    DimAccess a;
    if (k >= s.dims.size()) {
      a.lo = intConst(0);
      a.hi = t.shape[k];
      out.push_back(a);
      continue;
    }
    const SliceDim& d = s.dims[k];
    Expr hi = d.is_range ? d.hi : add(d.lo, intConst(1));
    if (hasLoad(d.lo) || hasLoad(hi)) return std::nullopt;
    if (!hasCoord(d.lo) && !hasCoord(hi)) {
      a.lo = d.lo;
      a.hi = hi;
      out.push_back(a);
      continue;
    }
    auto lo = matchAffine(d.lo);
    if (!lo || lo->coef <= 0) return std::nullopt;
    if (d.is_range) {
      auto end = matchEnd(d.hi);
      if (!end || end->coord != lo->coord || end->coef != lo->coef) return std::nullopt;
      // A partition: consecutive tasks' tiles abut (length == stride).
      if (asInt(inlineConsts(sub(end->offset, lo->offset))) != lo->coef) return std::nullopt;
    } else if (lo->coef != 1) {
      return std::nullopt;
    }
    a.tiled = true;
    a.coord = lo->coord;
    a.tile = lo->coef;
    a.offset = lo->offset;
    out.push_back(a);
  }
  return out;
}

std::vector<SliceAccess> taskAccesses(const Task& t) {
  std::vector<SliceAccess> out;
  for (const Expr& extent : t.grid)
    forEachLeaf(extent, [&](const ExprNode& n) {
      if (n.kind != ExprKind::Load) return;
      auto s = std::make_shared<Slice>();
      s->target = n.id;
      s->has_subscript = true;
      s->range = t.range;
      for (const Expr& index : n.ops) {
        SliceDim d;
        d.lo = index;
        s->dims.push_back(std::move(d));
      }
      out.push_back({s.get(), false, std::move(s)});
    });
  for (const TaskStmt& st : t.body)
    if (const auto* c = std::get_if<CallStmt>(&st)) {
      for (const Slice& s : c->call.args) out.push_back({&s, false, nullptr});
      for (const Slice& s : c->dests) out.push_back({&s, true, nullptr});
    }
  return out;
}

std::set<uint32_t> touchedTensors(const Task& t, bool writes) {
  std::set<uint32_t> out;
  for (const SliceAccess& a : taskAccesses(t))
    if (a.write == writes) out.insert(a.slice->target);
  return out;
}

}  // namespace etc
