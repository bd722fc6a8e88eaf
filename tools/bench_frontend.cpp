// Front-end throughput: generates a module of about 10 MB (decode-layer-like op graphs and
// task grids with ragged slices and events, the shapes the language is for), then times
// parse alone and parse + resolve + verify, and prints MB/s. Usage: etc-bench-frontend [MB]
// Both wall-clock and CPU time (of this process) are shown: on a shared machine the wall
// clock also counts the time other processes had the CPU; CPU time is what the front end
// costs (it runs on one thread).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <string>
#include <vector>

#include "compiler/frontend/frontend.h"
#include "grammar/parse.h"

namespace {

std::string layer(int l) {
  return fmt::format(R"(// layer {0}
tensor ln_{0} : bf16[H] param
tensor w_qkv_{0} : bf16[Q + 2 * KV, H] param
tensor w_o_{0} : bf16[H, Q] param
tensor w_gu_{0} : bf16[2 * I, H] param
tensor w_down_{0} : bf16[H, I] param
tensor p_{0} : f32[cdiv(N, 1024)] temp
tensor s_{0} : f32[4] output
event done_{0} : [1] init cdiv(N, 1024)
event rows_{0} : [cdiv(B, 16), 4] init (r, c) -> 1 + c % 2

task @part_{0} grid [cdiv(N, 1024)] (i) {{
  reduce_sum(a[i * 1024 : min(N, i * 1024 + 1024)]) -> p_{0}[i]
  notify done_{0}[0]
}}

task @final_{0} grid [4] (j) {{
  wait done_{0}[0]
  reduce_sum(p_{0}[0 : cdiv(N, 1024)]) -> s_{0}[j]
}}

graph @g_{0} {{
  h_{0} = rmsnorm(x, ln_{0}) {{ eps = 1e-5 }}
  qkv_{0} = matmul(h_{0}, w_qkv_{0}) {{ transpose_b, tile_n = 64 }}
  o_{0} = matmul(qkv_{0}[:, 0:Q], w_o_{0}) {{ transpose_b }}
  h2_{0}, r_{0} = add_rmsnorm(o_{0}, x, ln_{0}) {{ eps = 1e-5 }}
  gu_{0} = matmul(h2_{0}, w_gu_{0}) {{ transpose_b }}
  act_{0} = silu_mul(gu_{0}[:, 0:I], gu_{0}[:, I : 2 * I])
  d_{0} = matmul(act_{0}, w_down_{0}) {{ transpose_b, split_k = 4 }}
  y_{0} = add(r_{0}, d_{0})
  run @part_{0}
  run @final_{0}
}}

)",
                     l);
}

std::string generate(size_t bytes) {
  std::string text = R"(module @bench
sym B in [1, 128]
sym N in [1, 100000000]
const H = 2048
const HEAD = 64
const Q = 32 * HEAD
const KV = 8 * HEAD
const I = 8192
tensor x : bf16[B, H] input
tensor a : f32[N] input

)";
  for (int l = 0; text.size() < bytes; ++l) text += layer(l);
  return text;
}

struct Times {
  double wall, cpu;
};

double cpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

Times seconds(auto&& fn) {
  auto start = std::chrono::steady_clock::now();
  double cpu_start = cpuSeconds();
  fn();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), cpuSeconds() - cpu_start};
}

// Median of three runs, wall and CPU time each.
Times median(std::vector<Times> t) {
  std::vector<double> wall, cpu;
  for (const Times& x : t) wall.push_back(x.wall), cpu.push_back(x.cpu);
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return {wall[wall.size() / 2], cpu[cpu.size() / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  double mb = argc > 1 ? std::atof(argv[1]) : 10.0;
  std::string text = generate(static_cast<size_t>(mb * 1e6));
  double size_mb = static_cast<double>(text.size()) / 1e6;
  std::vector<Times> parse_s, full_s;
  for (int rep = 0; rep < 3; ++rep) {
    {
      etc::SourceManager sources;
      etc::DiagnosticEngine diags(sources);
      etc::ast::Context ctx;
      uint32_t id = sources.addBuffer("bench.etir", text);
      parse_s.push_back(seconds([&] { etc::parseFile(id, sources, ctx, diags); }));
      if (diags.hasErrors()) return fmt::print(stderr, "the generated module does not parse\n"), 1;
    }
    {
      etc::SourceManager sources;
      etc::DiagnosticEngine diags(sources);
      uint32_t id = sources.addBuffer("bench.etir", text);
      std::unique_ptr<etc::ir::Module> m;
      full_s.push_back(seconds([&] { m = etc::parseAndVerifyBuffer(id, etc::LoadOptions{}, sources, diags); }));
      if (!m) return fmt::print(stderr, "the generated module does not verify\n"), 1;
    }
  }
  Times parse = median(parse_s), full = median(full_s);
  fmt::print("front end throughput on a generated {:.1f} MB module (median of 3)\n", size_mb);
  fmt::print("                          wall clock            CPU time\n");
  fmt::print("  parse                   {:6.3f} s {:6.1f} MB/s   {:6.3f} s {:6.1f} MB/s\n", parse.wall,
             size_mb / parse.wall, parse.cpu, size_mb / parse.cpu);
  fmt::print("  parse+resolve+verify    {:6.3f} s {:6.1f} MB/s   {:6.3f} s {:6.1f} MB/s\n", full.wall,
             size_mb / full.wall, full.cpu, size_mb / full.cpu);
  return 0;
}
