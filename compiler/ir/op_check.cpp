#include "compiler/ir/op_check.h"

#include <fmt/format.h>

#include "compiler/ir/printer.h"

namespace etc::ir {

std::string shapeToString(const std::vector<Expr>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += toString(shape[i]);
  }
  return out + "]";
}

std::string typeToString(const OperandType& t) { return std::string(dtypeName(t.dtype)) + shapeToString(t.shape); }

OperandType sliceType(const Module& m, const Slice& s) {
  const Tensor& t = m.tensors[s.target];
  OperandType out{t.dtype, {}};
  size_t k = 0;
  for (; k < s.dims.size() && k < t.shape.size(); ++k)
    if (s.dims[k].is_range) out.shape.push_back(sub(s.dims[k].hi, s.dims[k].lo));
  for (; k < t.shape.size(); ++k) out.shape.push_back(t.shape[k]);
  return out;
}

namespace {

class CallContext final : public OpContext {
 public:
  CallContext(const OpCall& call, const OpInfo& info, const std::vector<OpResultSlot>& slots,
              std::vector<OperandType> inputs, const Prover& prover, DiagnosticEngine& diags)
      : call_(call), info_(info), slots_(slots), prover_(prover), diags_(diags), inputs_(std::move(inputs)) {
    for (const OpResultSlot& slot : slots) declared_.push_back(slot.declared);
  }

  const std::vector<OperandType>& inputs() const override { return inputs_; }
  const std::vector<const OperandType*>& declaredOutputs() const override { return declared_; }
  int numOutputs() const override { return static_cast<int>(slots_.size()); }

  bool attrBool(std::string_view name) const override { return value(name).b; }
  int64_t attrInt(std::string_view name) const override {
    const AttrValue& v = value(name);
    if (!v.i) return 0;
    EvalResult r = evaluate(inlineConsts(v.i), {});
    return r.ok() ? r.value : 0;
  }
  Expr attrIntExpr(std::string_view name) const override {
    const AttrValue& v = value(name);
    return v.i ? v.i : intConst(0);
  }
  double attrFloat(std::string_view name) const override { return value(name).f; }
  DType attrDType(std::string_view name) const override { return value(name).dtype; }
  std::string attrString(std::string_view name) const override { return value(name).text; }
  bool attrWritten(std::string_view name) const override { return call_.findAttr(name) != nullptr; }

  bool sameExtent(const Expr& a, const Expr& b) const override { return !prover_.equalValues(a, b).refuted(); }

  void error(int operand, std::string message) override {
    SourceLoc at = call_.range.begin;
    if (operand >= 0 && operand < static_cast<int>(call_.args.size())) {
      at = call_.args[operand].range.begin;
    } else if (operand < 0 && -1 - operand < static_cast<int>(slots_.size())) {
      at = slots_[-1 - operand].range.begin;
    }
    // Messages are prefixed with the op's name, unless they already begin with it
    // ("fill needs a declared destination").
    bool named = message.size() > call_.op.size() && message.compare(0, call_.op.size(), call_.op) == 0 &&
                 message[call_.op.size()] == ' ';
    diags_.error(at, named ? std::move(message) : fmt::format("{}: {}", call_.op, message));
    failed_ = true;
  }

  void attrError(std::string_view name, std::string message) override {
    const Attr* a = call_.findAttr(name);
    diags_.error(a ? a->range.begin : call_.range.begin, fmt::format("{}: attribute '{}': {}", call_.op, name, message));
    failed_ = true;
  }

  bool failed() const { return failed_; }

 private:
  const AttrValue& value(std::string_view name) const {
    if (const Attr* a = call_.findAttr(name)) return a->value;
    for (const AttrSpec& spec : info_.attrs)
      if (spec.name == name) return spec.default_value;
    static const AttrValue none;
    return none;
  }

  const OpCall& call_;
  const OpInfo& info_;
  const std::vector<OpResultSlot>& slots_;
  const Prover& prover_;
  DiagnosticEngine& diags_;
  std::vector<OperandType> inputs_;
  std::vector<const OperandType*> declared_;
  bool failed_ = false;
};

}  // namespace

