// libFuzzer target: parse -> verify -> print -> parse -> print. Any input may be rejected, but
// none may crash, hang or trip a sanitizer, and whatever is accepted must print to text that
// is accepted again and prints identically (the round-trip guarantee).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "compiler/ir/printer.h"
#include "tests/fuzz/fuzz_module.h"

using etc::fuzz::parseModule;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  if (etc::fuzz::mentionsInclude(input)) return 0;
  etc::SourceManager sources;
  etc::DiagnosticEngine diags(sources);
  auto m = parseModule(input, sources, diags);
  if (!m) {
    if (!diags.hasErrors()) {
      std::fprintf(stderr, "rejected without an error\n");
      std::abort();
    }
    for (const etc::Diagnostic& d : diags.collected()) (void)diags.render(d);  // rendering must not crash
    return 0;
  }
  std::string printed = etc::ir::printModule(*m);
  etc::SourceManager sources2;
  etc::DiagnosticEngine diags2(sources2);
  auto m2 = parseModule(printed, sources2, diags2);
  if (!m2) {
    std::fprintf(stderr, "the printed module does not compile:\n%s\n", printed.c_str());
    for (const etc::Diagnostic& d : diags2.collected()) std::fprintf(stderr, "%s", diags2.render(d).c_str());
    std::abort();
  }
  std::string printed2 = etc::ir::printModule(*m2);
  if (printed2 != printed) {
    std::fprintf(stderr, "printing is not a fixed point:\n--- first\n%s\n--- second\n%s\n", printed.c_str(),
                 printed2.c_str());
    std::abort();
  }
  return 0;
}
