// The module descriptor (docs/backend.md, "The descriptor"): parsed and checked once, so that
// everything later may rely on its invariants (indices in range, expressions well formed,
// events inside event_words, params_bytes equal to the abi.h layout).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "etc/runtime.h"

namespace etc::rt {

struct SymDesc {
  std::string name;
  int64_t lo = 0, hi = 0;
};

struct TensorDesc {
  std::string name;
  etc_dtype dtype = ETC_DTYPE_F32;
  etc_role role = ETC_ROLE_INPUT;
  std::vector<nlohmann::json> shape;    // one expression per dimension
  std::vector<std::string> shape_text;  // as written in the source
};

struct EventDesc {
  std::string name;
  std::vector<nlohmann::json> shape;
  std::vector<std::string> shape_text;  // rendered from `shape`
  int64_t offset = 0, max_elements = 0;
};

struct TaskDesc {
  std::string name;
  std::vector<std::string> grid_text;
};

struct KernelDesc {
  std::string name;
  int threads = 0;
  int task = -1;  // unfused kernels: the task grid it runs; -1 for the megakernel
  int64_t max_ctas = 0;  // dynamic-schedule megakernels: the queue holds END words for this many CTAs; 0: no limit
  // A megakernel of one range of a sym (etcc --specialize): sym when_sym in [when_lo, when_hi];
  // -1: every value.
  int when_sym = -1;
  int64_t when_lo = 0, when_hi = 0;
};

struct GraphDesc {
  std::string name;
  std::string schedule;
  // The megakernel, or one per range of a sym (etcc --specialize), the ranges in order and
  // covering the sym's whole range (checked when parsed).
  std::vector<KernelDesc> megas;
  std::vector<KernelDesc> unfused;
  // false where etcc --megakernel-only left the unfused kernels out ("unfused": null).
  bool has_unfused = true;
  // The megakernel to launch at these sym values (SymState::symValues' order).
  size_t megaFor(const std::vector<int64_t>& syms) const;
};

// etcc --profile: where the megakernels' timeline records are (etc/abi.h EtcProfileRecord).
struct ProfileDesc {
  int64_t offset = -1;  // first word in the counter area; -1: the fatbin is not profiled
  int64_t max_records = 0;
  std::vector<std::vector<std::string>> task_ops;  // per task: the ops its body calls
};

struct Descriptor {
  std::string text;  // the raw JSON
  std::string module, compiler, ir;
  std::vector<std::string> archs;
  std::vector<SymDesc> syms;
  std::vector<TensorDesc> tensors;
  std::vector<EventDesc> events;
  int64_t event_words = 0;
  std::vector<TaskDesc> tasks;
  std::vector<GraphDesc> graphs;
  int64_t params_bytes = 0;
  // Derived syms (etcc's DerivedSyms): sym-only expressions whose values EtcParams holds after
  // its tail, evaluated at each binding of the syms.
  std::vector<nlohmann::json> derived;
  std::vector<std::string> derived_text;  // rendered from `derived`
  // Tensors whose TMA tensor maps the runtime makes (etc/device/tma.cuh), ascending: rank-2
  // 16-bit params.
  std::vector<uint32_t> tmaps;
  ProfileDesc profile;

  std::vector<std::string> symNames() const;
  int findSym(std::string_view name) const;     // -1 if none
  int findTensor(std::string_view name) const;  // -1 if none
  int findGraph(std::string_view name) const;   // -1 if none
};

// Throws Error(ETC_STATUS_BAD_DESCRIPTOR, "descriptor: ...") naming the offending field.
Descriptor parseDescriptor(std::string_view json_text);
// The optional "profile" of a parsed descriptor's JSON (profile.cpp); same errors.
ProfileDesc parseProfile(const nlohmann::json& profile, const Descriptor& d);

const char* dtypeName(etc_dtype t);  // "f32", "bf16", ...
bool parseDtype(std::string_view name, etc_dtype* out);
int dtypeBytes(etc_dtype t);
const char* roleName(etc_role r);    // "input", ...

// The abi.h EtcParams size for a module with these many syms, tensors and derived syms.
int64_t paramsBytes(size_t nsyms, size_t ntensors, size_t nderived = 0);

}  // namespace etc::rt
