#include "compiler/frontend/builder.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <unordered_map>

#include "compiler/ir/op_check.h"
#include "compiler/ir/ops.h"
#include "compiler/support/suggest.h"

namespace etc {

namespace {

using ir::Expr;

// What an expression may refer to where it appears.
enum Allow : unsigned {
  kSyms = 1,
  kCoords = 2,
  kLoads = 4,
  kBound = 8,  // `value <= bound`
};

struct ExprScope {
  unsigned allow = 0;
  std::string_view what;  // "a const", "a tensor shape", ... (for messages)
  const std::vector<std::string>* coords = nullptr;
};

std::string_view kindName(ir::Module::DeclKind k) {
  switch (k) {
    case ir::Module::DeclKind::Sym: return "sym";
    case ir::Module::DeclKind::Const: return "const";
    case ir::Module::DeclKind::Tensor: return "tensor";
    case ir::Module::DeclKind::Event: return "event";
    case ir::Module::DeclKind::Task: return "task";
    case ir::Module::DeclKind::Graph: return "graph";
  }
  return "name";
}

// "a sym", "an event", ...
std::string aKind(ir::Module::DeclKind k) {
  std::string_view n = kindName(k);
  return fmt::format("{} {}", n.front() == 'e' ? "an" : "a", n);
}

// "a, b and c" (for "the roles are ...").
std::string joinNames(const std::vector<std::string_view>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += i + 1 == names.size() ? " and " : ", ";
    out += names[i];
  }
  return out;
}

// "; did you mean 'x'?" when a candidate is close to `name`, else "; the <what> are a, b and c".
std::string suggestOrList(std::string_view name, const std::vector<std::string_view>& candidates,
                          std::string_view what) {
  std::string s = didYouMean(name, candidates);
  if (!s.empty()) return s;
  return fmt::format("; the {} are {}", what, joinNames(candidates));
}

std::string_view attrTypeName(ir::AttrType t) {
  switch (t) {
    case ir::AttrType::Bool: return "a boolean (true or false)";
    case ir::AttrType::Int: return "an integer";
    case ir::AttrType::Float: return "a number";
    case ir::AttrType::String: return "a string";
    case ir::AttrType::DType: return "a dtype (f32, f16, bf16, i32, i64 or u8)";
  }
  return "a value";
}

class Builder {
 public:
  Builder(const SourceManager& sources, DiagnosticEngine& diags) : sources_(sources), diags_(diags) {}

  std::unique_ptr<ir::Module> build(const LoadedSource& src) {
    m_ = std::make_unique<ir::Module>();
    reserveTables(src);
    const ast::ModuleDecl* module_decl = nullptr;
    const ast::Decl* first_decl = nullptr;  // the first that is not the module declaration
    for (const ast::Decl* d : src.decls) {
      if (diags_.limitReached()) break;
      if (!first_decl && d->kind != ast::DeclKind::Module) first_decl = d;
      switch (d->kind) {
        case ast::DeclKind::Module: {
          auto* md = static_cast<const ast::ModuleDecl*>(d);
          if (module_decl) {
            diags_.error(d->range.begin, "a file declares one module; this is a second module declaration",
                         {{module_decl->range.begin, "the module was declared here"}});
          } else {
            // Declarations before it would read as outside the module (and a reader looks for
            // the name at the top). It still names the module, so nothing else cascades.
            if (first_decl)
              diags_.error(d->range.begin, "module must be the first declaration",
                           {{first_decl->range.begin, "the first declaration is here"}});
            module_decl = md;
            m_->name = std::string(md->name.name);
            m_->range = md->range;
          }
          break;
        }
        case ast::DeclKind::Include: break;  // expanded by the loader
        case ast::DeclKind::Sym: buildSym(*static_cast<const ast::SymDecl*>(d)); break;
        case ast::DeclKind::Const: buildConst(*static_cast<const ast::ConstDecl*>(d)); break;
        case ast::DeclKind::Tensor: buildTensor(*static_cast<const ast::TensorDecl*>(d)); break;
        case ast::DeclKind::Event: buildEvent(*static_cast<const ast::EventDecl*>(d)); break;
        case ast::DeclKind::Task: buildTask(*static_cast<const ast::TaskDecl*>(d)); break;
        case ast::DeclKind::Graph: buildGraph(*static_cast<const ast::GraphDecl*>(d)); break;
      }
    }
    if (!module_decl && !diags_.hasErrors())
      diags_.error(SourceLoc{src.main_file, 1, 1}, "missing module declaration: a file starts with `module @name`");
    return std::move(m_);
  }

 private:
  // ---- names --------------------------------------------------------------------------

  SourceRange rangeOf(ir::Module::DeclRef r) const {
    switch (r.kind) {
      case ir::Module::DeclKind::Sym: return m_->syms[r.index].range;
      case ir::Module::DeclKind::Const: return m_->consts[r.index].range;
      case ir::Module::DeclKind::Tensor: return m_->tensors[r.index].range;
      case ir::Module::DeclKind::Event: return m_->events[r.index].range;
      case ir::Module::DeclKind::Task: return m_->tasks[r.index].range;
      case ir::Module::DeclKind::Graph: return m_->graphs[r.index].range;
    }
    return {};
  }

  static SourceLoc tensorLoc(const ir::Tensor& t) { return t.name_range.valid() ? t.name_range.begin : t.range.begin; }

  // Where a declaration's name is written (notes point there).
  SourceLoc nameLoc(ir::Module::DeclRef r) const {
    SourceRange name;
    switch (r.kind) {
      case ir::Module::DeclKind::Sym: name = m_->syms[r.index].name_range; break;
      case ir::Module::DeclKind::Const: name = m_->consts[r.index].name_range; break;
      case ir::Module::DeclKind::Tensor: name = m_->tensors[r.index].name_range; break;
      case ir::Module::DeclKind::Event: name = m_->events[r.index].name_range; break;
      case ir::Module::DeclKind::Task: name = m_->tasks[r.index].name_range; break;
      case ir::Module::DeclKind::Graph: name = m_->graphs[r.index].name_range; break;
    }
    return name.valid() ? name.begin : rangeOf(r).begin;
  }

