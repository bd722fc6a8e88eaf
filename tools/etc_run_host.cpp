#include "etc_run_host.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <cmath>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "bad_input.h"
#include "compiler/interp/view.h"
#include "compiler/support/splitmix.h"
#include "npy.h"
#include "safetensors.h"

namespace etc::tools {
namespace {

std::string describe(const TensorSpec& s) {
  std::string text;
  for (size_t i = 0; i < s.shape_text.size(); ++i) text += (i ? ", " : "") + s.shape_text[i];
  std::string shape = shapeText(s.shape);
  return s.shape_text.empty() || "[" + text + "]" == shape ? shape : "[" + text + "] = " + shape;
}

void checkMatches(const TensorSpec& s, const interp::HostTensor& t, const std::string& source) {
  if (t.dtype != s.dtype)
    bad(source + " holds " + std::string(ir::dtypeName(t.dtype)) + " data, tensor " + s.name + " is " +
        std::string(ir::dtypeName(s.dtype)));
  if (t.shape != s.shape)
    bad(source + " has shape " + shapeText(t.shape) + ", tensor " + s.name + " has shape " + describe(s));
}

const TensorSpec* find(const std::vector<TensorSpec>& specs, const std::string& name) {
  for (const TensorSpec& s : specs)
    if (s.name == name) return &s;
  return nullptr;
}

void checkNames(const std::vector<TensorSpec>& specs, const std::map<std::string, std::string>& given, const char* option,
                const std::string& role) {
  for (const auto& [name, file] : given) {
    const TensorSpec* s = find(specs, name);
    if (!s) bad(std::string(option) + " " + name + "=" + file + ": the module has no tensor named '" + name + "'");
    if (s->role != role) bad(std::string(option) + " " + name + "=" + file + ": tensor " + name + " is " + s->role + ", not " + role);
  }
}

}  // namespace

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::pair<std::string, std::string> splitAssignment(const std::string& text, const std::string& option) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    bad(option + " expects NAME=VALUE, got '" + text + "'");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

// splitmixAt: a value per (key, index) with no state to carry, so chunks of a tensor fill in
// parallel and a value does not depend on how the work was split.
using etc::splitmixAt;

interp::HostTensor randomTensor(ir::DType dtype, const std::vector<int64_t>& shape, uint64_t seed, const std::string& name) {
  uint64_t key = 1469598103934665603ull;  // FNV-1a of the name, mixed into the seed
  for (unsigned char c : name) key = (key ^ c) * 1099511628211ull;
  key = splitmixAt(seed ^ key);
  interp::HostTensor t = interp::zeros(dtype, shape);
  const interp::View v = interp::View::whole(t);
  const int64_t n = t.numel();
  const bool is_float = ir::isFloat(dtype);
  auto fill = [&](int64_t lo, int64_t hi) {
    uint8_t* const bytes = t.bytes.data();
    for (int64_t i = lo; i < hi; ++i) {
      const uint64_t u = splitmixAt(key + static_cast<uint64_t>(i));
      if (is_float) {
        double x = static_cast<double>(u >> 11) * 0x1.0p-53 * 2.0 - 1.0;  // uniform in [-1, 1)
        if (x == 0.0) x = 0.5;
        // The 16-bit formats' bits stored directly (storeFloat's dispatch per element was a
        // sixth of a sanitized one-layer decode run).
        if (dtype == ir::DType::BF16 || dtype == ir::DType::F16) {
          const uint16_t h = dtype == ir::DType::BF16 ? interp::doubleToBf16(x) : interp::doubleToF16(x);
          std::memcpy(bytes + 2 * i, &h, 2);
        } else {
          interp::storeFloat(v, i, x);
        }
      } else {
        interp::storeInt(v, i, 1 + static_cast<int64_t>(u % 7));
      }
    }
  };
  // A decode model's weights are over a billion values: one thread took about a minute.
  constexpr int64_t kChunk = int64_t{1} << 22;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  const int64_t workers = std::min<int64_t>(chunks, std::max(1u, std::thread::hardware_concurrency()));
  if (workers <= 1) {
    fill(0, n);
    return t;
  }
  std::atomic<int64_t> next{0};
  std::vector<std::thread> pool;
  for (int64_t w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (int64_t c; (c = next.fetch_add(1)) < chunks;) fill(c * kChunk, std::min(n, (c + 1) * kChunk));
    });
  for (std::thread& th : pool) th.join();
  return t;
}

