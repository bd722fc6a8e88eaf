#include "workspace.h"

#include <limits>

#include "etc/abi.h"
#include "rt_error.h"

namespace etc::rt {
namespace {

// `what` and `name` say where an overflow happened ("temp t"); the text is built only then, as
// a launch after any change lays out every temp.
[[noreturn]] void overflows(const char* what, const std::string& name) {
  fail(ETC_STATUS_BAD_SHAPE, std::string("the workspace size overflows (at ") + what + name + ")");
}

uint64_t alignUp(uint64_t x, const char* what, const std::string& name = {}) {
  uint64_t r;
  if (__builtin_add_overflow(x, kWorkspaceAlign - 1, &r)) overflows(what, name);
  return r / kWorkspaceAlign * kWorkspaceAlign;
}

uint64_t addChecked(uint64_t a, uint64_t b, const char* what, const std::string& name = {}) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) overflows(what, name);
  return r;
}

}  // namespace

uint64_t tensorBytes(etc_dtype dtype, const std::vector<int64_t>& shape, const std::string& name) {
  uint64_t n = static_cast<uint64_t>(dtypeBytes(dtype));
  for (int64_t x : shape)
    if (x < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(x), &n))
      fail(ETC_STATUS_BAD_SHAPE, "the size of tensor " + name + " overflows 64 bits");
  return n;
}

WorkspaceLayout layoutWorkspace(const Descriptor& d, const std::vector<std::vector<int64_t>>& tensor_shapes) {
  WorkspaceLayout w;
  w.error_offset = 0;
  w.events_offset = alignUp(sizeof(EtcError), "the error record");
  // At least one word, so that the kernel's events pointer is never null.
  w.events_bytes = 4 * static_cast<uint64_t>(std::max<int64_t>(d.event_words, 1));
  uint64_t end = addChecked(w.events_offset, w.events_bytes, "the event counters");
  w.tensor_offset.assign(d.tensors.size(), std::numeric_limits<uint64_t>::max());
  for (size_t i = 0; i < d.tensors.size(); ++i) {
    if (d.tensors[i].role != ETC_ROLE_TEMP) continue;
    const std::string& name = d.tensors[i].name;
    w.tensor_offset[i] = alignUp(end, "temp ", name);
    end = addChecked(w.tensor_offset[i], tensorBytes(d.tensors[i].dtype, tensor_shapes[i], name), "temp ", name);
  }
  w.total = alignUp(end, "the end");
  return w;
}

WorkspaceLayout layoutWorkspace(const Descriptor& d, const SymState& st) {
  std::vector<std::vector<int64_t>> shapes;
  shapes.reserve(d.tensors.size());
  for (size_t i = 0; i < d.tensors.size(); ++i) shapes.push_back(st.tensorShape(i));
  return layoutWorkspace(d, shapes);
}

}  // namespace etc::rt