  // Reports a redefinition and returns false if `name` is taken in the value namespace.
  bool claimValueName(const ast::Ident& name) {
    if (auto prev = m_->findValue(name.name)) {
      diags_.error(name.range.begin, fmt::format("redefinition of '{}'", name.name),
                   {{nameLoc(*prev), fmt::format("'{}' was first defined here (as {})", name.name,
                                                 aKind(prev->kind))}});
      return false;
    }
    if (auto it = broken_.find(name.name); it != broken_.end()) {
      diags_.error(name.range.begin, fmt::format("redefinition of '{}'", name.name),
                   {{it->second.at, fmt::format("'{}' was first defined here (as {})", name.name,
                                                aKind(it->second.kind))}});
      return false;
    }
    return true;
  }

  // A declaration that claimed its name but had errors: its name stays defined, so that its
  // uses report nothing more (the declaration's errors were reported).
  void markBroken(const ast::Ident& name, ir::Module::DeclKind kind) {
    broken_.emplace(std::string(name.name), Broken{kind, name.range.begin});
  }
  bool isBroken(std::string_view name) const { return broken_.find(name) != broken_.end(); }

  // The source text of a range on one line, or "" (for messages that quote what was written).
  std::string writtenText(const SourceRange& r) const {
    if (!r.valid() || r.end.file != r.begin.file || r.end.line != r.begin.line || r.end.col < r.begin.col) return {};
    std::string_view line = sources_.lineText(r.begin);
    size_t b = r.begin.col - 1, n = r.end.col - r.begin.col + 1;
    if (b + n > line.size()) return {};
    return std::string(line.substr(b, n));
  }

  std::vector<std::string_view> valueNames(const std::vector<std::string>* coords) const {
    std::vector<std::string_view> names;
    for (const auto& s : m_->syms) names.push_back(s.name);
    for (const auto& c : m_->consts) names.push_back(c.name);
    for (const auto& t : m_->tensors) names.push_back(t.name);
    for (const auto& e : m_->events) names.push_back(e.name);
    for (const auto& [name, b] : broken_) names.push_back(name);
    if (coords)
      for (const auto& c : *coords) names.push_back(c);
    return names;
  }

  // ---- expressions --------------------------------------------------------------------

  Expr convert(const ast::Expr* e, const ExprScope& scope) {
    switch (e->kind) {
      case ast::ExprKind::Int: return ir::intConst(static_cast<const ast::IntExpr*>(e)->value);
      case ast::ExprKind::Name: return convertName(static_cast<const ast::NameExpr*>(e)->name, scope);
      case ast::ExprKind::Call: return convertCall(*static_cast<const ast::CallExpr*>(e), scope);
      case ast::ExprKind::Index: {
        std::string written = writtenText(e->range);
        diags_.error(e->range.begin, fmt::format("a subscript is only allowed as the argument of load(...) in an "
                                                 "expression{}",
                                                 written.empty() ? "" : fmt::format("; write load({})", written)));
        return nullptr;
      }
      case ast::ExprKind::Neg: {
        Expr a = convert(static_cast<const ast::NegExpr*>(e)->operand, scope);
        return a ? ir::neg(a) : nullptr;
      }
      case ast::ExprKind::Binary: return convertBinary(*static_cast<const ast::BinaryExpr*>(e), scope);
    }
    return nullptr;
  }

  Expr convertName(const ast::Ident& name, const ExprScope& scope) {
    if (scope.coords) {
      for (size_t k = 0; k < scope.coords->size(); ++k)
        if ((*scope.coords)[k] == name.name) return coordLeaf(static_cast<uint32_t>(k), name.name);
    }
    auto ref = m_->findValue(name.name);
    if (!ref) {
      if (isBroken(name.name)) return nullptr;  // its declaration's errors were reported
      diags_.error(name.range.begin,
                   fmt::format("undefined name '{}'{}", name.name, didYouMean(name.name, valueNames(scope.coords))));
      return nullptr;
    }
    SourceLoc at = name.range.begin;
    switch (ref->kind) {
      case ir::Module::DeclKind::Sym:
        if (!(scope.allow & kSyms)) {
          diags_.error(at, fmt::format("'{}' is a sym, but {} must be a compile-time constant", name.name, scope.what),
                       {{nameLoc(*ref), fmt::format("'{}' is declared here", name.name)}});
          return nullptr;
        }
        return symLeaf(ref->index);
      case ir::Module::DeclKind::Const: {
        return constLeaf(ref->index);
      }
      case ir::Module::DeclKind::Tensor:
        diags_.error(at, fmt::format("'{}' is a tensor, not an integer; read an element of an i32 tensor with "
                                     "load({}[...])",
                                     name.name, name.name));
        return nullptr;
      default:
        diags_.error(at, fmt::format("'{}' is {}, not an integer", name.name, aKind(ref->kind)));
        return nullptr;
    }
  }

  // Leaves are immutable, so one node per sym, const and coordinate serves every use: a module
  // names the same few syms and consts in thousands of expressions, and a fresh node (with its
  // name string) per use was a large share of the front end's allocations.
  Expr symLeaf(uint32_t id) {
    if (sym_leaves_.size() <= id) sym_leaves_.resize(id + 1);
    if (!sym_leaves_[id]) sym_leaves_[id] = ir::symRef(id, m_->syms[id].name);
    return sym_leaves_[id];
  }
  Expr constLeaf(uint32_t id) {
    if (const_leaves_.size() <= id) const_leaves_.resize(id + 1);
    if (!const_leaves_[id]) {
      const ir::Const& c = m_->consts[id];
      const_leaves_[id] = ir::constRef(id, c.name, c.value);
    }
    return const_leaves_[id];
  }
  // Coordinate k of the current scope; the cached node is reused while the name matches (tasks
  // mostly name their coordinates alike).
  Expr coordLeaf(uint32_t k, std::string_view name) {
    if (coord_leaves_.size() <= k) coord_leaves_.resize(k + 1);
    Expr& leaf = coord_leaves_[k];
    if (!leaf || leaf->name != name) leaf = ir::coordRef(k, std::string(name));
    return leaf;
  }

