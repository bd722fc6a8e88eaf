#include "compiler/driver/summary.h"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/ir/op_check.h"

namespace etc {

namespace {

// Upper bound of a product of extents over the sym ranges (saturating).
int64_t maxProduct(const std::vector<ir::Expr>& dims, const ir::RangeEnv& env) {
  __int128 total = 1;
  for (const ir::Expr& d : dims) {
    ir::Interval b = ir::bounds(d, env);
    if (b.upperUnbounded()) return -1;
    total *= std::max<int64_t>(0, b.hi);
    if (total > INT64_MAX) return INT64_MAX;
  }
  return static_cast<int64_t>(total);
}

std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], r[c].size());
    }
  std::string out;
  for (const auto& r : rows) {
    std::string line = " ";
    for (size_t c = 0; c < r.size(); ++c) line += " " + r[c] + std::string(c + 1 < r.size() ? width[c] - r[c].size() + 1 : 0, ' ');
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string formatBytes(int64_t bytes) {
  if (bytes < 0) return "unbounded";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string summarizeModule(const ir::Module& m) {
  ir::RangeEnv env = m.symRanges();
  std::string out = fmt::format("module @{}: verified\n", m.name);

  out += fmt::format("\nsyms ({})\n", m.syms.size());
  std::vector<std::vector<std::string>> rows;
  for (const ir::Sym& s : m.syms) rows.push_back({s.name, fmt::format("in [{}, {}]", s.lo, s.hi)});
  out += table(rows);

  int counts[4] = {0, 0, 0, 0};
  int implicit = 0;
  int64_t total_bytes[4] = {0, 0, 0, 0};
  rows = {{"name", "dtype", "shape", "role", "max size"}};
  for (const ir::Tensor& t : m.tensors) {
    int64_t elems = maxProduct(t.shape, env);
    int64_t bytes = elems < 0 ? -1 : elems * ir::dtypeBytes(t.dtype);
    int r = static_cast<int>(t.role);
    ++counts[r];
    implicit += t.implicit;
    if (bytes > 0) total_bytes[r] += bytes;
    rows.push_back({t.name, std::string(ir::dtypeName(t.dtype)), ir::shapeToString(t.shape),
                    t.implicit ? "temp (op result)" : std::string(ir::roleName(t.role)), formatBytes(bytes)});
  }
  out += fmt::format("\ntensors ({}: {} input, {} output, {} param, {} temp of which {} op results)\n",
                     m.tensors.size(), counts[0], counts[1], counts[2], counts[3], implicit);
  if (!m.tensors.empty()) out += table(rows);
  out += fmt::format("  params {} at most; inputs {}; outputs {}; temps {}\n", formatBytes(total_bytes[2]),
                     formatBytes(total_bytes[0]), formatBytes(total_bytes[1]), formatBytes(total_bytes[3]));

  out += fmt::format("\nevents ({})\n", m.events.size());
  rows.clear();
  for (const ir::Event& e : m.events)
    rows.push_back({e.name, ir::shapeToString(e.shape), "init " + ir::toString(e.init),
                    fmt::format("{} counters at most", maxProduct(e.shape, env))});
  out += table(rows);

  out += fmt::format("\ntasks ({})\n", m.tasks.size());
  rows.clear();
  for (const ir::Task& t : m.tasks) {
    size_t waits = 0, notifies = 0, calls = 0;
    for (const ir::TaskStmt& s : t.body) {
      waits += std::holds_alternative<ir::WaitStmt>(s);
      notifies += std::holds_alternative<ir::NotifyStmt>(s);
      calls += std::holds_alternative<ir::CallStmt>(s);
    }
    rows.push_back({"@" + t.name, "grid " + ir::shapeToString(t.grid),
                    fmt::format("{} tasks at most", maxProduct(t.grid, env)),
                    fmt::format("{} op{}, {} wait{}, {} notif{}", calls, calls == 1 ? "" : "s", waits,
                                waits == 1 ? "" : "s", notifies, notifies == 1 ? "y" : "ies")});
  }
  out += table(rows);

  out += fmt::format("\ngraphs ({})\n", m.graphs.size());
  rows.clear();
  for (const ir::Graph& g : m.graphs) {
    size_t runs = 0, ops = 0;
    std::string op_names;
    for (const ir::GraphStmt& s : g.body) {
      if (const auto* a = std::get_if<ir::AssignStmt>(&s)) {
        ++ops;
        if (op_names.find(a->call.op) == std::string::npos) op_names += (op_names.empty() ? "" : " ") + a->call.op;
      } else {
        ++runs;
      }
    }
    rows.push_back({"@" + g.name, fmt::format("schedule {}", ir::scheduleName(g.schedule)),
                    fmt::format("{} op statement{}, {} run{}", ops, ops == 1 ? "" : "s", runs, runs == 1 ? "" : "s"),
                    op_names.empty() ? "" : "ops: " + op_names});
  }
  out += table(rows);
  return out;
}

}  // namespace etc
