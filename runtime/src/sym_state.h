// Host-side state of an opened module that needs no GPU: the sym values, the tensor and event
// shapes they give, and the user's bindings (checked against those shapes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "descriptor.h"

namespace etc::rt {

struct Binding {
  bool bound = false;
  etc_devptr ptr = 0;
  etc_dtype dtype = ETC_DTYPE_F32;
  std::vector<int64_t> shape;
};

class SymState {
 public:
  explicit SymState(const Descriptor& d)
      : d_(d), syms_(d.syms.size()), values_(d.syms.size(), 0), unset_(d.syms.size()), bindings_(d.tensors.size()) {}

  // Range-checked: "sym B = 200 is outside its range [1, 128]".
  void setSym(std::string_view name, int64_t value);
  int64_t sym(std::string_view name) const;  // throws if unset
  // All sym values, in declaration order; throws "sym B is not set" for the first unset one.
  std::vector<int64_t> symValues() const;
  // Extents for the current syms; throws naming the unset sym and the tensor that needs it.
  std::vector<int64_t> tensorShape(size_t tensor) const;
  std::vector<int64_t> eventShape(size_t event) const;

  // Checks dtype and shape now when the syms it needs are set (and always at launch).
  void bind(std::string_view name, etc_devptr ptr, etc_dtype dtype, std::vector<int64_t> shape);
  // Forgets a binding, so that its memory may be freed: a launch then fails until it is bound again.
  void unbind(std::string_view name);
  // Every input, output and param bound, with the dtype and shape the current syms give.
  void checkBindings() const;
  const Binding& binding(size_t tensor) const { return bindings_[tensor]; }
  // Counts the changes made (every setSym and bind that succeeded): equal versions of one
  // SymState give the same syms, shapes and bindings, so a launch may reuse what it derived.
  uint64_t version() const { return version_; }

 private:
  // `kind` and `name` name the shape's owner in an error ("tensor x"): the text is built only
  // then, since a launch after any change evaluates every tensor's shape.
  std::vector<int64_t> evalShape(const std::vector<nlohmann::json>& shape, const char* kind, const std::string& name) const;
  void checkBinding(size_t tensor, const Binding& b) const;
  size_t bindable(std::string_view name) const;  // an input, output or param's index, or throws

  const Descriptor& d_;
  std::vector<std::optional<int64_t>> syms_;
  std::vector<int64_t> values_;  // syms_ with 0 for an unset one (what evalExpr takes)
  size_t unset_ = 0;             // syms without a value
  std::vector<Binding> bindings_;
  uint64_t version_ = 0;
};

std::string shapeToText(const std::vector<int64_t>& shape);  // "[4, 2048]"

}  // namespace etc::rt
