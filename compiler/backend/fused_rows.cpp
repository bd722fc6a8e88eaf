#include "compiler/backend/fused_rows.h"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "compiler/ir/op_check.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/prover.h"
#include "compiler/ir/ops.h"
#include "compiler/passes/tiling.h"

namespace etc::backend {

using namespace etc::ir;

namespace {

// The most split-K parts the fused qkv chain keeps in registers.
constexpr int64_t kMaxFusedParts = 8;

class Matcher {
 public:
  Matcher(const Module& m, const Task& t) : m_(m), t_(t), env_(m.gridRanges(t.grid)), prover_(m) {
    prover_.setTask(&t);
  }

  std::optional<FusedRows> match() {
    for (size_t i = 0; i < t_.body.size(); ++i) {
      const auto* c = std::get_if<CallStmt>(&t_.body[i]);
      if (!c) continue;
      if (!calls_.empty() && at_.back() + 1 != i) return std::nullopt;  // a wait or notify between calls
      base_.push_back(views_);
      views_ += static_cast<int>(c->call.args.size() + c->dests.size());
      calls_.push_back(c);
      at_.push_back(i);
    }
    // The norm folded into a matmul task (fold-norms): the chain, then the matmul.
    if (calls_.size() == 3 && op(2) == "matmul") {
      calls_.pop_back();
      at_.pop_back();
    }
    if (calls_.size() == 2) return reduceAddRmsnorm();
    // The chain folded into an attention task (fold-into-attention): the chain, then attention.
    if ((calls_.size() == 6 || calls_.size() == 8) && op(calls_.size() - 1) == "attention_decode") {
      calls_.pop_back();
      at_.pop_back();
    }
    if (calls_.size() == 5 || calls_.size() == 7) return qkvRopeAppend();
    return std::nullopt;
  }

 private:
  int arg(size_t k, size_t a) const { return base_[k] + static_cast<int>(a); }
  int dest(size_t k, size_t d) const { return base_[k] + static_cast<int>(calls_[k]->call.args.size() + d); }
  const std::string& op(size_t k) const { return calls_[k]->call.op; }
  DType dtype(const Slice& s) const { return m_.tensors[s.target].dtype; }

  // The chain's one call of an op (none if it has none or several).
  std::optional<size_t> only(std::string_view name) const {
    std::optional<size_t> found;
    for (size_t k = 0; k < calls_.size(); ++k)
      if (op(k) == name) {
        if (found) return std::nullopt;
        found = k;
      }
    return found;
  }

  // The constant last extent of a slice's tile (0 if it varies over the grid).
  int64_t width(const Slice& s) const {
    const OperandType o = sliceType(m_, s);
    if (o.shape.empty()) return 0;
    const Interval b = bounds(o.shape.back(), env_);
    return b.isPoint() && b.lo > 0 ? b.lo : 0;
  }

  // Whether two slices of one tensor name the same elements in every task of the grid: the
  // same first index and extent in every dimension (a point index has extent 1), and the same
  // rank.
  bool sameElements(const Slice& a, const Slice& b) const { return sameElements(prover_, a, b); }
  static bool sameElements(const Prover& prover, const Slice& a, const Slice& b) {
    if (a.target != b.target || a.dims.size() != b.dims.size()) return false;
    for (size_t d = 0; d < a.dims.size(); ++d) {
      const SliceDim &x = a.dims[d], &y = b.dims[d];
      const Expr ex = x.is_range ? sub(x.hi, x.lo) : intConst(1), ey = y.is_range ? sub(y.hi, y.lo) : intConst(1);
      // Not refuted at the prover's sample points is enough here: `i : min(B, i + 1)` against
      // `i` is not provable from interval bounds, and the temps of a chain are written and read
      // only by this task (internal), so a reader of other elements than its writer's would
      // read what no task wrote.
      if (prover.equalValues(x.lo, y.lo).refuted() || prover.equalValues(ex, ey).refuted()) return false;
    }
    return true;
  }