  Expr convertCall(const ast::CallExpr& c, const ExprScope& scope) {
    std::string_view f = c.callee.name;
    SourceLoc at = c.callee.range.begin;
    if (f == "load") return convertLoad(c, scope);
    if (f != "cdiv" && f != "min" && f != "max") {
      diags_.error(at, fmt::format("unknown function '{}'{}", f,
                                   suggestOrList(f, {"cdiv", "min", "max", "load"}, "integer functions")));
      return nullptr;
    }
    if (f == "cdiv" && c.args.size() != 2) {
      diags_.error(at, fmt::format("cdiv takes 2 arguments; got {}", c.args.size()));
      return nullptr;
    }
    if (c.args.size() < 2) {
      diags_.error(at, fmt::format("{} takes at least 2 arguments; got {}", f, c.args.size()));
      return nullptr;
    }
    std::vector<Expr> args;
    bool ok = true;
    for (const ast::Expr* a : c.args) {
      Expr x = convert(a, scope);
      ok = ok && x;
      args.push_back(std::move(x));
    }
    if (!ok) return nullptr;
    if (f == "cdiv") {
      if (!checkDivisor(args[1], c.args[1], "division")) return nullptr;
      return ir::cdiv(args[0], args[1]);
    }
    Expr r = args[0];
    for (size_t i = 1; i < args.size(); ++i) r = f == "min" ? ir::min(r, args[i]) : ir::max(r, args[i]);
    return r;
  }

  Expr convertLoad(const ast::CallExpr& c, const ExprScope& scope) {
    SourceLoc at = c.callee.range.begin;
    if (!(scope.allow & kLoads)) {
      diags_.error(at, fmt::format("{} cannot depend on data: load(...) is not allowed here", scope.what));
      return nullptr;
    }
    if (c.args.size() != 1 || c.args[0]->kind != ast::ExprKind::Index) {
      diags_.error(at, "load takes one element of an i32 tensor, as in load(counts[e])");
      return nullptr;
    }
    const ast::TensorRef& ref = static_cast<const ast::IndexExpr*>(c.args[0])->ref;
    auto t = resolveTensor(ref.name);
    if (!t) return nullptr;
    const ir::Tensor& tensor = m_->tensors[*t];
    if (tensor.dtype != ir::DType::I32) {
      diags_.error(ref.name.range.begin,
                   fmt::format("load reads i32 tensors; '{}' is {}", tensor.name, ir::dtypeName(tensor.dtype)),
                   {{tensorLoc(tensor), fmt::format("'{}' is declared here", tensor.name)}});
      return nullptr;
    }
    if (ref.entries.size() != tensor.shape.size()) {
      diags_.error(ref.range.begin, fmt::format("load needs one index per dimension of '{}' ({}); got {}", tensor.name,
                                                tensor.shape.size(), ref.entries.size()));
      return nullptr;
    }
    std::vector<Expr> idx;
    for (const ast::SliceEntry& s : ref.entries) {
      if (s.is_range) {
        diags_.error(s.range.begin, "load reads one element: its indices cannot be ranges");
        return nullptr;
      }
      ExprScope inner = scope;
      inner.allow &= ~kBound;
      Expr x = convert(s.lo, inner);
      if (!x) return nullptr;
      idx.push_back(std::move(x));
    }
    return ir::load(*t, tensor.name, std::move(idx));
  }

  bool checkDivisor(const Expr& divisor, const ast::Expr* node, std::string_view what) {
    auto v = ir::asInt(ir::inlineConsts(divisor));
    if (v && *v == 0) {
      // Through consts (`N / TILE`), say which value is zero.
      std::string written = writtenText(node->range);
      diags_.error(node->range.begin, node->kind == ast::ExprKind::Int || written.empty()
                                          ? fmt::format("{} by zero", what)
                                          : fmt::format("{} by zero ('{}' is 0)", what, written));
      return false;
    }
    return true;
  }

  Expr convertBinary(const ast::BinaryExpr& b, const ExprScope& scope) {
    if (b.op == ast::BinaryOp::Le) {
      if (!(scope.allow & kBound)) {
        diags_.error(b.range.begin, fmt::format("an upper bound (`value <= bound`) is only allowed on a task's grid "
                                                "extent or an event's count, not in {}",
                                                scope.what));
        return nullptr;
      }
      ExprScope inner = scope;
      inner.allow &= ~kBound;
      Expr value = convert(b.lhs, inner);
      if (!value) return nullptr;
      if (!ir::hasLoad(value)) {
        diags_.error(b.lhs->range.begin, fmt::format("`<=` states an upper bound for a value read from data, but '{}' "
                                                     "reads no data",
                                                     ir::toString(value)));
        return nullptr;
      }
      inner.allow &= ~kLoads;
      inner.what = "an upper bound";
      Expr bound = convert(b.rhs, inner);
      return bound ? ir::bounded(value, bound) : nullptr;
    }
    Expr l = convert(b.lhs, scope);
    Expr r = convert(b.rhs, scope);
    if (!l || !r) return nullptr;
    switch (b.op) {
      case ast::BinaryOp::Add: return ir::add(l, r);
      case ast::BinaryOp::Sub: return ir::sub(l, r);
      case ast::BinaryOp::Mul: return ir::mul(l, r);
      case ast::BinaryOp::Div: return checkDivisor(r, b.rhs, "division") ? ir::floorDiv(l, r) : nullptr;
      case ast::BinaryOp::Mod: return checkDivisor(r, b.rhs, "modulo") ? ir::mod(l, r) : nullptr;
      case ast::BinaryOp::Le: break;
    }
    return nullptr;
  }

  // A compile-time constant: its value, or nullopt after an error.
  std::optional<int64_t> constValue(const ast::Expr* e, std::string_view what, Expr* as_written) {
    Expr x = convert(e, ExprScope{0, what, nullptr});
    if (!x) return std::nullopt;
    ir::EvalResult r = ir::evaluate(ir::inlineConsts(x), {});
    if (r.error == ir::EvalError::Overflow) {
      std::string written = writtenText(e->range);
      diags_.error(e->range.begin, fmt::format("integer overflow in {} ('{}' does not fit in 64 bits)", what,
                                               written.empty() ? ir::toString(x) : written));
      return std::nullopt;
    }
    if (r.error == ir::EvalError::DivByZero) {
      diags_.error(e->range.begin, fmt::format("division by zero in {}", what));
      return std::nullopt;
    }
    if (!r.ok()) {
      diags_.error(e->range.begin, fmt::format("{} must be a compile-time constant", what));
      return std::nullopt;
    }
    if (as_written) *as_written = x;
    return r.value;
  }

