// Checks a fatbin that etcc made from a sample, with no GPU: the container holds exactly the
// default targets (sm_90a and sm_80 cubins, compute_90 PTX); every cubin defines every kernel
// the descriptor names, its `<kernel>_smem` global and the descriptor itself; the descriptor is
// well-formed and its embedded IR parses, verifies, and is a fixed point of the pipeline (the
// task-level module it describes is exactly what compiling the sample produces).
//   usage: etc_fatbin_check SAMPLE.etir SAMPLE.fatbin
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "compiler/frontend/frontend.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/pipeline.h"
#include "etc/abi.h"
#include "runtime/src/elf_symbols.h"
#include "runtime/src/fatbin_reader.h"
#include "runtime/src/fatbin_seal.h"

namespace {

int failures = 0;
void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::cerr << "FAIL: " << what << '\n';
    ++failures;
  }
}

std::unique_ptr<etc::ir::Module> compileText(const std::string& name, std::string text) {
  etc::SourceManager sources;
  etc::DiagnosticEngine diags(sources);
  uint32_t id = sources.addBuffer(name, std::move(text));
  auto m = etc::parseAndVerifyBuffer(id, etc::LoadOptions{}, sources, diags);
  if (m) m = etc::runPipeline(std::move(m), etc::PipelineOptions{}, diags);
  return m;
}

// A graph's megakernels: "mega" is one, or the list of one a sym range (etcc --specialize).
std::vector<std::string> megakernels(const nlohmann::json& graph) {
  const nlohmann::json& mega = graph["mega"];
  std::vector<std::string> out;
  if (mega.is_array())
    for (const auto& k : mega) out.push_back(k["kernel"]);
  else
    out.push_back(mega["kernel"]);
  return out;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: etc_fatbin_check SAMPLE.etir SAMPLE.fatbin\n";
    return 2;
  }
  std::string source = readFile(argv[1]), fatbin = readFile(argv[2]);
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(fatbin.data()), fatbin.size());
  std::vector<etc::rt::FatbinImage> images;
  std::string error;
  // etcc seals what it writes (runtime/src/fatbin_seal.h); the container is what precedes it.
  const size_t sealed = bytes.size();
  try {
    bytes = bytes.first(etc::rt::unsealedSize(bytes));
  } catch (const std::exception& e) {
    std::cerr << "FAIL: " << argv[2] << ": " << e.what() << '\n';
    return 1;
  }
  expect(bytes.size() + etc::rt::kSealBytes == sealed, "etcc did not seal the fatbin");
  if (!etc::rt::parseFatbin(bytes, images, error)) {
    std::cerr << "FAIL: " << argv[2] << ": " << error << '\n';
    return 1;
  }
  std::vector<std::string> archs;
  for (const auto& im : images) archs.push_back(im.archName() + (im.compressed ? " (compressed)" : ""));
  expect(archs == std::vector<std::string>{"sm_90a", "sm_80", "compute_90"},
         fmt::format("targets are {}; expected sm_90a, sm_80, compute_90", fmt::join(archs, ", ")));

  // The descriptor, from the first cubin, as the runtime reads it without a GPU.
  nlohmann::json d;
  for (const auto& im : images) {
    if (im.is_ptx) continue;
    std::span<const uint8_t> desc;
    if (!etc::rt::findElfSymbol(im.data, "etc_descriptor", desc, error)) {
      expect(false, im.archName() + ": " + error);
      continue;
    }
    nlohmann::json here = nlohmann::json::parse(desc.begin(), desc.end(), nullptr, false);
    expect(!here.is_discarded(), im.archName() + ": the descriptor is not JSON");
    if (d.is_null()) d = here;
    expect(here == d, im.archName() + ": the descriptor differs between cubins");
    std::vector<std::string> kernels;
    for (const auto& g : here["graphs"]) {
      for (const std::string& k : megakernels(g)) kernels.push_back(k);
      for (const auto& k : g["unfused"]) kernels.push_back(k["kernel"]);
    }
    expect(!kernels.empty(), im.archName() + ": the descriptor names no kernel");
    for (const std::string& k : kernels) {
      std::span<const uint8_t> sym;
      expect(etc::rt::findElfSymbol(im.data, k, sym, error), im.archName() + ": kernel " + k + ": " + error);
      expect(etc::rt::findElfSymbol(im.data, k + "_smem", sym, error) && sym.size() == 4,
             im.archName() + ": " + k + "_smem: " + error);
    }
  }
  for (const auto& im : images)
    if (im.is_ptx) {
      std::string ptx(im.data.begin(), im.data.end());
      expect(ptx.find(".target sm_90") != std::string::npos, "the PTX is not for sm_90");
      for (const auto& g : d["graphs"])
        for (const std::string& k : megakernels(g))
          expect(ptx.find(".entry " + k) != std::string::npos,
                 "the PTX lacks the megakernel " + k + " of @" + g["name"].get<std::string>());
    }
  if (d.is_null()) return 1;

  expect(d["format"] == "etc.module" && d["abi"] == ETC_ABI_VERSION, "descriptor format/abi");
  expect(d["archs"] == nlohmann::json::array({"sm_90a", "sm_80", "compute_90"}), "descriptor archs");
  // The descriptor against the sample compiled here, and the embedded IR against both.
  auto compiled = compileText(argv[1], source);
  auto embedded = compileText("embedded IR", d["ir"].get<std::string>());
  expect(compiled && embedded, "the sample or the embedded IR does not compile");
  if (compiled && embedded) {
    std::string want = etc::ir::printModule(*compiled);
    expect(d["ir"] == want, "the embedded IR is not the sample's task-level module");
    expect(etc::ir::printModule(*embedded) == want, "the passes change the embedded IR");
    expect(d["module"] == compiled->name, "descriptor module name");
    expect(d["syms"].size() == compiled->syms.size(), "descriptor syms");
    expect(d["tensors"].size() == compiled->tensors.size(), "descriptor tensors");
    expect(d["events"].size() == compiled->events.size(), "descriptor events");
    for (size_t i = 0; i < compiled->tensors.size() && i < d["tensors"].size(); ++i)
      expect(d["tensors"][i]["name"] == compiled->tensors[i].name &&
                 d["tensors"][i]["dtype"] == std::string(etc::ir::dtypeName(compiled->tensors[i].dtype)),
             "descriptor tensor " + compiled->tensors[i].name);
  }
  if (failures == 0) std::cout << "ok: " << argv[2] << " (" << fmt::format("{}", fmt::join(archs, ", ")) << ")\n";
  return failures == 0 ? 0 : 1;
}
