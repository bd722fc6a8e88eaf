// The device toolchain in a process of its own: etc-nvrtc (compiler/driver/etc_nvrtc_main.cpp) runs
// compileCuda for one target, and etcc starts one per target. NVRTC and nvJitLink then run
// outside etcc's address space: a crash of theirs is reported as a diagnostic rather than taking
// etcc down, and in a sanitized etcc (CI's build) their allocations do not go through the
// sanitizer's allocator, which made them 1.3 to 1.6 times as slow (session 82, a one-layer
// Llama's sm_80 cubin on one machine: 51 to 53 s of CPU in the sanitized etcc, 33 to 36 s
// through the worker, 33 s from a Release etcc).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/backend/toolchain.h"

namespace etc::backend {

// The worker to use: $ETC_NVRTC_WORKER when set (empty: none, compile in this process), else
// etc-nvrtc next to this executable when it is there, else none.
std::optional<std::string> nvrtcWorkerPath();

// compileCuda's work done by the worker at `worker`: the source goes to its standard input, the
// log and the image come back on its standard output (etc_nvrtc_main.cpp), so nothing is left in
// a temporary directory; the worker dies with the etcc thread that started it. A worker that
// cannot be started, exits with an unexpected status or dies by a signal gives a result that is
// not ok, whose log says which.
CompileResult compileCudaInWorker(const std::string& worker, std::string_view source, std::string_view file_name,
                                  const Target& t, const std::vector<std::string>& extra_options = {},
                                  bool whole_program = false);

}  // namespace etc::backend