namespace {

std::string slotName(const Module& m, const OpResultSlot& slot) {
  return slot.name.empty() && slot.slice ? printSlice(m, *slot.slice, false) : slot.name;
}

size_t mix(size_t h, size_t v) { return (h ^ v) * 0x100000001b3ull + (h >> 29); }

size_t typeHash(size_t h, const OperandType& t) {
  h = mix(h, static_cast<size_t>(t.dtype) + 1);
  for (const Expr& d : t.shape) h = mix(h, d->hash);
  return mix(h, t.shape.size());
}

bool sameType(const OperandType& a, const OperandType& b) {
  if (a.dtype != b.dtype || a.shape.size() != b.shape.size()) return false;
  for (size_t k = 0; k < a.shape.size(); ++k)
    if (!equal(a.shape[k], b.shape[k])) return false;
  return true;
}

bool sameAttr(const Attr& a, const Attr& b) {
  const AttrValue &x = a.value, &y = b.value;
  return a.name == b.name && x.type == y.type && x.b == y.b && equal(x.i, y.i) && x.f == y.f && x.text == y.text &&
         x.dtype == y.dtype;
}

bool sameDims(const std::vector<SliceDim>& a, const std::vector<SliceDim>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (a[k].is_range != b[k].is_range || !equal(a[k].lo, b[k].lo) || !equal(a[k].hi, b[k].hi)) return false;
  return true;
}

bool sameEntry(const OpCheckMemo::Entry& e, const Module& m, const OpCall& call,
               const std::vector<OpResultSlot>& slots, const Task* task) {
  if (e.op != call.op || e.attrs.size() != call.attrs.size() || e.args.size() != call.args.size() ||
      e.declared.size() != slots.size() || e.grid.size() != (task ? task->grid.size() : 0))
    return false;
  for (size_t k = 0; k < call.args.size(); ++k) {
    const Tensor& t = m.tensors[call.args[k].target];
    if (e.args[k].dtype != t.dtype || e.args[k].shape.size() != t.shape.size() ||
        !sameDims(e.args[k].dims, call.args[k].dims))
      return false;
    for (size_t d = 0; d < t.shape.size(); ++d)
      if (!equal(e.args[k].shape[d], t.shape[d])) return false;
  }
  for (size_t k = 0; k < slots.size(); ++k) {
    if (e.declared[k].has_value() != (slots[k].declared != nullptr)) return false;
    if (slots[k].declared && !sameType(*e.declared[k], *slots[k].declared)) return false;
  }
  for (size_t k = 0; k < call.attrs.size(); ++k)
    if (!sameAttr(e.attrs[k], call.attrs[k])) return false;
  for (size_t k = 0; k < e.grid.size(); ++k)
    if (!equal(e.grid[k], task->grid[k])) return false;
  return true;
}

}  // namespace

const OpCheckMemo::Entry* OpCheckMemo::recall(const Module& m, const OpCall& call,
                                              const std::vector<OpResultSlot>& slots, const Task* task,
                                              size_t* key) const {
  size_t h = std::hash<std::string_view>()(call.op);
  for (const Slice& s : call.args) {
    const Tensor& t = m.tensors[s.target];
    h = mix(h, static_cast<size_t>(t.dtype) + 1);
    for (const Expr& d : t.shape) h = mix(h, d->hash);
    for (const SliceDim& d : s.dims) h = mix(mix(h, d.lo->hash + d.is_range), d.hi ? d.hi->hash : 0);
  }
  for (const OpResultSlot& s : slots) h = s.declared ? typeHash(h, *s.declared) : mix(h, 1);
  for (const Attr& a : call.attrs) {
    h = mix(h, std::hash<std::string_view>()(a.name));
    h = mix(h, a.value.i ? a.value.i->hash : static_cast<size_t>(a.value.b));
  }
  if (task)
    for (const Expr& g : task->grid) h = mix(h, g->hash);
  *key = h;
  auto [lo, hi] = entries_.equal_range(h);
  for (auto it = lo; it != hi; ++it)
    if (sameEntry(it->second, m, call, slots, task)) return &it->second;
  return nullptr;
}