  // ---- declarations -------------------------------------------------------------------

  void buildSym(const ast::SymDecl& d) {
    ir::Sym s;
    s.name = std::string(d.name.name);
    s.range = d.range;
    s.name_range = d.name.range;
    if (d.lo) s.lo_range = d.lo->range;
    if (d.hi) s.hi_range = d.hi->range;
    auto lo = constValue(d.lo, "a sym range", &s.lo_expr);
    auto hi = constValue(d.hi, "a sym range", &s.hi_expr);
    if (!claimValueName(d.name)) return;
    if (!lo || !hi) return markBroken(d.name, ir::Module::DeclKind::Sym);
    s.lo = *lo;
    s.hi = *hi;
    m_->addSym(std::move(s));
  }

  void buildConst(const ast::ConstDecl& d) {
    ir::Const c;
    c.name = std::string(d.name.name);
    c.range = d.range;
    c.name_range = d.name.range;
    auto v = constValue(d.value, "a const", &c.value_expr);
    if (!claimValueName(d.name)) return;
    if (!v) return markBroken(d.name, ir::Module::DeclKind::Const);
    c.value = *v;
    m_->addConst(std::move(c));
  }

  std::optional<std::vector<Expr>> convertShape(const std::vector<ast::Expr*>& dims, std::string_view what) {
    std::vector<Expr> shape;
    bool ok = true;
    for (const ast::Expr* e : dims) {
      Expr x = convert(e, ExprScope{kSyms, what, nullptr});
      ok = ok && x;
      shape.push_back(std::move(x));
    }
    if (!ok) return std::nullopt;
    return shape;
  }

  void buildTensor(const ast::TensorDecl& d) {
    ir::Tensor t;
    t.name = std::string(d.name.name);
    t.range = d.range;
    t.name_range = d.name.range;
    for (const ast::Expr* e : d.shape) t.shape_ranges.push_back(e->range);
    bool ok = true;
    if (auto dt = ir::parseDType(d.dtype.name)) {
      t.dtype = *dt;
    } else {
      std::vector<std::string_view> names(std::begin(ir::kDTypeNames), std::end(ir::kDTypeNames));
      diags_.error(d.dtype.range.begin,
                   fmt::format("unknown dtype '{}'{}", d.dtype.name, suggestOrList(d.dtype.name, names, "dtypes")));
      ok = false;
    }
    if (auto r = ir::parseRole(d.role.name)) {
      t.role = *r;
    } else {
      std::vector<std::string_view> roles{"input", "output", "param", "temp"};
      diags_.error(d.role.range.begin,
                   fmt::format("unknown tensor role '{}'{}", d.role.name, suggestOrList(d.role.name, roles, "roles")));
      ok = false;
    }
    auto shape = convertShape(d.shape, "a tensor shape");
    if (!claimValueName(d.name)) return;
    if (!ok || !shape) return markBroken(d.name, ir::Module::DeclKind::Tensor);
    t.shape = std::move(*shape);
    m_->addTensor(std::move(t));
  }

  // Binds coordinate names; reports duplicates and names that would shadow module names.
  bool bindCoords(const std::vector<ast::Ident>& idents, std::vector<std::string>* out) {
    bool ok = true;
    for (size_t k = 0; k < idents.size(); ++k) {
      const ast::Ident& c = idents[k];
      for (size_t j = 0; j < k; ++j) {
        if (idents[j].name == c.name) {
          diags_.error(c.range.begin, fmt::format("coordinate '{}' is bound twice", c.name),
                       {{idents[j].range.begin, "first bound here"}});
          ok = false;
        }
      }
      if (auto prev = m_->findValue(c.name)) {
        diags_.error(c.range.begin,
                     fmt::format("coordinate '{}' would hide the {} '{}'", c.name, kindName(prev->kind), c.name),
                     {{nameLoc(*prev), fmt::format("the {} is declared here", kindName(prev->kind))}});
        ok = false;
      }
      out->push_back(std::string(c.name));
    }
    return ok;
  }

  void buildEvent(const ast::EventDecl& d) {
    ir::Event e;
    e.name = std::string(d.name.name);
    e.range = d.range;
    e.name_range = d.name.range;
    if (d.init) e.init_range = d.init->range;
    for (const ast::Expr* x : d.shape) e.shape_ranges.push_back(x->range);
    auto shape = convertShape(d.shape, "an event shape");
    bool ok = shape.has_value();
    if (d.init_has_coords) {
      ok = bindCoords(d.init_coords, &e.init_coords) && ok;
      if (shape && d.init_coords.size() != shape->size()) {
        diags_.error(d.init_coords.front().range.begin,
                     fmt::format("event '{}' has {} dimension{}, but its init binds {} coordinate{}", e.name,
                                 shape->size(), shape->size() == 1 ? "" : "s", d.init_coords.size(),
                                 d.init_coords.size() == 1 ? "" : "s"));
        ok = false;
      }
    }
    e.init = convert(d.init, ExprScope{kSyms | kCoords | kLoads | kBound, "an event's count", &e.init_coords});
    if (!claimValueName(d.name)) return;
    if (!ok || !e.init) return markBroken(d.name, ir::Module::DeclKind::Event);
    e.shape = std::move(*shape);
    m_->addEvent(std::move(e));
  }

  std::optional<uint32_t> resolveTensor(const ast::Ident& name) {
    auto ref = m_->findValue(name.name);
    if (ref && ref->kind == ir::Module::DeclKind::Tensor) return ref->index;
    if (!ref) {
      if (isBroken(name.name)) return std::nullopt;  // its declaration's errors were reported
      if (auto later = assigned_later_.find(name.name); later != assigned_later_.end()) {
        diags_.error(name.range.begin, fmt::format("'{}' is used before it is assigned", name.name),
                     {{later->second, fmt::format("'{}' is assigned here", name.name)}});
        return std::nullopt;
      }
      std::vector<std::string_view> names;
      for (const auto& t : m_->tensors) names.push_back(t.name);
      for (const auto& [n, b] : broken_)
        if (b.kind == ir::Module::DeclKind::Tensor) names.push_back(n);
      diags_.error(name.range.begin, fmt::format("undefined tensor '{}'{}", name.name, didYouMean(name.name, names)));
    } else {
      diags_.error(name.range.begin, fmt::format("'{}' is {}, not a tensor", name.name, aKind(ref->kind)),
                   {{nameLoc(*ref), fmt::format("'{}' is declared here", name.name)}});
    }
    return std::nullopt;
  }

