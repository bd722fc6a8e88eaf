#include "params.h"

#include <cstring>

#include "expr_eval.h"
#include "rt_error.h"

namespace etc::rt {
namespace {

template <typename T>
void put(std::vector<unsigned char>& buf, size_t offset, T value) {
  std::memcpy(buf.data() + offset, &value, sizeof(T));
}

}  // namespace

std::vector<unsigned char> buildParams(const Descriptor& d, const std::vector<int64_t>& syms,
                                       const std::vector<uint64_t>& tensor_ptrs, uint64_t events, uint64_t error,
                                       int64_t watchdog_ns, uint32_t flags, uint64_t tmaps) {
  if (syms.size() != d.syms.size() || tensor_ptrs.size() != d.tensors.size())
    fail(ETC_STATUS_INTERNAL, "buildParams: sym or tensor count differs from the descriptor");
  const size_t ns = std::max<size_t>(syms.size(), 1), nt = std::max<size_t>(tensor_ptrs.size(), 1);
  std::vector<unsigned char> buf(static_cast<size_t>(d.params_bytes), 0);
  for (size_t i = 0; i < syms.size(); ++i) put<int64_t>(buf, 8 * i, syms[i]);
  for (size_t i = 0; i < tensor_ptrs.size(); ++i) put<uint64_t>(buf, 8 * (ns + i), tensor_ptrs[i]);
  const size_t tail = 8 * (ns + nt);
  put<uint64_t>(buf, tail + 0, events);
  put<uint64_t>(buf, tail + 8, error);
  put<int64_t>(buf, tail + 16, watchdog_ns);
  put<uint32_t>(buf, tail + 24, flags);
  put<uint64_t>(buf, tail + 32, tmaps);
  for (size_t i = 0; i < d.derived.size(); ++i) {
    int64_t v = 0;
    try {
      v = evalExpr(d.derived[i], syms);
    } catch (const Error& e) {
      // etcc keeps a derived sym only where the sym ranges prove it evaluable, and binding
      // checks the ranges: failing here means a descriptor that etcc did not write.
      fail(ETC_STATUS_BAD_DESCRIPTOR, "descriptor: derived sym " + std::to_string(i) + " (" + d.derived_text[i] +
                                          "): " + e.what());
    }
    put<int64_t>(buf, tail + ETC_PARAMS_TAIL_BYTES + 8 * i, v);
  }
  return buf;
}

std::vector<unsigned char> launchParams(const Descriptor& d, const SymState& st, const std::vector<int64_t>& syms,
                                        const WorkspaceLayout& layout, uint64_t ws, int64_t watchdog_ns, uint32_t flags,
                                        uint64_t tmaps) {
  std::vector<uint64_t> ptrs;
  ptrs.reserve(d.tensors.size());
  for (size_t i = 0; i < d.tensors.size(); ++i)
    ptrs.push_back(d.tensors[i].role == ETC_ROLE_TEMP ? ws + layout.tensor_offset[i] : st.binding(i).ptr);
  return buildParams(d, syms, ptrs, ws + layout.events_offset, ws + layout.error_offset, watchdog_ns, flags, tmaps);
}

}  // namespace etc::rt
