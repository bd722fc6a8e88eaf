#include "compiler/passes/tiling.h"

#include <limits>

#include "compiler/ir/ops.h"

namespace etc::tiling {

using namespace ir;

Expr tileLo(const Expr& c, int64_t t) { return mul(c, intConst(t)); }
Expr tileHi(const Expr& c, int64_t t, const Expr& e) { return min(e, add(mul(c, intConst(t)), intConst(t))); }

int64_t upperBound(const Module& m, const Expr& e) { return bounds(e, m.symRanges()).hi; }
int64_t lowerBound(const Module& m, const Expr& e) { return bounds(e, m.symRanges()).lo; }

int64_t pow2Ceil(int64_t v) {
  int64_t p = 1;
  while (p < v && p < (int64_t{1} << 62)) p <<= 1;
  return p;
}
int64_t pow2Floor(int64_t v) {
  int64_t p = 1;
  while (p * 2 <= v && p < (int64_t{1} << 62)) p <<= 1;
  return p;
}

Slice makeSlice(const Module& m, uint32_t t, const std::vector<DimRange>& dims) {
  const Tensor& tensor = m.tensors[t];
  Slice s;
  s.target = t;
  bool whole = true;
  for (size_t k = 0; k < dims.size(); ++k) {
    const DimRange& r = dims[k];
    SliceDim d;
    d.lo = r.lo;
    if (r.point) {
      whole = false;
    } else {
      d.is_range = true;
      d.hi = r.hi;
      d.lo_written = !(asInt(r.lo) == 0);
      d.hi_written = !equal(r.hi, tensor.shape[k]);
      whole = whole && !d.lo_written && !d.hi_written;
    }
    s.dims.push_back(std::move(d));
  }
  s.has_subscript = !whole;
  if (whole) s.dims.clear();
  return s;
}

namespace {

const AttrValue* valueOf(const OpCall& c, std::string_view name) {
  if (const Attr* a = c.findAttr(name)) return &a->value;
  if (const OpInfo* op = findOp(c.op))
    for (const AttrSpec& spec : op->attrs)
      if (spec.name == name) return &spec.default_value;
  return nullptr;
}

}  // namespace

bool attrBool(const OpCall& c, std::string_view name) {
  const AttrValue* v = valueOf(c, name);
  return v && v->type == AttrType::Bool && v->b;
}

int64_t attrInt(const OpCall& c, std::string_view name) {
  const AttrValue* v = valueOf(c, name);
  if (!v || v->type != AttrType::Int || !v->i) return 0;
  return asInt(inlineConsts(v->i)).value_or(0);
}

double attrFloat(const OpCall& c, std::string_view name) {
  const AttrValue* v = valueOf(c, name);
  return v && v->type == AttrType::Float ? v->f : 0.0;
}

std::string attrString(const OpCall& c, std::string_view name) {
  const AttrValue* v = valueOf(c, name);
  return v && v->type == AttrType::String ? v->text : std::string();
}

Attr boolAttr(std::string name) {
  Attr a;
  a.name = std::move(name);
  a.value.type = AttrType::Bool;
  a.value.b = true;
  return a;
}

Attr intAttr(std::string name, int64_t v) {
  Attr a;
  a.name = std::move(name);
  a.value.type = AttrType::Int;
  a.value.i = intConst(v);
  return a;
}

namespace {
template <class Taken>
std::string fresh(const std::string& base, Taken taken) {
  if (!taken(base)) return base;
  for (int k = 2;; ++k) {
    std::string name = base + "_" + std::to_string(k);
    if (!taken(name)) return name;
  }
}
}  // namespace

void declareBeforeTasks(Module& m) {
  const Module::DeclRef last = m.order.back();
  m.order.pop_back();
  auto pos = m.order.begin();
  for (auto it = m.order.begin(); it != m.order.end(); ++it)
    if (it->kind != Module::DeclKind::Task && it->kind != Module::DeclKind::Graph) pos = it + 1;
  m.order.insert(pos, last);
}

std::string freshValueName(const Module& m, const std::string& base) {
  return fresh(base, [&](const std::string& n) { return m.findValue(n).has_value(); });
}
std::string freshTaskName(const Module& m, const std::string& base) {
  return fresh(base, [&](const std::string& n) { return m.findTask(n).has_value(); });
}

}  // namespace etc::tiling