  std::optional<uint32_t> resolveEvent(const ast::Ident& name) {
    auto ref = m_->findValue(name.name);
    if (ref && ref->kind == ir::Module::DeclKind::Event) return ref->index;
    if (!ref) {
      if (isBroken(name.name)) return std::nullopt;  // its declaration's errors were reported
      std::vector<std::string_view> names;
      for (const auto& e : m_->events) names.push_back(e.name);
      for (const auto& [n, b] : broken_)
        if (b.kind == ir::Module::DeclKind::Event) names.push_back(n);
      diags_.error(name.range.begin, fmt::format("undefined event '{}'{}", name.name, didYouMean(name.name, names)));
    } else {
      diags_.error(name.range.begin,
                   fmt::format("'{}' is {}, not an event; wait and notify take events", name.name,
                               aKind(ref->kind)),
                   {{nameLoc(*ref), fmt::format("'{}' is declared here", name.name)}});
    }
    return std::nullopt;
  }

  // Converts the subscript of `ref` on an object of the given shape.
  std::optional<ir::Slice> convertSlice(const ast::TensorRef& ref, uint32_t target, std::string_view target_name,
                                        const std::vector<Expr>& shape, const ExprScope& scope) {
    ir::Slice s;
    s.target = target;
    s.has_subscript = ref.has_subscript;
    s.range = ref.range;
    if (ref.entries.size() > shape.size()) {
      diags_.error(ref.entries[shape.size()].range.begin,
                   fmt::format("too many subscripts: '{}' has {} dimension{}, {} given", target_name, shape.size(),
                               shape.size() == 1 ? "" : "s", ref.entries.size()));
      return std::nullopt;
    }
    bool ok = true;
    s.dims.reserve(ref.entries.size());
    for (size_t k = 0; k < ref.entries.size(); ++k) {
      const ast::SliceEntry& e = ref.entries[k];
      ir::SliceDim dim;
      dim.is_range = e.is_range;
      dim.range = e.range;
      dim.lo_written = e.lo != nullptr;
      dim.hi_written = e.hi != nullptr;
      if (e.lo) dim.lo_range = e.lo->range;
      if (e.hi) dim.hi_range = e.hi->range;
      dim.lo = e.lo ? convert(e.lo, scope) : ir::intConst(0);
      if (e.is_range) dim.hi = e.hi ? convert(e.hi, scope) : shape[k];
      if (!dim.lo || (e.is_range && !dim.hi)) ok = false;
      s.dims.push_back(std::move(dim));
    }
    if (!ok) return std::nullopt;
    return s;
  }

  // The subscript of a reference whose target could not be resolved: its expressions are
  // still resolved, so that their own mistakes are reported in the same run.
  void checkUnresolvedSubscript(const ast::TensorRef& ref, const ExprScope& scope) {
    for (const ast::SliceEntry& e : ref.entries) {
      if (e.lo) convert(e.lo, scope);
      if (e.hi) convert(e.hi, scope);
    }
  }

  std::optional<ir::Slice> tensorSlice(const ast::TensorRef& ref, const ExprScope& scope) {
    auto t = resolveTensor(ref.name);
    if (!t) {
      checkUnresolvedSubscript(ref, scope);
      return std::nullopt;
    }
    const ir::Tensor& tensor = m_->tensors[*t];
    return convertSlice(ref, *t, tensor.name, tensor.shape, scope);
  }

  std::optional<ir::AttrValue> convertAttr(const ast::Attr& a, const ir::AttrSpec& spec, std::string_view op) {
    ir::AttrValue v;
    v.type = spec.type;
    const ast::NameExpr* name =
        a.kind == ast::AttrKind::Expr && a.expr->kind == ast::ExprKind::Name ? static_cast<const ast::NameExpr*>(a.expr)
                                                                              : nullptr;
    auto mismatch = [&]() -> std::optional<ir::AttrValue> {
      // The two likely slips: a string without its quotes, a dtype in quotes.
      std::string hint;
      if (spec.type == ir::AttrType::String && name)
        hint = fmt::format("; write \"{}\" with quotes", name->name.name);
      else if (spec.type == ir::AttrType::DType && a.kind == ast::AttrKind::String && ir::parseDType(a.svalue))
        hint = fmt::format("; write {} without quotes", a.svalue);
      diags_.error(a.value_range.valid() ? a.value_range.begin : a.range.begin,
                   fmt::format("{}: attribute '{}' takes {}{}", op, spec.name, attrTypeName(spec.type), hint));
      return std::nullopt;
    };
    switch (spec.type) {
      case ir::AttrType::Bool:
        if (a.kind == ast::AttrKind::Flag) {
          v.b = true;
        } else if (name && (name->name.name == "true" || name->name.name == "false")) {
          v.b = name->name.name == "true";
        } else {
          return mismatch();
        }
        return v;
      case ir::AttrType::Int: {
        if (a.kind != ast::AttrKind::Expr) return mismatch();
        Expr written;
        if (!constValue(a.expr, fmt::format("attribute '{}'", spec.name), &written)) return std::nullopt;
        v.i = written;
        return v;
      }
      case ir::AttrType::Float: {
        if (a.kind == ast::AttrKind::Float) {
          v.f = a.fvalue;
          v.text = std::string(a.ftext);
          return v;
        }
        if (a.kind != ast::AttrKind::Expr) return mismatch();
        Expr written;
        auto iv = constValue(a.expr, fmt::format("attribute '{}'", spec.name), &written);
        if (!iv) return std::nullopt;
        v.f = static_cast<double>(*iv);
        v.text = ir::toString(written);
        return v;
      }
      case ir::AttrType::String:
        if (a.kind != ast::AttrKind::String) return mismatch();
        v.text = a.svalue;
        return v;
      case ir::AttrType::DType:
        if (!name) return mismatch();
        if (auto dt = ir::parseDType(name->name.name)) {
          v.dtype = *dt;
          return v;
        }
        return mismatch();
    }
    return std::nullopt;
  }

