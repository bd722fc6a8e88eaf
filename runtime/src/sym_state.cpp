#include "sym_state.h"

#include "expr_eval.h"
#include "rt_error.h"

namespace etc::rt {
namespace {

// The first sym an expression uses that has no value, or -1.
int firstUnset(const nlohmann::json& e, const std::vector<std::optional<int64_t>>& syms) {
  if (!e.is_array()) return -1;
  if (e[0] == "sym") {
    int i = e[1].get<int>();
    return syms[i] ? -1 : i;
  }
  for (size_t k = 1; k < e.size(); ++k)
    if (int i = firstUnset(e[k], syms); i >= 0) return i;
  return -1;
}

std::string listText(const std::vector<std::string>& parts) {
  std::string out = "[";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out + "]";
}

}  // namespace

std::string shapeToText(const std::vector<int64_t>& shape) {
  std::vector<std::string> parts;
  for (int64_t x : shape) parts.push_back(std::to_string(x));
  return listText(parts);
}

void SymState::setSym(std::string_view name, int64_t value) {
  int i = d_.findSym(name);
  if (i < 0) {
    std::string known;
    for (const SymDesc& s : d_.syms) known += (known.empty() ? "" : ", ") + s.name;
    fail(ETC_STATUS_NOT_FOUND, "no sym named '" + std::string(name) + "' (the module's syms: " +
                                   (known.empty() ? "none" : known) + ")");
  }
  const SymDesc& s = d_.syms[i];
  if (value < s.lo || value > s.hi)
    fail(ETC_STATUS_BAD_SYM, "sym " + s.name + " = " + std::to_string(value) + " is outside its range [" +
                                 std::to_string(s.lo) + ", " + std::to_string(s.hi) + "]");
  if (!syms_[i]) --unset_;
  syms_[i] = value;
  values_[i] = value;
  ++version_;
}

int64_t SymState::sym(std::string_view name) const {
  int i = d_.findSym(name);
  if (i < 0) fail(ETC_STATUS_NOT_FOUND, "no sym named '" + std::string(name) + "'");
  if (!syms_[i]) fail(ETC_STATUS_BAD_SYM, "sym " + d_.syms[i].name + " is not set");
  return *syms_[i];
}

std::vector<int64_t> SymState::symValues() const {
  std::vector<int64_t> out;
  for (size_t i = 0; i < syms_.size(); ++i) {
    if (!syms_[i]) fail(ETC_STATUS_BAD_SYM, "sym " + d_.syms[i].name + " is not set");
    out.push_back(*syms_[i]);
  }
  return out;
}

std::vector<int64_t> SymState::evalShape(const std::vector<nlohmann::json>& shape, const char* kind,
                                         const std::string& name) const {
  auto what = [&] { return std::string(kind) + " " + name; };
  std::vector<int64_t> out;
  out.reserve(shape.size());
  for (const nlohmann::json& e : shape) {
    if (unset_ > 0)
      if (int u = firstUnset(e, syms_); u >= 0)
        fail(ETC_STATUS_BAD_SYM, "sym " + d_.syms[u].name + " is not set (the shape of " + what() + " needs it)");
    int64_t x;
    try {
      x = evalExpr(e, values_);
    } catch (const Error& err) {
      fail(err.status(), what() + ": " + err.what());
    }
    if (x < 0) fail(ETC_STATUS_BAD_SHAPE, what() + " has a negative extent " + std::to_string(x) + " for these syms");
    out.push_back(x);
  }
  return out;
}

std::vector<int64_t> SymState::tensorShape(size_t tensor) const {
  return evalShape(d_.tensors[tensor].shape, "tensor", d_.tensors[tensor].name);
}

std::vector<int64_t> SymState::eventShape(size_t event) const {
  return evalShape(d_.events[event].shape, "event", d_.events[event].name);
}

void SymState::checkBinding(size_t tensor, const Binding& b) const {
  const TensorDesc& t = d_.tensors[tensor];
  if (b.dtype != t.dtype)
    fail(ETC_STATUS_BAD_BINDING, "tensor " + t.name + " is " + dtypeName(t.dtype) + ", the buffer bound to it is " + dtypeName(b.dtype));
  std::vector<int64_t> want = tensorShape(tensor);
  if (b.shape != want)
    fail(ETC_STATUS_BAD_BINDING, "tensor " + t.name + " has shape " + listText(t.shape_text) + " = " + shapeToText(want) +
                                     " for these syms, the buffer bound to it has shape " + shapeToText(b.shape));
}

size_t SymState::bindable(std::string_view name) const {
  int i = d_.findTensor(name);
  if (i < 0) fail(ETC_STATUS_NOT_FOUND, "no tensor named '" + std::string(name) + "'");
  if (d_.tensors[i].role == ETC_ROLE_TEMP)
    fail(ETC_STATUS_BAD_BINDING, "tensor " + d_.tensors[i].name + " is a temp: the runtime allocates it");
  return static_cast<size_t>(i);
}

void SymState::bind(std::string_view name, etc_devptr ptr, etc_dtype dtype, std::vector<int64_t> shape) {
  size_t i = bindable(name);
  const TensorDesc& t = d_.tensors[i];
  if (ptr == 0) fail(ETC_STATUS_BAD_BINDING, "tensor " + t.name + ": the device pointer is null");
  Binding b{true, ptr, dtype, std::move(shape)};
  bool syms_known = true;
  for (const nlohmann::json& e : t.shape) syms_known = syms_known && firstUnset(e, syms_) < 0;
  if (syms_known) checkBinding(i, b);
  else if (b.dtype != t.dtype)
    fail(ETC_STATUS_BAD_BINDING, "tensor " + t.name + " is " + dtypeName(t.dtype) + ", the buffer bound to it is " + dtypeName(b.dtype));
  bindings_[i] = std::move(b);
  ++version_;
}

void SymState::unbind(std::string_view name) {
  bindings_[bindable(name)] = Binding{};
  ++version_;
}

void SymState::checkBindings() const {
  for (size_t i = 0; i < d_.tensors.size(); ++i) {
    const TensorDesc& t = d_.tensors[i];
    if (t.role == ETC_ROLE_TEMP) continue;
    if (!bindings_[i].bound) fail(ETC_STATUS_BAD_BINDING, "tensor " + t.name + " (" + roleName(t.role) + ") is not bound");
    checkBinding(i, bindings_[i]);
  }
}

}  // namespace etc::rt
