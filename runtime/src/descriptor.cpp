#include "descriptor.h"

#include <set>

#include "etc/abi.h"
#include "expr_eval.h"
#include "rt_error.h"

namespace etc::rt {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& what) { fail(ETC_STATUS_BAD_DESCRIPTOR, "descriptor: " + what); }

const json& field(const json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) bad(where + " has no \"" + key + "\"");
  return *it;
}

std::string str(const json& obj, const char* key, const std::string& where) {
  const json& v = field(obj, key, where);
  if (!v.is_string()) bad(where + ": \"" + key + "\" is not a string");
  return v.get<std::string>();
}

int64_t integer(const json& obj, const char* key, const std::string& where) {
  const json& v = field(obj, key, where);
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX))
    bad(where + ": \"" + key + "\" is not an integer");
  return v.get<int64_t>();
}

const json& array(const json& obj, const char* key, const std::string& where) {
  const json& v = field(obj, key, where);
  if (!v.is_array()) bad(where + ": \"" + key + "\" is not an array");
  return v;
}

std::vector<std::string> strings(const json& arr, const std::string& where) {
  std::vector<std::string> out;
  for (const json& s : arr) {
    if (!s.is_string()) bad(where + " holds a non-string");
    out.push_back(s.get<std::string>());
  }
  return out;
}

void checkUnique(std::set<std::string>& seen, const std::string& name, const std::string& kind) {
  if (name.empty()) bad("a " + kind + " has an empty name");
  if (!seen.insert(name).second) bad(kind + " '" + name + "' is listed twice");
}

std::vector<json> shapeOf(const json& obj, const std::string& where, size_t nsyms) {
  const json& shape = array(obj, "shape", where);
  if (shape.size() > ETC_MAX_RANK)
    bad(where + " has rank " + std::to_string(shape.size()) + ", above the limit " + std::to_string(ETC_MAX_RANK));
  std::vector<json> out;
  for (const json& e : shape) {
    try {
      checkExpr(e, nsyms);
    } catch (const Error& err) {
      bad(where + ": " + err.what());
    }
    out.push_back(e);
  }
  return out;
}

KernelDesc kernelOf(const json& obj, const std::string& where, size_t ntasks, bool unfused) {
  KernelDesc k;
  k.name = str(obj, "kernel", where);
  if (k.name.empty()) bad(where + " has an empty kernel name");
  int64_t threads = integer(obj, "threads", where);
  if (threads < 1 || threads > 1024) bad(where + ": threads " + std::to_string(threads) + " is outside [1, 1024]");
  k.threads = static_cast<int>(threads);
  if (unfused) {
    int64_t task = integer(obj, "task", where);
    if (task < 0 || static_cast<uint64_t>(task) >= ntasks)
      bad(where + ": task " + std::to_string(task) + " is not a task index (there are " + std::to_string(ntasks) + ")");
    k.task = static_cast<int>(task);
  }
  if (obj.contains("max_ctas")) {
    k.max_ctas = integer(obj, "max_ctas", where);
    if (k.max_ctas < 1) bad(where + ": max_ctas " + std::to_string(k.max_ctas) + " is not positive");
  }
  return k;
}