  // Resolves the op, its operands and attributes. Result slots are the caller's business.
  std::optional<ir::OpCall> convertOpCall(const ast::OpCall& c, size_t num_results, const ExprScope& scope) {
    ir::OpCall call;
    call.op = std::string(c.callee.name);
    call.range = c.range;
    const ir::OpInfo* info = ir::findOp(c.callee.name);
    if (!info) {
      std::vector<std::string_view> names;
      for (const ir::OpInfo& o : ir::allOps()) names.push_back(o.name);
      diags_.error(c.callee.range.begin,
                   fmt::format("unknown op '{}'{}", c.callee.name, didYouMean(c.callee.name, names)));
      return std::nullopt;
    }
    bool ok = true;
    int n_in = static_cast<int>(c.args.size());
    if (n_in < info->min_inputs || n_in > info->max_inputs) {
      diags_.error(c.callee.range.begin,
                   fmt::format("{} takes {} operand{}; got {}", info->name,
                               info->min_inputs == info->max_inputs
                                   ? std::to_string(info->min_inputs)
                                   : fmt::format("{} to {}", info->min_inputs, info->max_inputs),
                               info->max_inputs == 1 ? "" : "s", n_in));
      ok = false;
    }
    int n_out = static_cast<int>(num_results);
    if (n_out < info->min_outputs || n_out > info->max_outputs) {
      diags_.error(c.callee.range.begin,
                   fmt::format("{} gives {} result{}; {} {} given", info->name,
                               info->min_outputs == info->max_outputs
                                   ? std::to_string(info->min_outputs)
                                   : fmt::format("{} or {}", info->min_outputs, info->max_outputs),
                               info->max_outputs == 1 ? "" : "s", n_out, n_out == 1 ? "destination is" : "destinations are"));
      ok = false;
    }
    call.args.reserve(c.args.size());
    for (const ast::TensorRef& arg : c.args) {
      auto s = tensorSlice(arg, scope);
      if (!s) {
        ok = false;
        continue;
      }
      call.args.push_back(std::move(*s));
    }
    // (A call has a handful of attributes: a scan of the earlier ones beats a hash map.)
    auto written = [&c](std::string_view name, size_t before) -> const ast::Attr* {
      for (size_t j = 0; j < before; ++j)
        if (c.attrs[j].name.name == name) return &c.attrs[j];
      return nullptr;
    };
    call.attrs.reserve(c.attrs.size());
    for (size_t i = 0; i < c.attrs.size(); ++i) {
      const ast::Attr& a = c.attrs[i];
      if (const ast::Attr* first = written(a.name.name, i)) {
        diags_.error(a.name.range.begin, fmt::format("attribute '{}' is given twice", a.name.name),
                     {{first->name.range.begin, "first given here"}});
        ok = false;
        continue;
      }
      const ir::AttrSpec* spec = nullptr;
      for (const ir::AttrSpec& sp : info->attrs)
        if (sp.name == a.name.name) spec = &sp;
      if (!spec) {
        std::vector<std::string_view> names;
        for (const ir::AttrSpec& sp : info->attrs) names.push_back(sp.name);
        std::string detail = didYouMean(a.name.name, names);
        if (names.empty())
          detail = "; it takes no attributes";
        else if (detail.empty() && names.size() == 1)
          detail = fmt::format("; its only attribute is {}", names[0]);
        else if (detail.empty())
          detail = fmt::format("; its attributes are {}", joinNames(names));
        diags_.error(a.name.range.begin, fmt::format("{} has no attribute '{}'{}", info->name, a.name.name, detail));
        ok = false;
        continue;
      }
      auto v = convertAttr(a, *spec, info->name);
      if (!v) {
        ok = false;
        continue;
      }
      call.attrs.push_back(ir::Attr{std::string(a.name.name), std::move(*v), a.range});
    }
    for (const ir::AttrSpec& sp : info->attrs) {
      if (sp.required && !written(sp.name, c.attrs.size())) {
        diags_.error(c.callee.range.begin, fmt::format("{} needs the attribute '{}'", info->name, sp.name));
        ok = false;
      }
    }
    if (!ok) return std::nullopt;
    return call;
  }

  // The module's tables sized up front (op-level results become tensors too): growing them
  // one reallocation at a time frees large blocks, each of which makes malloc consolidate its
  // free lists, which was a fifth of the front end's time on a 10 MB module.
  void reserveTables(const LoadedSource& src) {
    size_t count[8] = {};
    size_t results = 0;
    for (const ast::Decl* d : src.decls) {
      ++count[static_cast<size_t>(d->kind)];
      if (d->kind != ast::DeclKind::Graph) continue;
      for (const ast::Stmt* st : static_cast<const ast::GraphDecl*>(d)->body)
        if (st->kind == ast::StmtKind::Assign) results += static_cast<const ast::AssignStmt*>(st)->results.size();
    }
    auto n = [&](ast::DeclKind k) { return count[static_cast<size_t>(k)]; };
    m_->reserve(n(ast::DeclKind::Sym), n(ast::DeclKind::Const), n(ast::DeclKind::Tensor) + results,
                n(ast::DeclKind::Event), n(ast::DeclKind::Task), n(ast::DeclKind::Graph));
  }

  // Reports a redefinition of an `@name` (task or graph) and returns false if it is taken,
  // by a built declaration (`prev`) or by an earlier one that had errors (`broken`).
  template <class BrokenMap>
  bool claimAtName(const ast::Ident& name, std::string_view what, std::optional<uint32_t> prev,
                   ir::Module::DeclKind kind, const BrokenMap& broken) {
    SourceLoc first;
    if (prev) {
      first = nameLoc({kind, *prev});
    } else if (auto it = broken.find(name.name); it != broken.end()) {
      first = it->second;
    } else {
      return true;
    }
    diags_.error(name.range.begin, fmt::format("redefinition of {} '@{}'", what, name.name), {{first, "first defined here"}});
    return false;
  }