  // A temp that this task touches only by the call that writes it and the one that reads it,
  // and any other task only so too, reading the very slice it wrote (the split-KV and whole
  // attention grids that fold-into-attention gave the same chain): no task reads what another
  // wrote, so the fused chain need not store it.
  bool internal(uint32_t tensor) const {
    if (m_.tensors[tensor].role != Role::Temp) return false;
    auto refs = [&](const Task& u) {
      std::vector<std::pair<const Slice*, bool>> out;  // (slice, written), in order
      for (const TaskStmt& st : u.body)
        if (const auto* c = std::get_if<CallStmt>(&st)) {
          for (const Slice& s : c->call.args)
            if (s.target == tensor) out.emplace_back(&s, false);
          for (const Slice& s : c->dests)
            if (s.target == tensor) out.emplace_back(&s, true);
        }
      return out;
    };
    for (const Task& u : m_.tasks) {
      if (&u == &t_) continue;
      const auto r = refs(u);
      if (r.empty()) continue;
      if (r.size() != 2 || !r[0].second || r[1].second) return false;
      Prover in_u(m_);
      in_u.setTask(&u);
      if (!sameElements(in_u, *r[0].first, *r[1].first)) return false;
    }
    return refs(t_).size() == 2;
  }

  // The chain call that writes the elements that `s` reads, if one does.
  std::optional<size_t> producer(const Slice& s) const {
    for (size_t k = 0; k < calls_.size(); ++k)
      for (const Slice& d : calls_[k]->dests)
        if (sameElements(d, s)) return k;
    return std::nullopt;
  }

  // reduce_sum over axis 0 of f32 partials [P, N] or [P, 1, N] (P small), into a float temp.
  bool partsSum(size_t k) const {
    const CallStmt& c = *calls_[k];
    if (c.call.op != "reduce_sum" || c.call.args.size() != 1 || c.dests.size() != 1) return false;
    const OperandType x = sliceType(m_, c.call.args[0]);
    if (x.dtype != DType::F32 || (x.shape.size() != 2 && x.shape.size() != 3) || tiling::attrInt(c.call, "axis") != 0)
      return false;
    const Interval p = bounds(x.shape[0], env_);
    return p.lo >= 1 && p.hi <= kMaxFusedParts && isFloat(dtype(c.dests[0])) && width(c.call.args[0]) > 0;
  }

  std::optional<FusedRows> reduceAddRmsnorm() const {
    if (!partsSum(0) || op(1) != "add_rmsnorm") return std::nullopt;
    const CallStmt &r = *calls_[0], &n = *calls_[1];
    if (!sameElements(r.dests[0], n.call.args[0]) || !internal(r.dests[0].target)) return std::nullopt;
    int widest = 0;
    for (const Slice* s : {&n.call.args[0], &n.call.args[1], &n.call.args[2], &n.dests[0], &n.dests[1]}) {
      if (!isFloat(dtype(*s))) return std::nullopt;
      widest = std::max(widest, dtypeBytes(dtype(*s)));
    }
    const int64_t len = width(n.call.args[0]);
    const OperandType w = sliceType(m_, n.call.args[2]);
    if (len == 0 || width(r.call.args[0]) != len || w.shape.size() != 1 || width(n.call.args[2]) != len ||
        len % (16 / widest) != 0)
      return std::nullopt;
    FusedRows f;
    f.kind = FusedRows::Kind::ReduceAddRmsnorm;
    f.first = at_.front();
    f.count = calls_.size();
    f.operands = {arg(0, 0), dest(0, 0), arg(1, 1), arg(1, 2), dest(1, 0), dest(1, 1)};
    f.n = len;
    const OperandType y = sliceType(m_, n.dests[0]);
    if (y.shape.size() == 2) f.rows = std::max<int64_t>(1, bounds(y.shape[0], env_).hi);
    f.eps = tiling::attrFloat(n.call, "eps");
    return f;
  }

