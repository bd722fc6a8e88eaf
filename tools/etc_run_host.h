// Host-side pieces of etc-run that need no GPU: the tensors a run needs (from files or random
// from the seed) and the comparison of results with the reference interpreter.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/interp/interpreter.h"

namespace etc::tools {

struct TensorSpec {
  std::string name;
  ir::DType dtype = ir::DType::F32;
  std::string role;  // "input", "output", "param", "temp"
  std::vector<int64_t> shape;
  std::vector<std::string> shape_text;
};

struct RunInputs {
  std::map<std::string, std::string> in, param, out;  // tensor -> file (--in, --param, --out)
  std::vector<std::string> weights;                    // --weights files
  uint64_t seed = 0;
  bool random_outputs = false;  // --random-outputs: outputs start random (a KV cache's past), not zero
  // --argmax-of OUT=SCORES: integer output OUT is the argmax over the last axis of float output
  // SCORES (a decode step's next token and its logits): see compareOutput.
  std::map<std::string, std::string> argmax_of;
};

// Parses "name=value" (--sym, --in, ...); throws "--in expects NAME=VALUE, got 'x'".
std::pair<std::string, std::string> splitAssignment(const std::string& text, const std::string& option);
// `--sym NAME=V` as a name and an integer; a value that is not an integer is an error (`option`
// names the argument in the message).
std::pair<std::string, int64_t> parseSymAssignment(const std::string& text, const std::string& option = "--sym");

// Every input and param the run needs: from --in / --param .npy files and --weights
// .safetensors (dtype and shape checked against the spec), else random from the seed. With
// random_outputs, every output too (random from the seed): its initial contents.
// Throws std::runtime_error with one sentence for any bad input. Also checks that every name in
// --in, --param and --out is a tensor of the right role.
interp::TensorMap gatherInputs(const std::vector<TensorSpec>& specs, const RunInputs& ri);

// Uniform in [-1, 1) for floats (never exactly 0), in [1, 8) for integers; the stream depends
// on the seed and the tensor's name only, so adding a tensor does not change the others.
interp::HostTensor randomTensor(ir::DType dtype, const std::vector<int64_t>& shape, uint64_t seed, const std::string& name);

struct Comparison {
  bool ok = false;
  double error = 0;      // relative L2 (absolute L2 when the reference is all zeros); mismatches for ints
  double tolerance = 0;
  std::string line;      // "y: f32 [4, 32] rel L2 1.2e-07 (tolerance 1e-05) ok"
};
// BENCHMARKS.md tolerances: relative L2 < 1e-5 for f32, < 2e-2 for bf16 and f16; integers
// equal; a NaN (or a NaN/inf mismatch) never passes. ref_scores (--argmax-of; the reference's
// scores, ref's shape plus a last axis): an element of an argmax that differs passes when the
// reference scores the token got picked within one unit in the last place (of the scores'
// dtype) of the reference's maximum, a near-tie that rounding in another order flips; any
// other difference fails.
Comparison compareOutput(const std::string& name, const interp::HostTensor& got, const interp::HostTensor& ref,
                         const interp::HostTensor* ref_scores = nullptr, const std::string& scores_name = "");

// compareOutput of output `name` with its entry in the reference run, and with its scores there
// where ri.argmax_of names them.
Comparison compareWithReference(const std::string& name, const interp::HostTensor& got,
                                const interp::TensorMap& reference, const RunInputs& ri);

std::string shapeText(const std::vector<int64_t>& shape);  // "[4, 32]"

// What output `s` holds before a launch: its entry in `host` (random_outputs), else zeros.
interp::HostTensor initialOutput(const TensorSpec& s, const interp::TensorMap& host);

}  // namespace etc::tools
