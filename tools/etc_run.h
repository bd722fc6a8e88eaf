// etc-run's options and its three ways to run a file (see docs/runtime.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "etc/runtime.hpp"
#include "etc_run_host.h"

namespace etc::tools {

struct RunOptions {
  std::string file;
  std::vector<std::string> syms;  // "N=V"
  RunInputs inputs;
  std::string graph;              // empty: the module's only graph
  bool check = false;
  int bench = 0;
  std::vector<etc_mode> modes = {ETC_MODE_MEGA};
  bool info = false;
  bool debug = false;
  int64_t watchdog_ms = 0;        // 0: the runtime's default
  int device = 0;
  int stress = 0;                       // --stress N: N launches cycling through sym_values
  std::string stress_sym;               // --sym-values NAME=V1,V2,...: the sym that changes
  std::vector<int64_t> stress_values;
  std::vector<std::string> stress_also;  // --stress-also F: other fatbins of the module, launched in turn
  int64_t check_every = 1000;           // --check-every K: every K-th stress launch against the interpreter
  std::string trace;                    // --trace FILE: Chrome trace of one megakernel launch
  std::string order;                    // --order: the interpreter's order of an .etir file's tiles
};

const char* modeName(etc_mode m);

// --info: the descriptor, readably. Needs no GPU.
void printInfo(const Module& m);
// Runs the fatbin on the GPU (and the interpreter with --check). Returns the exit status;
// throws std::runtime_error / RuntimeError for bad input.
int runFatbin(Module& m, const RunOptions& opt);
// --trace: launches the megakernel of a profiled fatbin twice (inputs bound; before the checked
// launch, which starts again from zeroed outputs), writes the second launch's timeline as a
// Chrome trace to opt.trace and prints the summary.
void writeTrace(Module& m, const std::string& graph, const std::map<std::string, int64_t>& syms, const RunOptions& opt);
// Runs an .etir file on the CPU reference interpreter.
int runEtir(const RunOptions& opt);

// Parses and lowers .etir text (the embedded IR of a fatbin, or a file) and runs the
// interpreter on `tensors` (inputs in, outputs added). Throws with the interpreter's sentence.
void interpret(const std::string& ir_text, const std::string& source_name, const std::string& graph,
               const std::map<std::string, int64_t>& syms, interp::TensorMap& tensors);

}  // namespace etc::tools