  void buildTask(const ast::TaskDecl& d) {
    ir::Task t;
    t.name = std::string(d.name.name);
    t.range = d.range;
    t.name_range = d.name.range;
    bool ok = true;
    bool redefined = !claimAtName(d.name, "task", m_->findTask(d.name.name), ir::Module::DeclKind::Task, broken_tasks_);
    for (const ast::Expr* e : d.grid) {
      t.grid_ranges.push_back(e->range);
      Expr x = convert(e, ExprScope{kSyms | kLoads | kBound, "a grid extent", nullptr});
      ok = ok && x;
      t.grid.push_back(std::move(x));
    }
    ok = bindCoords(d.coords, &t.coords) && ok;
    if (d.coords.size() != d.grid.size()) {
      diags_.error(d.coords.empty() ? d.grid_range.begin : d.coords.front().range.begin,
                   fmt::format("task '@{}' has a {}-dimensional grid but binds {} coordinate{}", t.name, d.grid.size(),
                               d.coords.size(), d.coords.size() == 1 ? "" : "s"));
      ok = false;
    }
    ExprScope scope{kSyms | kCoords | kLoads, "a subscript", &t.coords};
    for (const ast::Stmt* s : d.body) {
      if (diags_.limitReached()) break;
      switch (s->kind) {
        case ast::StmtKind::Wait:
        case ast::StmtKind::Notify: {
          const auto& es = *static_cast<const ast::EventStmt*>(s);
          auto ev = resolveEvent(es.event.name);
          if (!ev) {
            checkUnresolvedSubscript(es.event, scope);
            ok = false;
            break;
          }
          auto slice = convertSlice(es.event, *ev, m_->events[*ev].name, m_->events[*ev].shape, scope);
          if (!slice) {
            ok = false;
            break;
          }
          if (s->kind == ast::StmtKind::Wait)
            t.body.push_back(ir::WaitStmt{std::move(*slice), s->range});
          else
            t.body.push_back(ir::NotifyStmt{std::move(*slice), s->range});
          break;
        }
        case ast::StmtKind::Call: {
          const auto& cs = *static_cast<const ast::CallStmt*>(s);
          auto call = convertOpCall(cs.call, cs.dests.size(), scope);
          ir::CallStmt out;
          out.range = s->range;
          bool dests_ok = true;
          for (const ast::TensorRef& dref : cs.dests) {
            auto slice = tensorSlice(dref, scope);
            if (!slice) {
              dests_ok = false;
              continue;
            }
            out.dests.push_back(std::move(*slice));
          }
          if (!call || !dests_ok) {
            ok = false;
            break;
          }
          out.call = std::move(*call);
          t.body.push_back(std::move(out));
          break;
        }
        default:
          diags_.error(s->range.begin, "op-level statements (`x = op(...)`, `run @task`) belong in a graph, not in a task");
          ok = false;
      }
    }
    if (ok && !redefined) {
      m_->addTask(std::move(t));
    } else if (!redefined) {
      broken_tasks_.emplace(t.name, d.name.range.begin);  // `run @name` reports nothing more
    }
  }

  // `specialize SYM = C1, C2, ...`: a sym of the module and constant cuts that increase within
  // its range.
  bool buildSpecialize(const ast::GraphDecl& d, ir::Graph& g) {
    const ast::Ident& name = d.specialize_sym;
    auto v = m_->findValue(name.name);
    if (!v || v->kind != ir::Module::DeclKind::Sym) {
      if (isBroken(name.name)) return false;  // its declaration's errors were reported
      std::vector<std::string_view> syms;
      for (const ir::Sym& s : m_->syms) syms.push_back(s.name);
      diags_.error(name.range.begin, v ? fmt::format("'{}' is not a sym: specialize cuts the range of a sym", name.name)
                                       : fmt::format("undefined sym '{}'{}", name.name, didYouMean(name.name, syms)));
      return false;
    }
    std::vector<int64_t> cuts;
    std::vector<Expr> exprs;
    for (const ast::Expr* e : d.specialize_cuts) {
      auto c = constValue(e, "a specialize cut", &exprs.emplace_back());
      if (!c) return false;
      cuts.push_back(*c);
    }
    std::string why;
    size_t bad = 0;
    if (!ir::symCutRanges(m_->syms[v->index], cuts, why, &bad)) {
      diags_.error(d.specialize_cuts[bad]->range.begin, "specialize: " + why);
      return false;
    }
    g.specialize_sym = static_cast<int32_t>(v->index);
    g.specialize_cuts = std::move(cuts);
    g.specialize_cut_exprs = std::move(exprs);
    return true;
  }

  void buildGraph(const ast::GraphDecl& d) {
    ir::Graph g;
    g.name = std::string(d.name.name);
    g.range = d.range;
    g.name_range = d.name.range;
    bool ok = true;
    if (!claimAtName(d.name, "graph", m_->findGraph(d.name.name), ir::Module::DeclKind::Graph, broken_graphs_))
      ok = false;
    if (d.has_schedule) {
      if (auto s = ir::parseSchedule(d.schedule.name)) {
        g.schedule = *s;
        g.schedule_written = true;
      } else {
        diags_.error(d.schedule.range.begin,
                     fmt::format("unknown schedule '{}'{}", d.schedule.name,
                                 suggestOrList(d.schedule.name, {"static", "dynamic", "auto"}, "schedules")));
        ok = false;
      }
    }
    if (d.has_specialize && !buildSpecialize(d, g)) ok = false;
    // One prover for the whole module: its memo of decided facts is what makes the checks of
    // graph after graph with the same shapes cheap (a prover per graph started empty each time).
    if (!prover_) prover_ = std::make_unique<ir::Prover>(*m_);
    const ir::Prover& prover = *prover_;
    // Names assigned in this graph, for "used before it is assigned".
    assigned_later_.clear();
    for (const ast::Stmt* s : d.body)
      if (s->kind == ast::StmtKind::Assign)
        for (const ast::Ident& r : static_cast<const ast::AssignStmt*>(s)->results)
          if (!m_->findValue(r.name) && !isBroken(r.name)) assigned_later_.emplace(std::string(r.name), r.range.begin);
    for (const ast::Stmt* s : d.body) {
      if (diags_.limitReached()) break;
      if (s->kind == ast::StmtKind::Run) {
        const auto& rs = *static_cast<const ast::RunStmt*>(s);
        auto task = m_->findTask(rs.task.name);
        if (!task && broken_tasks_.count(rs.task.name)) {
          ok = false;  // the task's errors were reported
          continue;
        }
        if (!task) {
          std::vector<std::string> at_names;  // suggested as written: '@name'
          for (const auto& t : m_->tasks) at_names.push_back("@" + t.name);
          for (const auto& [n, at] : broken_tasks_) at_names.push_back("@" + n);
          std::vector<std::string_view> names(at_names.begin(), at_names.end());
          diags_.error(rs.task.range.begin, fmt::format("undefined task '@{}'{}", rs.task.name,
                                                        didYouMean("@" + std::string(rs.task.name), names)));
          ok = false;
          continue;
        }
        g.body.push_back(ir::RunStmt{*task, s->range});
        continue;
      }
      if (s->kind != ast::StmtKind::Assign) {
        diags_.error(s->range.begin, "task-level statements (wait, notify, `op(...) -> dest`) belong in a task, not "
                                     "in a graph");
        ok = false;
        continue;
      }
      ok = buildAssign(*static_cast<const ast::AssignStmt*>(s), prover, &g) && ok;
    }
    assigned_later_.clear();
    if (ok) {
      m_->addGraph(std::move(g));
    } else if (!m_->findGraph(g.name)) {
      broken_graphs_.emplace(g.name, d.name.range.begin);
    }
  }

