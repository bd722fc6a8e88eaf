#include "compiler/ir/op_check.h"

#include <fmt/format.h>

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
  CallContext(const Module& m, const OpCall& call, const OpInfo& info, const std::vector<OpResultSlot>& slots,
              const Prover& prover, DiagnosticEngine& diags)
      : m_(m), call_(call), info_(info), slots_(slots), prover_(prover), diags_(diags) {
    for (const Slice& s : call.args) inputs_.push_back(sliceType(m, s));
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

  const Module& m_;
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

bool checkOpCall(const Module& m, const OpCall& call, const std::vector<OpResultSlot>& slots, const Prover& prover,
                 DiagnosticEngine& diags, std::vector<OperandType>* results) {
  const OpInfo* info = findOp(call.op);
  if (!info) return false;  // the front end reported the unknown op
  CallContext ctx(m, call, *info, slots, prover, diags);
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
                                  dtypeName(r.dtype), slots[k].name, dtypeName(d->dtype)));
      ok = false;
      continue;
    }
    if (r.shape.size() != d->shape.size()) {
      diags.error(at, fmt::format("{}: result {} has shape {} (rank {}), but '{}' has shape {} (rank {})", call.op, k,
                                  shapeToString(r.shape), r.shape.size(), slots[k].name, shapeToString(d->shape),
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
                                  k, shapeToString(r.shape), slots[k].name, shapeToString(d->shape), i,
                                  !rv || !dv       ? std::string()
                                  : where.empty() ? fmt::format(" ({} vs {})", *rv, *dv)
                                                  : fmt::format(" ({} vs {} at {})", *rv, *dv, where)));
      ok = false;
      break;
    }
  }
  if (results) *results = std::move(out);
  return ok;
}

}  // namespace etc::ir