  std::optional<FusedRows> qkvRopeAppend() const {
    const std::optional<size_t> kv = only("kv_append"), rope = only("rope");
    if (!kv || !rope) return std::nullopt;
    const CallStmt &a = *calls_[*kv], &r = *calls_[*rope];
    if (a.call.args.size() != 3 || a.dests.size() != 2 || r.call.args.size() != 3 || r.dests.size() != 2)
      return std::nullopt;  // kv_append into page pools is not fused
    if (producer(a.call.args[0]) != rope || !sameElements(r.dests[1], a.call.args[0]) ||
        printSlice(r.call.args[2]) != printSlice(a.call.args[2]))
      return std::nullopt;
    const int64_t d = tiling::attrInt(r.call, "head_dim");
    // The reduce_sum (and the norm, when there is one) that give rope's q or k.
    struct Source {
      size_t sum;
      std::optional<size_t> norm;
    };
    std::vector<size_t> used{*kv, *rope};
    std::vector<uint32_t> temps{a.call.args[0].target};
    auto source = [&](const Slice& s) -> std::optional<Source> {
      std::optional<size_t> k = producer(s);
      if (!k) return std::nullopt;
      temps.push_back(s.target);
      used.push_back(*k);
      if (op(*k) != "rmsnorm") return partsSum(*k) ? std::optional<Source>(Source{*k, std::nullopt}) : std::nullopt;
      const CallStmt& n = *calls_[*k];
      if (n.call.args.size() != 2 || tiling::attrInt(n.call, "head_dim") != d || sliceType(m_, n.call.args[1]).shape.size() != 1 ||
          width(n.call.args[1]) != d || !isFloat(dtype(n.call.args[1])))
        return std::nullopt;
      std::optional<size_t> sum = producer(n.call.args[0]);
      if (!sum || !partsSum(*sum)) return std::nullopt;
      temps.push_back(n.call.args[0].target);
      used.push_back(*sum);
      return Source{*sum, *k};
    };
    const std::optional<Source> q = source(r.call.args[0]), k = source(r.call.args[1]);
    const std::optional<size_t> v = producer(a.call.args[1]);
    if (!q || !k || !v || !partsSum(*v) || q->norm.has_value() != k->norm.has_value()) return std::nullopt;
    temps.push_back(a.call.args[1].target);
    used.push_back(*v);
    std::sort(used.begin(), used.end());
    if (std::adjacent_find(used.begin(), used.end()) != used.end() || used.size() != calls_.size()) return std::nullopt;
    const DType temp = dtype(a.call.args[0]);
    for (uint32_t x : temps)
      if (!internal(x) || m_.tensors[x].dtype != temp) return std::nullopt;
    const int64_t nq = width(calls_[q->sum]->call.args[0]), nk = width(calls_[k->sum]->call.args[0]);
    if (!isFloat(temp) || !isFloat(dtype(r.dests[0])) || dtype(a.dests[0]) != dtype(a.dests[1]) ||
        !isFloat(dtype(a.dests[0])) || d <= 0 || d % 64 != 0 || nq == 0 || nk == 0 || nq % d != 0 || nk % d != 0 ||
        width(calls_[*v]->call.args[0]) != nk || width(r.dests[0]) != nq)
      return std::nullopt;
    FusedRows f;
    f.kind = FusedRows::Kind::QkvRopeAppend;
    f.first = at_.front();
    f.count = calls_.size();
    f.operands = {arg(q->sum, 0), arg(k->sum, 0), arg(*v, 0), q->norm ? arg(*q->norm, 1) : -1,
                  k->norm ? arg(*k->norm, 1) : -1, arg(*rope, 2), dest(*rope, 0), dest(*kv, 0), dest(*kv, 1)};
    if (q->norm) {
      const CallStmt &qn = *calls_[*q->norm], &kn = *calls_[*k->norm];
      f.eps = tiling::attrFloat(qn.call, "eps");
      if (tiling::attrFloat(kn.call, "eps") != f.eps || dtype(qn.call.args[1]) != dtype(kn.call.args[1])) return std::nullopt;
    }
    f.n = nq;
    f.nk = nk;
    f.head_dim = d;
    for (size_t s : {q->sum, k->sum, *v})
      f.parts = std::max(f.parts, bounds(sliceType(m_, calls_[s]->call.args[0]).shape[0], env_).hi);
    f.temp = temp;
    f.rope = &r;
    return f;
  }

  std::string printSlice(const Slice& s) const { return ir::printSlice(m_, s, false); }

  const Module& m_;
  const Task& t_;
  const RangeEnv env_;
  Prover prover_;
  std::vector<const CallStmt*> calls_;
  std::vector<size_t> at_;   // body index of each call
  std::vector<int> base_;    // index of each call's first view
  int views_ = 0;
};

}  // namespace

std::optional<FusedRows> matchFusedRows(const Module& m, const Task& t) { return Matcher(m, t).match(); }

}  // namespace etc::backend
