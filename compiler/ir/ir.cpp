#include "compiler/ir/ir.h"

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

uint32_t Module::addSym(Sym s) {
  auto id = static_cast<uint32_t>(syms.size());
  values_.emplace(s.name, DeclRef{DeclKind::Sym, id});
  order.push_back({DeclKind::Sym, id});
  syms.push_back(std::move(s));
  return id;
}

uint32_t Module::addConst(Const c) {
  auto id = static_cast<uint32_t>(consts.size());
  values_.emplace(c.name, DeclRef{DeclKind::Const, id});
  order.push_back({DeclKind::Const, id});
  consts.push_back(std::move(c));
  return id;
}

uint32_t Module::addTensor(Tensor t) {
  auto id = static_cast<uint32_t>(tensors.size());
  values_.emplace(t.name, DeclRef{DeclKind::Tensor, id});
  if (!t.implicit) order.push_back({DeclKind::Tensor, id});
  tensors.push_back(std::move(t));
  return id;
}

uint32_t Module::addEvent(Event e) {
  auto id = static_cast<uint32_t>(events.size());
  values_.emplace(e.name, DeclRef{DeclKind::Event, id});
  order.push_back({DeclKind::Event, id});
  events.push_back(std::move(e));
  return id;
}

uint32_t Module::addTask(Task t) {
  auto id = static_cast<uint32_t>(tasks.size());
  tasks_.emplace(t.name, id);
  order.push_back({DeclKind::Task, id});
  tasks.push_back(std::move(t));
  return id;
}

uint32_t Module::addGraph(Graph g) {
  auto id = static_cast<uint32_t>(graphs.size());
  graphs_.emplace(g.name, id);
  order.push_back({DeclKind::Graph, id});
  graphs.push_back(std::move(g));
  return id;
}

std::optional<Module::DeclRef> Module::findValue(std::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

namespace {
std::optional<uint32_t> ofKind(std::optional<Module::DeclRef> r, Module::DeclKind k) {
  if (r && r->kind == k) return r->index;
  return std::nullopt;
}
std::optional<uint32_t> findIn(const auto& map, std::string_view name) {
  auto it = map.find(name);
  if (it == map.end()) return std::nullopt;
  return it->second;
}
}  // namespace

std::optional<uint32_t> Module::findTensor(std::string_view n) const { return ofKind(findValue(n), DeclKind::Tensor); }
std::optional<uint32_t> Module::findEvent(std::string_view n) const { return ofKind(findValue(n), DeclKind::Event); }
std::optional<uint32_t> Module::findSym(std::string_view n) const { return ofKind(findValue(n), DeclKind::Sym); }
std::optional<uint32_t> Module::findTask(std::string_view n) const { return findIn(tasks_, n); }
std::optional<uint32_t> Module::findGraph(std::string_view n) const { return findIn(graphs_, n); }

RangeEnv Module::symRanges() const {
  RangeEnv env;
  env.sym = [this](uint32_t id) -> std::optional<Interval> {
    if (id >= syms.size()) return std::nullopt;
    return Interval{syms[id].lo, syms[id].hi};
  };
  return env;
}

}  // namespace etc::ir