interp::TensorMap gatherInputs(const std::vector<TensorSpec>& specs, const RunInputs& ri) {
  checkNames(specs, ri.in, "--in", "input");
  checkNames(specs, ri.param, "--param", "param");
  checkNames(specs, ri.out, "--out", "output");
  checkNames(specs, ri.argmax_of, "--argmax-of", "output");
  for (const auto& [out, scores] : ri.argmax_of) {
    const std::string what = "--argmax-of " + out + "=" + scores + ": ";
    const TensorSpec* o = find(specs, out);
    const TensorSpec* sc = find(specs, scores);
    if (!sc) bad(what + "the module has no tensor named '" + scores + "'");
    if (sc->role != "output") bad(what + "tensor " + scores + " is " + sc->role + ", not output");
    if (!ir::isInteger(o->dtype)) bad(what + out + " is " + std::string(ir::dtypeName(o->dtype)) + ", not an integer");
    if (!ir::isFloat(sc->dtype)) bad(what + scores + " is " + std::string(ir::dtypeName(sc->dtype)) + ", not a float");
    std::vector<int64_t> lead(sc->shape.begin(), sc->shape.end() - (sc->shape.empty() ? 0 : 1));
    if (sc->shape.empty() || lead != o->shape)
      bad(what + scores + " " + shapeText(sc->shape) + " is not " + out + " " + shapeText(o->shape) + " plus a last axis");
  }
  std::map<std::string, std::pair<interp::HostTensor, std::string>> weights;  // name -> tensor, file
  for (const std::string& file : ri.weights)
    for (auto& [name, t] : readSafetensors(file)) weights.insert_or_assign(name, std::make_pair(std::move(t), file));
  // .etir names cannot contain '.': a param also binds to the entry whose name has '_' for
  // every '.' (model_norm_weight <- model.norm.weight), unless two entries read the same.
  std::map<std::string, std::vector<std::string>> dotted;
  for (const auto& [name, entry] : weights) {
    std::string plain = name;
    std::replace(plain.begin(), plain.end(), '.', '_');
    if (plain != name) dotted[plain].push_back(name);
  }
  auto findWeight = [&](const std::string& param) {
    if (auto w = weights.find(param); w != weights.end()) return w;
    auto d = dotted.find(param);
    if (d == dotted.end()) return weights.end();
    if (d->second.size() > 1)
      bad("param " + param + " matches several --weights entries ('" + d->second[0] + "', '" + d->second[1] +
          "'): name one exactly");
    return weights.find(d->second.front());
  };

  interp::TensorMap out;
  for (const TensorSpec& s : specs) {
    if (s.role == "output" && ri.random_outputs) out.emplace(s.name, randomTensor(s.dtype, s.shape, ri.seed, s.name));
    if (s.role != "input" && s.role != "param") continue;
    const auto& files = s.role == "input" ? ri.in : ri.param;
    interp::HostTensor t;
    if (auto it = files.find(s.name); it != files.end()) {
      t = readNpy(it->second);
      checkMatches(s, t, it->second);
    } else if (auto w = s.role == "param" ? findWeight(s.name) : weights.end(); w != weights.end()) {
      t = w->second.first;
      checkMatches(s, t, w->second.second + " tensor '" + w->first + "'");
    } else if (s.role == "param" && !ri.weights.empty()) {
      bad("param " + s.name + " is in none of the --weights files (and no --param gives it)");
    } else {
      t = randomTensor(s.dtype, s.shape, ri.seed, s.name);
    }
    out.emplace(s.name, std::move(t));
  }
  return out;
}

interp::HostTensor initialOutput(const TensorSpec& s, const interp::TensorMap& host) {
  auto it = host.find(s.name);
  return it != host.end() ? it->second : interp::zeros(s.dtype, s.shape);
}

