#include "compiler/ir/ir.h"

#include <fmt/format.h>

#include <algorithm>

namespace etc::ir {

namespace {

template <class E, size_t N>
std::optional<E> lookupName(std::string_view name, const std::string_view (&names)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<E>(i);
  return std::nullopt;
}

constexpr std::string_view kRoleNames[] = {"input", "output", "param", "temp"};
constexpr std::string_view kScheduleNames[] = {"auto", "static", "dynamic"};

}  // namespace

std::string_view roleName(Role r) { return kRoleNames[static_cast<int>(r)]; }
std::optional<Role> parseRole(std::string_view name) { return lookupName<Role>(name, kRoleNames); }
std::string_view scheduleName(Schedule s) { return kScheduleNames[static_cast<int>(s)]; }
std::optional<Schedule> parseSchedule(std::string_view name) { return lookupName<Schedule>(name, kScheduleNames); }

const Attr* OpCall::findAttr(std::string_view name) const {
  for (const Attr& a : attrs)
    if (a.name == name) return &a;
  return nullptr;
}

// Appends `item` to its table, indexes its name and records where it was declared.
template <class T, class Index>
uint32_t Module::append(std::vector<T>& table, T item, DeclKind kind, Index& index, bool in_order) {
  auto id = static_cast<uint32_t>(table.size());
  if constexpr (std::is_same_v<Index, NameIndex<DeclRef>>)
    index.insert(item.name, DeclRef{kind, id});
  else
    index.insert(item.name, id);
  if (in_order) order.push_back({kind, id});
  table.push_back(std::move(item));
  return id;
}

void Module::reserve(size_t n_syms, size_t n_consts, size_t n_tensors, size_t n_events, size_t n_tasks,
                     size_t n_graphs) {
  syms.reserve(n_syms);
  consts.reserve(n_consts);
  tensors.reserve(n_tensors);
  events.reserve(n_events);
  tasks.reserve(n_tasks);
  graphs.reserve(n_graphs);
  order.reserve(n_syms + n_consts + n_tensors + n_events + n_tasks + n_graphs);
  values_.reserve(n_syms + n_consts + n_tensors + n_events);
  tasks_.reserve(n_tasks);
  graphs_.reserve(n_graphs);
}

uint32_t Module::addSym(Sym s) { return append(syms, std::move(s), DeclKind::Sym, values_, true); }
uint32_t Module::addConst(Const c) { return append(consts, std::move(c), DeclKind::Const, values_, true); }
uint32_t Module::addTensor(Tensor t) {
  bool in_order = !t.implicit;  // implicit tensors print as their assignment, not as a decl
  return append(tensors, std::move(t), DeclKind::Tensor, values_, in_order);
}
uint32_t Module::addEvent(Event e) { return append(events, std::move(e), DeclKind::Event, values_, true); }
uint32_t Module::addTask(Task t) { return append(tasks, std::move(t), DeclKind::Task, tasks_, true); }
uint32_t Module::addGraph(Graph g) { return append(graphs, std::move(g), DeclKind::Graph, graphs_, true); }

std::optional<Module::DeclRef> Module::findValue(std::string_view name) const {
  const DeclRef* r = values_.find(name);
  if (!r) return std::nullopt;
  return *r;
}

namespace {
std::optional<uint32_t> ofKind(std::optional<Module::DeclRef> r, Module::DeclKind k) {
  if (r && r->kind == k) return r->index;
  return std::nullopt;
}
std::optional<uint32_t> findIn(const NameIndex<uint32_t>& index, std::string_view name) {
  const uint32_t* id = index.find(name);
  if (!id) return std::nullopt;
  return *id;
}
}  // namespace

std::optional<uint32_t> Module::findTensor(std::string_view n) const { return ofKind(findValue(n), DeclKind::Tensor); }
std::optional<uint32_t> Module::findEvent(std::string_view n) const { return ofKind(findValue(n), DeclKind::Event); }
std::optional<uint32_t> Module::findSym(std::string_view n) const { return ofKind(findValue(n), DeclKind::Sym); }
std::optional<uint32_t> Module::findTask(std::string_view n) const { return findIn(tasks_, n); }
std::optional<uint32_t> Module::findGraph(std::string_view n) const { return findIn(graphs_, n); }

bool gridReadsData(const Task& t) {
  return std::any_of(t.grid.begin(), t.grid.end(), [](const Expr& e) { return hasLoad(e); });
}

bool writesGridData(const Task& p, const Task& t) {
  std::vector<uint32_t> loaded;
  for (const Expr& e : t.grid)
    forEachLeaf(e, [&](const ExprNode& n) {
      if (n.kind == ExprKind::Load) loaded.push_back(n.id);
    });
  for (const TaskStmt& st : p.body)
    if (const auto* c = std::get_if<CallStmt>(&st))
      for (const Slice& d : c->dests)
        if (std::count(loaded.begin(), loaded.end(), d.target) > 0) return true;
  return false;
}

bool waitOrdersGridData(const Module& m, const Task& t, uint32_t event) {
  if (!gridReadsData(t)) return false;
  for (const Task& u : m.tasks)
    for (const TaskStmt& st : u.body)
      if (const auto* n = std::get_if<NotifyStmt>(&st); n && n->event.target == event && writesGridData(u, t)) return true;
  return false;
}

std::optional<std::vector<std::pair<int64_t, int64_t>>> symCutRanges(const Sym& s, const std::vector<int64_t>& cuts,
                                                                   std::string& why, size_t* bad) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  int64_t lo = s.lo;
  for (size_t i = 0; i < cuts.size(); ++i) {
    const int64_t c = cuts[i];
    if (c <= lo || c > s.hi) {
      if (bad) *bad = i;
      why = fmt::format("cut {} of sym '{}' is not in ({}, {}]: the cuts must increase and stay within the sym's "
                        "range [{}, {}]",
                        c, s.name, lo, s.hi, s.lo, s.hi);
      return std::nullopt;
    }
    ranges.emplace_back(lo, c - 1);
    lo = c;
  }
  ranges.emplace_back(lo, s.hi);
  return ranges;
}

RangeEnv Module::symRanges() const {
  RangeEnv env;
  env.sym = [this](uint32_t id) -> std::optional<Interval> {
    if (id >= syms.size()) return std::nullopt;
    return Interval{syms[id].lo, syms[id].hi};
  };
  return env;
}

RangeEnv Module::symRangesWith(uint32_t sym, int64_t lo, int64_t hi) const {
  RangeEnv env = symRanges();
  env.sym = [base = env.sym, sym, lo, hi](uint32_t s) -> std::optional<Interval> {
    if (s == sym) return Interval{lo, hi};
    return base(s);
  };
  return env;
}

RangeEnv Module::gridRanges(std::vector<Expr> grid) const { return gridRanges(std::move(grid), symRanges()); }

RangeEnv Module::gridRanges(std::vector<Expr> grid, const RangeEnv& syms) const {
  RangeEnv env = syms;
  env.coord = [grid = std::move(grid), syms](uint32_t id) -> std::optional<Interval> {
    if (id >= grid.size()) return std::nullopt;
    Interval ext = bounds(grid[id], syms);
    if (ext.upperUnbounded()) return Interval{0, Interval::all().hi};
    return Interval{0, std::max<int64_t>(0, ext.hi - 1)};
  };
  return env;
}

}  // namespace etc::ir
