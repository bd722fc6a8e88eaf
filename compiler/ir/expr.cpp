// Expression nodes: leaf factories, the structural hash, the canonical order, equality,
// queries and rewriting. The arithmetic factories are in expr_arith.cpp.
#include <cstring>

#include "compiler/ir/expr.h"
#include "compiler/ir/expr_internal.h"

namespace etc::ir {

using namespace expr_detail;

namespace {

uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

// Order-sensitive, so that a - b and b - a (different operand orders) hash apart.
uint64_t hashCombine(uint64_t h, uint64_t v) {
  h = (h << 5 | h >> 59) ^ v;
  return h * 0x9e3779b97f4a7c15ULL;
}

// Position of each kind in the canonical order. Int sorts last so that the constant ends
// every sum, product and min/max operand list, as it is written (`i * 1024 + 1024`).
int rank(ExprKind k) {
  switch (k) {
    case ExprKind::Sym: return 0;
    case ExprKind::Const: return 1;
    case ExprKind::Coord: return 2;
    case ExprKind::Load: return 3;
    case ExprKind::Bounded: return 4;
    case ExprKind::Add: return 5;
    case ExprKind::Mul: return 6;
    case ExprKind::Div: return 7;
    case ExprKind::Mod: return 8;
    case ExprKind::CDiv: return 9;
    case ExprKind::Min: return 10;
    case ExprKind::Max: return 11;
    case ExprKind::Int: return 12;
  }
  return 13;
}

template <class T>
int cmp3(T a, T b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

int compareOps(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (int c = compareNodes(*a[i], *b[i])) return c;
  }
  return cmp3(a.size(), b.size());
}

Expr makeLeaf(ExprKind kind, uint32_t id, std::string name, int64_t value) {
  auto n = std::make_shared<ExprNode>();
  n->kind = kind;
  n->id = id;
  n->name = std::move(name);
  n->value = value;
  n->hash = hashNode(*n);
  return n;
}

Expr makeIntNode(int64_t v) { return makeLeaf(ExprKind::Int, 0, {}, v); }

// Literals that index and size expressions use all the time, shared instead of allocated.
constexpr int64_t kCacheLo = -128;
constexpr int64_t kCacheHi = 1024;

const std::vector<Expr>& smallInts() {
  static const std::vector<Expr> cache = [] {
    std::vector<Expr> v;
    v.reserve(kCacheHi - kCacheLo + 1);
    for (int64_t i = kCacheLo; i <= kCacheHi; ++i) v.push_back(makeIntNode(i));
    return v;
  }();
  return cache;
}

bool anyNode(const ExprNode& n, bool (*pred)(const ExprNode&)) {
  if (pred(n)) return true;
  for (const Expr& op : n.ops) {
    if (anyNode(*op, pred)) return true;
  }
  return false;
}

}  // namespace

// ---- detail: nodes ---------------------------------------------------------------------------

namespace expr_detail {

size_t hashNode(const ExprNode& n) {
  uint64_t h = (static_cast<uint64_t>(n.kind) + 1) * 0x9e3779b97f4a7c15ULL;
  switch (n.kind) {
    case ExprKind::Int: h = hashCombine(h, static_cast<uint64_t>(n.value)); break;
    case ExprKind::Const:
      h = hashCombine(h, n.id);
      h = hashCombine(h, static_cast<uint64_t>(n.value));
      break;
    case ExprKind::Sym:
    case ExprKind::Coord:
    case ExprKind::Load: h = hashCombine(h, n.id); break;
    default: break;
  }
  for (const Expr& op : n.ops) h = hashCombine(h, op->hash);
  return static_cast<size_t>(fmix64(h));
}

Expr makeNode(ExprKind kind, std::vector<Expr> ops) {
  auto n = std::make_shared<ExprNode>();
  n->kind = kind;
  n->ops = std::move(ops);
  n->hash = hashNode(*n);
  return n;
}

int compareNodes(const ExprNode& a, const ExprNode& b) {
  if (&a == &b) return 0;
  if (a.kind != b.kind) return cmp3(rank(a.kind), rank(b.kind));
  switch (a.kind) {
    case ExprKind::Int: return cmp3(a.value, b.value);
    case ExprKind::Const:
      if (a.id != b.id) return cmp3(a.id, b.id);
      return cmp3(a.value, b.value);
    case ExprKind::Sym:
    case ExprKind::Coord: return cmp3(a.id, b.id);
    case ExprKind::Load:
      if (a.id != b.id) return cmp3(a.id, b.id);
      return compareOps(a.ops, b.ops);
    default: return compareOps(a.ops, b.ops);
  }
}

bool equalNodes(const ExprNode& a, const ExprNode& b) {
  if (&a == &b) return true;
  if (a.hash != b.hash || a.kind != b.kind || a.ops.size() != b.ops.size()) return false;
  switch (a.kind) {
    case ExprKind::Int: return a.value == b.value;
    case ExprKind::Const: return a.id == b.id && a.value == b.value;
    case ExprKind::Sym:
    case ExprKind::Coord: return a.id == b.id;
    case ExprKind::Load:
      if (a.id != b.id) return false;
      break;
    default: break;
  }
  for (size_t i = 0; i < a.ops.size(); ++i) {
    if (!equalNodes(*a.ops[i], *b.ops[i])) return false;
  }
  return true;
}

Expr rebuild(const ExprNode& e, std::vector<Expr> ops) {
  switch (e.kind) {
    case ExprKind::Add: return sumOf(ops.data(), ops.size());
    case ExprKind::Mul: return productOf(ops.data(), ops.size());
    case ExprKind::Div: return floorDiv(std::move(ops[0]), std::move(ops[1]));
    case ExprKind::Mod: return mod(std::move(ops[0]), std::move(ops[1]));
    case ExprKind::CDiv: return cdiv(std::move(ops[0]), std::move(ops[1]));
    case ExprKind::Min:
    case ExprKind::Max: return minMaxOf(e.kind, ops.data(), ops.size());
    case ExprKind::Bounded: return bounded(std::move(ops[0]), std::move(ops[1]));
    case ExprKind::Load: return load(e.id, e.name, std::move(ops));
    default: return nullptr;  // leaves have no operands to rebuild from
  }
}

}  // namespace expr_detail

// ---- leaf factories ------------------------------------------------------------------------

Expr intConst(int64_t v) {
  if (v >= kCacheLo && v <= kCacheHi) return smallInts()[static_cast<size_t>(v - kCacheLo)];
  return makeIntNode(v);
}

Expr symRef(uint32_t id, std::string name) {
  return makeLeaf(ExprKind::Sym, id, std::move(name), 0);
}

Expr constRef(uint32_t id, std::string name, int64_t value) {
  return makeLeaf(ExprKind::Const, id, std::move(name), value);
}

Expr coordRef(uint32_t id, std::string name) {
  return makeLeaf(ExprKind::Coord, id, std::move(name), 0);
}

Expr load(uint32_t tensor_id, std::string tensor_name, std::vector<Expr> indices) {
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::Load;
  n->id = tensor_id;
  n->name = std::move(tensor_name);
  n->ops = std::move(indices);
  n->hash = hashNode(*n);
  return n;
}

Expr bounded(Expr value, Expr bound) {
  // A literal that provably meets a literal bound needs no check; anything else keeps the
  // node so that evaluate can report a violation.
  if (value->kind == ExprKind::Int && bound->kind == ExprKind::Int && value->value <= bound->value) {
    return value;
  }
  std::vector<Expr> ops;
  ops.reserve(2);
  ops.push_back(std::move(value));
  ops.push_back(std::move(bound));
  return makeNode(ExprKind::Bounded, std::move(ops));
}

// ---- queries -------------------------------------------------------------------------------

bool equal(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return equalNodes(*a, *b);
}

int compare(const Expr& a, const Expr& b) { return compareNodes(*a, *b); }

std::optional<int64_t> asInt(const Expr& e) {
  if (e && e->kind == ExprKind::Int) return e->value;
  return std::nullopt;
}

bool isConstant(const Expr& e) {
  return !anyNode(*e, [](const ExprNode& n) {
    return n.kind == ExprKind::Sym || n.kind == ExprKind::Coord || n.kind == ExprKind::Load;
  });
}

bool hasLoad(const Expr& e) {
  return anyNode(*e, [](const ExprNode& n) { return n.kind == ExprKind::Load; });
}

bool hasCoord(const Expr& e) {
  return anyNode(*e, [](const ExprNode& n) { return n.kind == ExprKind::Coord; });
}

std::vector<DataIndicator> dataIndicators(const Expr& e) {
  std::vector<DataIndicator> out;
  const std::vector<Expr> factors = e->kind == ExprKind::Mul ? e->ops : std::vector<Expr>{e};
  for (size_t k = 0; k < factors.size(); ++k) {
    const Expr& f = factors[k];
    if (f->kind != ExprKind::Min || f->ops.size() != 2 || !hasLoad(f)) continue;
    for (size_t i = 0; i < 2; ++i) {
      const Expr &lit = f->ops[i], &mx = f->ops[1 - i];
      if (asInt(lit) != 1 || mx->kind != ExprKind::Max || mx->ops.size() != 2) continue;
      for (size_t j = 0; j < 2; ++j) {
        if (asInt(mx->ops[j]) != 0) continue;
        Expr rest = intConst(1);
        for (size_t n = 0; n < factors.size(); ++n)
          if (n != k) rest = mul(rest, factors[n]);
        out.push_back({mx->ops[1 - j], rest});
      }
    }
  }
  return out;
}

void forEachLeaf(const Expr& e, const std::function<void(const ExprNode&)>& fn) {
  if (isLeaf(e->kind)) fn(*e);
  for (const Expr& op : e->ops) forEachLeaf(op, fn);
}

// ---- rewriting -----------------------------------------------------------------------------

Expr substitute(const Expr& e, const std::function<Expr(const ExprNode& leaf)>& fn) {
  if (isLeaf(e->kind)) {
    if (Expr r = fn(*e)) return r;
  }
  if (e->ops.empty()) return e;
  std::vector<Expr> ops;
  bool changed = false;
  ops.reserve(e->ops.size());
  for (const Expr& op : e->ops) {
    ops.push_back(substitute(op, fn));
    changed |= ops.back() != op;
  }
  // Unchanged subtrees are shared, not rebuilt: most substitutions touch a few leaves.
  if (!changed) return e;
  return rebuild(*e, std::move(ops));
}

Expr inlineConsts(const Expr& e) {
  return substitute(e, [](const ExprNode& leaf) -> Expr {
    return leaf.kind == ExprKind::Const ? intConst(leaf.value) : nullptr;
  });
}

}  // namespace etc::ir