namespace {

// One unit in the last place of x in a float dtype (bf16: 8 significant bits, f16: 11, f32: 24).
double ulpOf(double x, ir::DType t) {
  const int bits = t == ir::DType::BF16 ? 8 : t == ir::DType::F16 ? 11 : 24;
  int e = 0;
  std::frexp(std::fabs(x), &e);
  return std::ldexp(1.0, e - bits);
}

}  // namespace

Comparison compareOutput(const std::string& name, const interp::HostTensor& got, const interp::HostTensor& ref,
                         const interp::HostTensor* ref_scores, const std::string& scores_name) {
  Comparison c;
  const std::string head = name + ": " + std::string(ir::dtypeName(ref.dtype)) + " " + shapeText(ref.shape);
  if (got.dtype != ref.dtype || got.shape != ref.shape) {
    c.line = head + " FAIL: the result is " + std::string(ir::dtypeName(got.dtype)) + " " + shapeText(got.shape);
    return c;
  }
  if (ir::isInteger(ref.dtype)) {
    std::vector<int64_t> a = interp::toInts(got), b = interp::toInts(ref);
    size_t bad_count = 0, not_tie = 0;
    std::vector<double> sc = ref_scores ? interp::toDoubles(*ref_scores) : std::vector<double>();
    const size_t v = a.empty() ? 0 : sc.size() / a.size();
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] == b[i]) continue;
      ++bad_count;
      if (!ref_scores || a[i] < 0 || static_cast<size_t>(a[i]) >= v) {
        ++not_tie;
        continue;
      }
      const double* row = sc.data() + i * v;
      const double best = *std::max_element(row, row + v);
      if (!(row[a[i]] >= best - ulpOf(best, ref_scores->dtype))) ++not_tie;
    }
    c.error = static_cast<double>(bad_count);
    c.ok = not_tie == 0;
    if (!ref_scores)
      c.line = head + fmt::format(" {} of {} elements differ (exact match needed)", bad_count, a.size());
    else if (bad_count == 0)
      c.line = head + fmt::format(" 0 of {} elements differ", a.size());
    else
      c.line = head + fmt::format(" {} of {} elements differ, {} of them not a near-tie of {} (within one ulp of the reference's maximum)",
                                  bad_count, a.size(), not_tie, scores_name);
    c.line += c.ok ? " ok" : " FAIL";
    return c;
  }
  c.tolerance = ref.dtype == ir::DType::F32 ? 1e-5 : 2e-2;
  std::vector<double> a = interp::toDoubles(got), b = interp::toDoubles(ref);
  double diff = 0, norm = 0;
  size_t nan = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      ++nan;
      continue;
    }
    if (std::isinf(a[i]) || std::isinf(b[i])) {
      if (a[i] != b[i]) ++nan;
      continue;
    }
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm += b[i] * b[i];
  }
  const bool relative = norm > 0;
  c.error = relative ? std::sqrt(diff / norm) : std::sqrt(diff);
  c.ok = nan == 0 && std::isfinite(c.error) && c.error < c.tolerance;
  c.line = head + fmt::format(" {} L2 {:.3g} (tolerance {:g})", relative ? "rel" : "abs (the reference is 0)", c.error, c.tolerance);
  if (nan) c.line += fmt::format(", {} NaN or inf mismatches", nan);
  c.line += c.ok ? " ok" : " FAIL";
  return c;
}

Comparison compareWithReference(const std::string& name, const interp::HostTensor& got,
                                const interp::TensorMap& reference, const RunInputs& ri) {
  auto am = ri.argmax_of.find(name);
  if (am == ri.argmax_of.end()) return compareOutput(name, got, reference.at(name));
  return compareOutput(name, got, reference.at(name), &reference.at(am->second), am->second);
}

}  // namespace etc::tools

namespace etc::tools {

std::pair<std::string, int64_t> parseSymAssignment(const std::string& text, const std::string& option) {
  auto [name, value] = splitAssignment(text, option);
  int64_t v = 0;
  size_t used = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size()) throw std::runtime_error(option + " " + text + ": '" + value + "' is not an integer");
  return {name, v};
}

}  // namespace etc::tools