  bool buildAssign(const ast::AssignStmt& a, const ir::Prover& prover, ir::Graph* g) {
    ExprScope scope{kSyms, "an op-level subscript", nullptr};
    auto call = convertOpCall(a.call, a.results.size(), scope);
    // Results: declared tensors are written; new names become implicit temps typed by the op.
    std::vector<ir::OpResultSlot> slots;
    std::vector<ir::OperandType> declared(a.results.size());
    std::vector<int> implicit;  // indices into a.results
    bool ok = call.has_value();
    for (size_t k = 0; k < a.results.size(); ++k) {
      const ast::Ident& r = a.results[k];
      ir::OpResultSlot slot;
      slot.name = std::string(r.name);
      slot.range = r.range;
      for (size_t j = 0; j < k; ++j) {
        if (a.results[j].name == r.name) {
          diags_.error(r.range.begin, fmt::format("'{}' is assigned twice in one statement", r.name));
          ok = false;
        }
      }
      if (isBroken(r.name)) {
        ok = false;  // its declaration's errors were reported
      } else if (auto ref = m_->findValue(r.name)) {
        if (ref->kind != ir::Module::DeclKind::Tensor) {
          diags_.error(r.range.begin,
                       fmt::format("'{}' is {}; an op's result must be a tensor", r.name, aKind(ref->kind)),
                       {{nameLoc(*ref), fmt::format("'{}' is declared here", r.name)}});
          ok = false;
        } else if (m_->tensors[ref->index].implicit) {
          diags_.error(r.range.begin, fmt::format("'{}' is already defined; each op-level value is assigned once",
                                                  r.name),
                       {{m_->tensors[ref->index].range.begin, "first assigned here"}});
          ok = false;
        } else {
          const ir::Tensor& t = m_->tensors[ref->index];
          declared[k] = ir::OperandType{t.dtype, t.shape};
          slot.declared = &declared[k];
        }
      } else {
        implicit.push_back(static_cast<int>(k));
      }
      slots.push_back(std::move(slot));
    }
    std::vector<ir::OperandType> types;
    bool poisoned_input = false;
    if (call)
      for (const ir::Slice& s : call->args) poisoned_input = poisoned_input || poisoned_.count(s.target);
    bool typed = ok && !poisoned_input && ir::checkOpCall(*m_, *call, slots, prover, diags_, &types, &op_checks_);
    // Implicit results exist even when typing failed, so later uses do not cascade into
    // "undefined name" errors; they are marked poisoned and their uses are not re-checked.
    std::vector<uint32_t> ids(a.results.size());
    for (size_t k = 0; k < a.results.size(); ++k) {
      if (slots[k].declared) {
        ids[k] = *m_->findTensor(a.results[k].name);
        continue;
      }
      if (m_->findValue(a.results[k].name) || isBroken(a.results[k].name)) continue;  // reported above
      assigned_later_.erase(std::string(a.results[k].name));
      ir::Tensor t;
      t.name = std::string(a.results[k].name);
      t.name_range = a.results[k].range;
      t.role = ir::Role::Temp;
      t.implicit = true;
      t.range = a.results[k].range;
      if (typed) {
        t.dtype = types[k].dtype;
        t.shape = types[k].shape;
      }
      ids[k] = m_->addTensor(std::move(t));
      if (!typed) poisoned_.insert(ids[k]);
    }
    if (!typed) return false;
    g->body.push_back(ir::AssignStmt{std::move(ids), std::move(*call), a.range});
    return true;
  }

  struct Broken {
    ir::Module::DeclKind kind;
    SourceLoc at;  // the name in the declaration
  };
  // Ordered, so that suggestions drawn from them do not depend on hashing.
  template <class V>
  using NameMap = std::map<std::string, V, std::less<>>;

  const SourceManager& sources_;
  DiagnosticEngine& diags_;
  std::unique_ptr<ir::Module> m_;
  std::set<uint32_t> poisoned_;
  std::vector<Expr> sym_leaves_, const_leaves_, coord_leaves_;  // see symLeaf
  std::unique_ptr<ir::Prover> prover_;                          // see buildGraph
  ir::OpCheckMemo op_checks_;                                   // layer after layer of the same calls
  NameMap<Broken> broken_;                  // value names whose declaration had errors
  NameMap<SourceLoc> broken_tasks_;         // tasks whose declaration had errors
  NameMap<SourceLoc> broken_graphs_;        // graphs whose declaration had errors
  NameMap<SourceLoc> assigned_later_;       // names the current graph assigns, not yet reached
};

}  // namespace

std::unique_ptr<ir::Module> buildModule(const LoadedSource& src, const SourceManager& sources,
                                        DiagnosticEngine& diags) {
  return Builder(sources, diags).build(src);
}

}  // namespace etc
