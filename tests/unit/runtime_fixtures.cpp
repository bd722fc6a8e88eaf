#include "runtime_fixtures.h"

#include <cstring>

#include "compiler/backend/fatbin_writer.h"
#include "etc/abi.h"

namespace etc::rt::testing {
namespace {

template <typename T>
void put(std::vector<uint8_t>& b, size_t at, T v) {
  if (b.size() < at + sizeof(T)) b.resize(at + sizeof(T));
  std::memcpy(b.data() + at, &v, sizeof(T));
}

void putSection(std::vector<uint8_t>& b, size_t at, uint32_t name, uint32_t type, uint64_t offset, uint64_t size,
                uint32_t link, uint32_t info, uint64_t entsize) {
  put<uint32_t>(b, at + 0, name);
  put<uint32_t>(b, at + 4, type);
  put<uint64_t>(b, at + 24, offset);
  put<uint64_t>(b, at + 32, size);
  put<uint32_t>(b, at + 40, link);
  put<uint32_t>(b, at + 44, info);
  put<uint64_t>(b, at + 48, 8);
  put<uint64_t>(b, at + 56, entsize);
}

}  // namespace

nlohmann::json sampleDescriptor() {
  using J = nlohmann::json;
  J sym0 = J::array({"sym", 0}), sym1 = J::array({"sym", 1});
  return J{
      {"format", "etc.module"},
      {"abi", ETC_ABI_VERSION},
      {"compiler", "etcc 0.1.0"},
      {"module", "sample"},
      {"archs", {"sm_90a", "sm_80", "compute_90"}},
      {"syms", {{{"name", "B"}, {"lo", 1}, {"hi", 128}}, {{"name", "N"}, {"lo", 1}, {"hi", 1000000}}}},
      {"tensors",
       {{{"name", "x"}, {"dtype", "bf16"}, {"role", "input"}, {"shape", {sym0, 64}}, {"shape_text", {"B", "H"}}},
        {{"name", "w"}, {"dtype", "f32"}, {"role", "param"}, {"shape", {64, 32}}, {"shape_text", {"H", "O"}}},
        {{"name", "t"}, {"dtype", "f32"}, {"role", "temp"}, {"shape", {sym0, J::array({"cdiv", sym1, 16})}},
         {"shape_text", {"B", "cdiv(N, 16)"}}},
        {{"name", "y"}, {"dtype", "f32"}, {"role", "output"}, {"shape", {sym0, 32}}, {"shape_text", {"B", "O"}}}}},
      {"events",
       {{{"name", "done"}, {"shape", {J::array({"cdiv", sym0, 16}), 2}}, {"offset", 0}, {"max_elements", 16}},
        {{"name", "flag"}, {"shape", {4}}, {"offset", 16}, {"max_elements", 4}}}},
      {"event_words", 20},
      {"tasks", {{{"name", "stage1"}, {"grid_text", {"cdiv(B, 16)"}}}, {{"name", "final"}, {"grid_text", {"1"}}}}},
      {"graphs",
       {{{"name", "main"},
         {"schedule", "static"},
         {"mega", {{"kernel", "etc_main_mega"}, {"threads", 256}}},
         {"unfused",
          {{{"kernel", "etc_main_stage1"}, {"task", 0}, {"threads", 256}},
           {{"kernel", "etc_main_final"}, {"task", 1}, {"threads", 128}}}}}}},
      {"params_bytes", 88},
      {"ir", "module @sample\n"},
  };
}

std::vector<uint8_t> makeElf(const std::string& payload, const std::string& symbol) {
  // Layout: header | payload | symtab (null + 1 symbol) | strtab | shstrtab | section headers
  // (null, .nv.global.init, .symtab, .strtab, .shstrtab).
  std::vector<uint8_t> b(64, 0);
  std::memcpy(b.data(), "\x7f" "ELF", 4);
  b[4] = 2;  // 64-bit
  b[5] = 1;  // little-endian
  b[6] = 1;
  b[8] = 8;  // EI_ABIVERSION, as in a cubin
  put<uint16_t>(b, 16, 2);    // ET_EXEC
  put<uint16_t>(b, 18, 190);  // EM_CUDA
  put<uint32_t>(b, 20, 1);
  const size_t data_off = 64;
  b.insert(b.end(), payload.begin(), payload.end());
  while (b.size() % 8) b.push_back(0);
  const size_t symtab_off = b.size();
  b.resize(symtab_off + 48, 0);
  put<uint32_t>(b, symtab_off + 24, 1);      // st_name
  b[symtab_off + 24 + 4] = 0x11;             // STB_GLOBAL, STT_OBJECT
  put<uint16_t>(b, symtab_off + 24 + 6, 1);  // st_shndx: the payload section
  put<uint64_t>(b, symtab_off + 24 + 8, 0);  // st_value: offset in the section
  put<uint64_t>(b, symtab_off + 24 + 16, payload.size());
  const size_t strtab_off = b.size();
  std::string strtab = std::string(1, '\0') + symbol + '\0';
  b.insert(b.end(), strtab.begin(), strtab.end());
  const size_t shstrtab_off = b.size();
  const std::string shstrtab = std::string("\0.nv.global.init\0.symtab\0.strtab\0.shstrtab\0", 43);
  b.insert(b.end(), shstrtab.begin(), shstrtab.end());
  while (b.size() % 8) b.push_back(0);
  const size_t shoff = b.size();
  b.resize(shoff + 5 * 64, 0);
  putSection(b, shoff + 64, 1, 1, data_off, payload.size(), 0, 0, 0);            // PROGBITS
  putSection(b, shoff + 128, 17, 2, symtab_off, 48, 3, 1, 24);                   // SYMTAB
  putSection(b, shoff + 192, 25, 3, strtab_off, strtab.size(), 0, 0, 0);         // STRTAB
  putSection(b, shoff + 256, 33, 3, shstrtab_off, shstrtab.size(), 0, 0, 0);     // STRTAB
  put<uint64_t>(b, 40, shoff);
  put<uint16_t>(b, 52, 64);  // e_ehsize
  put<uint16_t>(b, 58, 64);  // e_shentsize
  put<uint16_t>(b, 60, 5);   // e_shnum
  put<uint16_t>(b, 62, 4);   // e_shstrndx
  return b;
}

std::vector<uint8_t> makeFatbin(const std::string& descriptor_json) {
  using backend::FatbinEntry;
  using backend::Target;
  std::vector<uint8_t> elf = makeElf(descriptor_json);
  std::string ptx = ".version 9.0\n.target sm_90\n";
  return backend::writeFatbin({{Target{Target::Kind::Cubin, 90, true}, elf},
                               {Target{Target::Kind::Cubin, 80, false}, elf},
                               {Target{Target::Kind::Ptx, 90, false}, std::vector<uint8_t>(ptx.begin(), ptx.end())}});
}

}  // namespace etc::rt::testing