// etcc --specialize: a megakernel per range of one sym, the ranges in order, adjacent, and
// covering the sym's range, so that every value the sym may take picks exactly one.
std::vector<KernelDesc> rangedMegas(const json& list, const std::string& where, const Descriptor& d) {
  std::vector<KernelDesc> out;
  for (const json& k : list) {
    const std::string at = where + " mega " + std::to_string(out.size());
    if (!k.is_object()) bad(at + " is not an object");
    KernelDesc kd = kernelOf(k, at, d.tasks.size(), false);
    const json& when = field(k, "when", at);
    if (!when.is_object()) bad(at + ": \"when\" is not an object");
    const int64_t sym = integer(when, "sym", at + " when");
    if (sym < 0 || static_cast<uint64_t>(sym) >= d.syms.size())
      bad(at + ": when.sym " + std::to_string(sym) + " is not a sym index (there are " + std::to_string(d.syms.size()) + ")");
    kd.when_sym = static_cast<int>(sym);
    kd.when_lo = integer(when, "lo", at + " when");
    kd.when_hi = integer(when, "hi", at + " when");
    const SymDesc& s = d.syms[kd.when_sym];
    const int64_t want_lo = out.empty() ? s.lo : out.back().when_hi + 1;
    if (!out.empty() && kd.when_sym != out.front().when_sym) bad(at + ": its range is of another sym than the first's");
    if (kd.when_lo != want_lo || kd.when_hi < kd.when_lo || kd.when_hi > s.hi)
      bad(at + ": range [" + std::to_string(kd.when_lo) + ", " + std::to_string(kd.when_hi) + "] of sym " + s.name +
          " does not continue the ranges before it from " + std::to_string(want_lo) + " within [" +
          std::to_string(s.lo) + ", " + std::to_string(s.hi) + "]");
    out.push_back(std::move(kd));
  }
  if (out.back().when_hi != d.syms[out.back().when_sym].hi)
    bad(where + ": the megakernels' ranges end at " + std::to_string(out.back().when_hi) + ", short of sym " +
        d.syms[out.back().when_sym].name + "'s " + std::to_string(d.syms[out.back().when_sym].hi));
  return out;
}

}  // namespace

size_t GraphDesc::megaFor(const std::vector<int64_t>& syms) const {
  for (size_t i = 0; i < megas.size(); ++i) {
    const KernelDesc& k = megas[i];
    if (k.when_sym < 0) return i;
    const int64_t v = static_cast<size_t>(k.when_sym) < syms.size() ? syms[k.when_sym] : k.when_lo;
    if (v >= k.when_lo && v <= k.when_hi) return i;
  }
  return 0;  // unreachable for a parsed descriptor: the ranges cover the sym's range
}

const char* dtypeName(etc_dtype t) {
  switch (t) {
    case ETC_DTYPE_F32: return "f32";
    case ETC_DTYPE_F16: return "f16";
    case ETC_DTYPE_BF16: return "bf16";
    case ETC_DTYPE_I32: return "i32";
    case ETC_DTYPE_I64: return "i64";
    case ETC_DTYPE_U8: return "u8";
  }
  return "?";
}

