#include "compiler/ir/printer.h"

#include <fmt/format.h>

namespace etc::ir {

namespace {

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

bool isAtom(const Expr& e) {
  return e->kind == ExprKind::Int || e->kind == ExprKind::Sym || e->kind == ExprKind::Const ||
         e->kind == ExprKind::Coord;
}

std::string exprList(const std::vector<Expr>& es) {
  std::string out;
  for (size_t i = 0; i < es.size(); ++i) {
    if (i) out += ", ";
    out += toString(es[i]);
  }
  return out;
}

std::string attrValue(const AttrValue& v) {
  switch (v.type) {
    case AttrType::Bool: return v.b ? "true" : "false";
    case AttrType::Int: return toString(v.i);
    case AttrType::Float: return v.text;
    case AttrType::String: return quote(v.text);
    case AttrType::DType: return std::string(dtypeName(v.dtype));
  }
  return "";
}

}  // namespace

std::string printSlice(const Module& m, const Slice& s, bool is_event) {
  std::string out = is_event ? m.events[s.target].name : m.tensors[s.target].name;
  if (!s.has_subscript) return out;
  out += '[';
  for (size_t k = 0; k < s.dims.size(); ++k) {
    const SliceDim& d = s.dims[k];
    if (k) out += ", ";
    if (!d.is_range) {
      out += toString(d.lo);
      continue;
    }
    // `lo:hi` between atoms, `lo : hi` between compound expressions, for readability.
    bool tight = (!d.lo_written || isAtom(d.lo)) && (!d.hi_written || isAtom(d.hi));
    if (d.lo_written) out += toString(d.lo);
    out += tight ? ":" : (d.lo_written ? " :" : ":");
    if (d.hi_written) out += (tight ? "" : " ") + toString(d.hi);
  }
  return out + ']';
}

std::string printOpCall(const Module& m, const OpCall& c) {
  std::string out = c.op + "(";
  for (size_t i = 0; i < c.args.size(); ++i) {
    if (i) out += ", ";
    out += printSlice(m, c.args[i], false);
  }
  out += ')';
  if (!c.attrs.empty()) {
    out += " { ";
    for (size_t i = 0; i < c.attrs.size(); ++i) {
      const Attr& a = c.attrs[i];
      if (i) out += ", ";
      out += a.name;
      if (a.value.type == AttrType::Bool && a.value.b) continue;  // a flag
      out += " = " + attrValue(a.value);
    }
    out += " }";
  }
  return out;
}

std::string printModule(const Module& m) {
  std::string out = fmt::format("module @{}\n", m.name);
  using K = Module::DeclKind;
  K prev = K::Graph;
  bool first = true;
  for (const Module::DeclRef& r : m.order) {
    bool block = r.kind == K::Task || r.kind == K::Graph;
    // A blank line between groups of declarations and around every block.
    if (first || block || prev != r.kind || prev == K::Task || prev == K::Graph) out += '\n';
    first = false;
    prev = r.kind;
    switch (r.kind) {
      case K::Sym: {
        const Sym& s = m.syms[r.index];
        out += fmt::format("sym {} in [{}, {}]\n", s.name, toString(s.lo_expr), toString(s.hi_expr));
        break;
      }
      case K::Const: {
        const Const& c = m.consts[r.index];
        out += fmt::format("const {} = {}\n", c.name, toString(c.value_expr));
        break;
      }
      case K::Tensor: {
        const Tensor& t = m.tensors[r.index];
        out += fmt::format("tensor {} : {}[{}] {}\n", t.name, dtypeName(t.dtype), exprList(t.shape), roleName(t.role));
        break;
      }
      case K::Event: {
        const Event& e = m.events[r.index];
        out += fmt::format("event {} : [{}] init ", e.name, exprList(e.shape));
        if (!e.init_coords.empty()) {
          out += '(';
          for (size_t i = 0; i < e.init_coords.size(); ++i) out += (i ? ", " : "") + e.init_coords[i];
          out += ") -> ";
        }
        out += toString(e.init) + "\n";
        break;
      }
      case K::Task: {
        const Task& t = m.tasks[r.index];
        out += fmt::format("task @{} grid [{}] (", t.name, exprList(t.grid));
        for (size_t i = 0; i < t.coords.size(); ++i) out += (i ? ", " : "") + t.coords[i];
        out += ") {\n";
        for (const TaskStmt& st : t.body) {
          if (const auto* w = std::get_if<WaitStmt>(&st)) {
            out += "  wait " + printSlice(m, w->event, true) + "\n";
          } else if (const auto* n = std::get_if<NotifyStmt>(&st)) {
            out += "  notify " + printSlice(m, n->event, true) + "\n";
          } else {
            const auto& c = std::get<CallStmt>(st);
            out += "  " + printOpCall(m, c.call) + " -> ";
            for (size_t i = 0; i < c.dests.size(); ++i) out += (i ? ", " : "") + printSlice(m, c.dests[i], false);
            out += "\n";
          }
        }
        out += "}\n";
        break;
      }
      case K::Graph: {
        const Graph& g = m.graphs[r.index];
        out += fmt::format("graph @{}", g.name);
        if (g.schedule_written) out += fmt::format(" schedule {}", scheduleName(g.schedule));
        if (g.specialize_sym >= 0) {
          out += fmt::format(" specialize {} =", m.syms[g.specialize_sym].name);
          for (size_t i = 0; i < g.specialize_cut_exprs.size(); ++i)
            out += (i ? ", " : " ") + toString(g.specialize_cut_exprs[i]);
        }
        out += " {\n";
        for (const GraphStmt& st : g.body) {
          if (const auto* run = std::get_if<RunStmt>(&st)) {
            out += fmt::format("  run @{}\n", m.tasks[run->task].name);
          } else {
            const auto& a = std::get<AssignStmt>(st);
            out += "  ";
            for (size_t i = 0; i < a.results.size(); ++i) out += (i ? ", " : "") + m.tensors[a.results[i]].name;
            out += " = " + printOpCall(m, a.call) + "\n";
          }
        }
        out += "}\n";
        break;
      }
    }
  }
  if (!m.kernels.empty()) out += "\n// kernels (made by the passes; comments, not syntax):\n";
  for (const Kernel& k : m.kernels) {
    const Graph& g = m.graphs[k.graph];
    out += fmt::format("// {}: {} of graph @{}", k.name, k.mega ? "megakernel" : "unfused", g.name);
    if (k.mega) out += fmt::format(", schedule {}", scheduleName(g.schedule));
    if (k.when_sym >= 0) out += fmt::format(", {} in [{}, {}]", m.syms[k.when_sym].name, k.when_lo, k.when_hi);
    out += ":";
    for (uint32_t t : k.tasks) out += " @" + m.tasks[t].name;
    out += "\n";
  }
  return out;
}

}  // namespace etc::ir