void OpCheckMemo::remember(size_t key, const Module& m, const OpCall& call, const std::vector<OpResultSlot>& slots,
                           const Task* task, std::vector<OperandType> results) {
  Entry e{call.op, call.attrs, {}, {}, task ? task->grid : std::vector<Expr>{}, std::move(results)};
  for (const Slice& s : call.args) {
    const Tensor& t = m.tensors[s.target];
    e.args.push_back(Operand{t.dtype, t.shape, s.dims});
  }
  for (const OpResultSlot& s : slots)
    e.declared.push_back(s.declared ? std::optional<OperandType>(*s.declared) : std::nullopt);
  entries_.emplace(key, std::move(e));
}

bool checkOpCall(const Module& m, const OpCall& call, const std::vector<OpResultSlot>& slots, const Prover& prover,
                 DiagnosticEngine& diags, std::vector<OperandType>* results, OpCheckMemo* memo) {
  const OpInfo* info = findOp(call.op);
  if (!info) return false;  // the front end reported the unknown op
  size_t key = 0;
  if (memo) {
    if (const OpCheckMemo::Entry* e = memo->recall(m, call, slots, prover.task(), &key)) {
      if (results) *results = e->results;
      return true;
    }
  }
  std::vector<OperandType> inputs;
  inputs.reserve(call.args.size());
  for (const Slice& s : call.args) inputs.push_back(sliceType(m, s));
  CallContext ctx(call, *info, slots, std::move(inputs), prover, diags);
  std::vector<OperandType> out;
  if (!info->infer(ctx, out) || ctx.failed()) return false;
  if (out.size() != slots.size()) {
    diags.error(call.range.begin, fmt::format("{}: internal error: the rule gave {} results for {} destinations",
                                              call.op, out.size(), slots.size()));
    return false;
  }
  bool ok = true;
  for (size_t k = 0; k < slots.size(); ++k) {
    const OperandType* d = slots[k].declared;
    if (!d) continue;
    const OperandType& r = out[k];
    SourceLoc at = slots[k].range.begin;
    if (!storableAs(r.dtype, d->dtype)) {
      diags.error(at, fmt::format("{}: result {} is {}, which cannot be stored in '{}' of dtype {}", call.op, k,
                                  dtypeName(r.dtype), slotName(m, slots[k]), dtypeName(d->dtype)));
      ok = false;
      continue;
    }
    if (r.shape.size() != d->shape.size()) {
      diags.error(at, fmt::format("{}: result {} has shape {} (rank {}), but '{}' has shape {} (rank {})", call.op, k,
                                  shapeToString(r.shape), r.shape.size(), slotName(m, slots[k]), shapeToString(d->shape),
                                  d->shape.size()));
      ok = false;
      continue;
    }
    for (size_t i = 0; i < r.shape.size(); ++i) {
      Fact f = prover.equalValues(r.shape[i], d->shape[i]);
      if (!f.refuted()) continue;
      std::string where = prover.describe(f.at, {r.shape[i], d->shape[i]});
      auto rv = prover.exactValueAt(r.shape[i], f.at), dv = prover.exactValueAt(d->shape[i], f.at);
      diags.error(at, fmt::format("{}: result {} has shape {}, but '{}' has shape {}: dimension {} differs{}", call.op,
                                  k, shapeToString(r.shape), slotName(m, slots[k]), shapeToString(d->shape), i,
                                  !rv || !dv       ? std::string()
                                  : where.empty() ? fmt::format(" ({} vs {})", *rv, *dv)
                                                  : fmt::format(" ({} vs {} at {})", *rv, *dv, where)));
      ok = false;
      break;
    }
  }
  if (ok && memo) memo->remember(key, m, call, slots, prover.task(), out);
  if (results) *results = std::move(out);
  return ok;
}

}  // namespace etc::ir