bool parseDtype(std::string_view name, etc_dtype* out) {
  for (etc_dtype t : {ETC_DTYPE_F32, ETC_DTYPE_F16, ETC_DTYPE_BF16, ETC_DTYPE_I32, ETC_DTYPE_I64, ETC_DTYPE_U8}) {
    if (name == dtypeName(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

int dtypeBytes(etc_dtype t) {
  switch (t) {
    case ETC_DTYPE_F32: case ETC_DTYPE_I32: return 4;
    case ETC_DTYPE_F16: case ETC_DTYPE_BF16: return 2;
    case ETC_DTYPE_I64: return 8;
    case ETC_DTYPE_U8: return 1;
  }
  return 0;
}

const char* roleName(etc_role r) {
  switch (r) {
    case ETC_ROLE_INPUT: return "input";
    case ETC_ROLE_OUTPUT: return "output";
    case ETC_ROLE_PARAM: return "param";
    case ETC_ROLE_TEMP: return "temp";
  }
  return "?";
}

int64_t paramsBytes(size_t nsyms, size_t ntensors, size_t nderived) {
  // abi.h: at least one slot each, even for a module with no syms or tensors.
  return 8 * static_cast<int64_t>(std::max<size_t>(nsyms, 1) + std::max<size_t>(ntensors, 1) + nderived) +
         ETC_PARAMS_TAIL_BYTES;
}

std::vector<std::string> Descriptor::symNames() const {
  std::vector<std::string> out;
  for (const SymDesc& s : syms) out.push_back(s.name);
  return out;
}

int Descriptor::findSym(std::string_view name) const {
  for (size_t i = 0; i < syms.size(); ++i)
    if (syms[i].name == name) return static_cast<int>(i);
  return -1;
}

int Descriptor::findTensor(std::string_view name) const {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == name) return static_cast<int>(i);
  return -1;
}

int Descriptor::findGraph(std::string_view name) const {
  for (size_t i = 0; i < graphs.size(); ++i)
    if (graphs[i].name == name) return static_cast<int>(i);
  return -1;
}

Descriptor parseDescriptor(std::string_view json_text) {
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) bad("not valid JSON");
  if (!j.is_object()) bad("not a JSON object");
  Descriptor d;
  d.text = std::string(json_text);
  const std::string top = "the descriptor";
  std::string format = str(j, "format", top);
  if (format != "etc.module") bad("format is \"" + format + "\", expected \"etc.module\"");
  int64_t abi = integer(j, "abi", top);
  if (abi != ETC_ABI_VERSION)
    bad("abi " + std::to_string(abi) + " is not supported (this runtime supports abi " + std::to_string(ETC_ABI_VERSION) +
        "): " +
        (abi > ETC_ABI_VERSION ? "the fatbin comes from a newer etcc; run it with that release's runtime or "
                               : "the fatbin comes from an older etcc; ") +
        "compile the module again with the etcc of this runtime");
  d.module = str(j, "module", top);
  d.compiler = j.contains("compiler") ? str(j, "compiler", top) : "";
  d.ir = str(j, "ir", top);
  d.archs = strings(array(j, "archs", top), "\"archs\"");

  std::set<std::string> names;
  for (const json& s : array(j, "syms", top)) {
    SymDesc sym{str(s, "name", "a sym"), 0, 0};
    std::string where = "sym " + sym.name;
    sym.lo = integer(s, "lo", where);
    sym.hi = integer(s, "hi", where);
    if (sym.lo > sym.hi) bad(where + " has an empty range [" + std::to_string(sym.lo) + ", " + std::to_string(sym.hi) + "]");
    checkUnique(names, sym.name, "sym");
    d.syms.push_back(std::move(sym));
  }
  const std::vector<std::string> sym_names = d.symNames();

  names.clear();
  for (const json& t : array(j, "tensors", top)) {
    TensorDesc td;
    td.name = str(t, "name", "a tensor");
    std::string where = "tensor " + td.name;
    checkUnique(names, td.name, "tensor");
    std::string dt = str(t, "dtype", where);
    if (!parseDtype(dt, &td.dtype)) bad(where + " has unknown dtype \"" + dt + "\"");
    std::string role = str(t, "role", where);
    bool found = false;
    for (etc_role r : {ETC_ROLE_INPUT, ETC_ROLE_OUTPUT, ETC_ROLE_PARAM, ETC_ROLE_TEMP}) {
      if (role == roleName(r)) td.role = r, found = true;
    }
    if (!found) bad(where + " has unknown role \"" + role + "\"");
    td.shape = shapeOf(t, where, d.syms.size());
    if (t.contains("shape_text")) {
      td.shape_text = strings(array(t, "shape_text", where), where + " shape_text");
      if (td.shape_text.size() != td.shape.size()) bad(where + ": shape_text and shape differ in rank");
    } else {
      for (const json& e : td.shape) td.shape_text.push_back(exprToText(e, sym_names));
    }
    d.tensors.push_back(std::move(td));
  }

  d.event_words = integer(j, "event_words", top);
  if (d.event_words < 0) bad("event_words is negative");
  names.clear();
  for (const json& e : array(j, "events", top)) {
    EventDesc ed;
    ed.name = str(e, "name", "an event");
    std::string where = "event " + ed.name;
    checkUnique(names, ed.name, "event");
    ed.shape = shapeOf(e, where, d.syms.size());
    for (const json& x : ed.shape) ed.shape_text.push_back(exprToText(x, sym_names));
    ed.offset = integer(e, "offset", where);
    ed.max_elements = integer(e, "max_elements", where);
    if (ed.offset < 0 || ed.max_elements < 0 || ed.max_elements > d.event_words || ed.offset > d.event_words - ed.max_elements)
      bad(where + ": words [" + std::to_string(ed.offset) + ", +" + std::to_string(ed.max_elements) +
          ") are outside event_words " + std::to_string(d.event_words));
    d.events.push_back(std::move(ed));
  }

  names.clear();
  for (const json& t : array(j, "tasks", top)) {
    TaskDesc td{str(t, "name", "a task"), {}};
    if (t.contains("grid_text")) td.grid_text = strings(array(t, "grid_text", "task " + td.name), "task " + td.name + " grid_text");
    checkUnique(names, td.name, "task");
    d.tasks.push_back(std::move(td));
  }

  names.clear();
  for (const json& g : array(j, "graphs", top)) {
    GraphDesc gd;
    gd.name = str(g, "name", "a graph");
    std::string where = "graph " + gd.name;
    checkUnique(names, gd.name, "graph");
    gd.schedule = g.contains("schedule") ? str(g, "schedule", where) : "static";
    if (gd.schedule != "static" && gd.schedule != "dynamic") bad(where + ": unknown schedule \"" + gd.schedule + "\"");
    const json& mega = field(g, "mega", where);
    if (mega.is_object()) {
      gd.megas.push_back(kernelOf(mega, where + " mega", d.tasks.size(), false));
    } else if (mega.is_array() && !mega.empty()) {
      gd.megas = rangedMegas(mega, where, d);
    } else {
      bad(where + ": \"mega\" is neither an object nor a non-empty list");
    }
    gd.has_unfused = !field(g, "unfused", where).is_null();
    if (gd.has_unfused)
      for (const json& k : array(g, "unfused", where))
        gd.unfused.push_back(kernelOf(k, where + " unfused kernel", d.tasks.size(), true));
    d.graphs.push_back(std::move(gd));
  }
  if (d.graphs.empty()) bad("the module has no graphs");

  if (j.contains("derived"))
    for (const json& x : array(j, "derived", top)) {
      const std::string where = "derived sym " + std::to_string(d.derived.size());
      if (!x.is_object()) bad(where + " is not an object");
      const json& e = field(x, "expr", where);
      try {
        checkExpr(e, d.syms.size());
      } catch (const Error& err) {
        bad(where + ": " + err.what());
      }
      d.derived.push_back(e);
      d.derived_text.push_back(exprToText(e, sym_names));
    }

  if (j.contains("tmaps"))
    for (const json& x : array(j, "tmaps", top)) {
      const std::string where = "tmaps[" + std::to_string(d.tmaps.size()) + "]";
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= static_cast<int64_t>(d.tensors.size()))
        bad(where + " is not a tensor index");
      const auto t = x.get<uint32_t>();
      const TensorDesc& td = d.tensors[t];
      if (td.role != ETC_ROLE_PARAM || td.shape.size() != 2 || (td.dtype != ETC_DTYPE_BF16 && td.dtype != ETC_DTYPE_F16))
        bad(where + ": tensor '" + td.name + "' is not a rank-2 16-bit param");
      if (!d.tmaps.empty() && t <= d.tmaps.back()) bad(where + " is not in ascending order");
      d.tmaps.push_back(t);
    }

  d.params_bytes = integer(j, "params_bytes", top);
  int64_t want = paramsBytes(d.syms.size(), d.tensors.size(), d.derived.size());
  if (d.params_bytes != want)
    bad("params_bytes is " + std::to_string(d.params_bytes) + " but " + std::to_string(d.syms.size()) + " syms and " +
        std::to_string(d.tensors.size()) + " tensors" +
        (d.derived.empty() ? std::string() : " and " + std::to_string(d.derived.size()) + " derived syms") + " make " +
        std::to_string(want) + " (abi.h EtcParams)");
  if (j.contains("profile")) d.profile = parseProfile(j["profile"], d);
  return d;
}

}  // namespace etc::rt
