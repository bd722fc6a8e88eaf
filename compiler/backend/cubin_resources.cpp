#include "compiler/backend/cubin_resources.h"

#include <map>
#include <regex>

#include "runtime/src/elf_file.h"

namespace etc::backend {

namespace {

using rt::ElfFile;
using rt::ElfSection;
using rt::loadLe;

// .nv.info attributes: a format byte, an attribute byte, then 2 value bytes, or for
// EIFMT_SVAL a 2-byte length and that many bytes.
constexpr uint8_t kEifmtSval = 4;
constexpr uint8_t kEiattrFrameSize = 0x11, kEiattrMaxThreads = 0x05, kEiattrRegcount = 0x2f;
constexpr uint8_t kSttFunc = 2;
constexpr int64_t kReservedSmem = 1024;

// Calls visit(attribute, value bytes) for every attribute of an .nv.info section; false when
// an attribute runs past the section.
template <typename Visit>
bool forEachAttribute(std::span<const uint8_t> info, Visit visit) {
  size_t pos = 0;
  while (pos < info.size()) {
    if (info.size() - pos < 4) return false;
    const uint8_t format = info[pos], attribute = info[pos + 1];
    size_t length = 2, start = pos + 2;
    if (format == kEifmtSval) {
      length = size_t(loadLe(info, pos + 2, 2));
      start = pos + 4;
      if (length > info.size() - start) return false;
    }
    visit(attribute, info.subspan(start, length));
    pos = start + length;
  }
  return true;
}

// "Function properties for K\nptxas . F bytes stack frame, S bytes spill stores, L bytes spill
// loads" lines of ptxas's verbose output.
void readSpills(std::string_view log, std::map<std::string, std::pair<int64_t, int64_t>>& out) {
  static const std::regex kLine(
      R"(Function properties for '?([A-Za-z_$][\w$]*)'?\s*\n[^\n]*?(\d+) bytes spill stores, (\d+) bytes spill loads)");
  const std::string text(log);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kLine); it != std::sregex_iterator(); ++it)
    out[(*it)[1]] = {std::stoll((*it)[2]), std::stoll((*it)[3])};
}

// The value of the u32 global `name`; a global in a NOBITS section (zero-initialised) is 0.
template <typename Globals>
bool dynamicSmem(const ElfFile& elf, const Globals& globals, const std::string& name, int64_t& out, std::string& error) {
  auto it = globals.find(name);
  if (it == globals.end()) {
    error = "the cubin has no symbol " + name;
    return false;
  }
  const auto& g = it->second;
  uint64_t shndx = 0;
  if (!elf.sectionOf(g.table, g.number, g.symbol, name, shndx, error)) return false;
  if (g.symbol.size != 4 || shndx == 0 || shndx >= elf.sectionCount()) {
    error = name + " is not a 4-byte global in a section (" + std::to_string(g.symbol.size) + " bytes, section " +
            std::to_string(shndx) + ")";
    return false;
  }
  const ElfSection home = elf.section(shndx);
  if (home.type == rt::kShtNobits) {
    out = 0;
    return true;
  }
  std::span<const uint8_t> bytes;
  if (!elf.data(shndx, home, bytes, error)) return false;
  if (g.symbol.value < home.addr || !rt::fitsIn(g.symbol.value - home.addr, 4, bytes.size())) {
    error = name + " lies outside its section";
    return false;
  }
  out = int64_t(loadLe(bytes, g.symbol.value - home.addr, 4));
  return true;
}

}  // namespace

bool readCubinResources(std::span<const uint8_t> cubin, const std::vector<std::string>& kernels,
                        std::string_view ptxas_log, std::vector<CubinKernel>& out, std::string& error) {
  ElfFile elf(cubin);
  if (!elf.readHeader(error)) return false;
  std::map<std::string, uint64_t, std::less<>> function_index;  // kernel -> symbol number
  struct Global {
    uint64_t table = 0, number = 0;
    rt::ElfSymbol symbol;
  };
  std::map<std::string, Global, std::less<>> smem_globals;  // "<kernel>_smem" -> where it is
  bool reserve_in_section = false;
  for (uint64_t i = 0; i < elf.sectionCount(); ++i) {
    if (elf.section(i).type != rt::kShtSymtab) continue;
    bool ok = elf.forEachSymbol(i, error, [&](uint64_t k, const rt::ElfSymbol& s) {
      if ((s.info & 0xf) == kSttFunc) function_index.emplace(std::string(s.name), k);
      if (s.name.ends_with("_smem")) smem_globals.emplace(std::string(s.name), Global{i, k, s});
      // sm_90 and later: the system's shared memory reserve is part of each kernel's section.
      if (s.name.starts_with(".nv.reservedSmem")) reserve_in_section = true;
      return true;
    });
    if (!ok) return false;
  }
  std::map<std::string, std::pair<int64_t, int64_t>> spills;
  readSpills(ptxas_log, spills);

  std::map<uint64_t, int64_t> registers, frame;  // by symbol number
  std::map<std::string, int64_t, std::less<>> static_smem, max_threads;
  for (uint64_t i = 0; i < elf.sectionCount(); ++i) {
    const ElfSection s = elf.section(i);
    const std::string_view name = elf.sectionName(s);
    if (name.starts_with(".nv.shared.")) {
      static_smem[std::string(name.substr(11))] = int64_t(s.size);
      continue;
    }
    if (!name.starts_with(".nv.info")) continue;
    std::span<const uint8_t> info;
    if (!elf.data(i, s, info, error)) return false;
    const std::string kernel = name.size() > 9 ? std::string(name.substr(9)) : "";
    bool ok = forEachAttribute(info, [&](uint8_t attribute, std::span<const uint8_t> v) {
      if ((attribute == kEiattrRegcount || attribute == kEiattrFrameSize) && v.size() == 8)
        (attribute == kEiattrRegcount ? registers : frame)[loadLe(v, 0, 4)] = int64_t(loadLe(v, 4, 4));
      else if (attribute == kEiattrMaxThreads && v.size() == 12 && !kernel.empty())
        max_threads[kernel] = int64_t(loadLe(v, 0, 4) * loadLe(v, 4, 4) * loadLe(v, 8, 4));
    });
    if (!ok) {
      error = "the cubin's " + std::string(name) + " section is malformed";
      return false;
    }
  }

  for (const std::string& kernel : kernels) {
    auto fn = function_index.find(kernel);
    if (fn == function_index.end() || !registers.count(fn->second)) {
      error = "the cubin has no kernel " + kernel + " (or no register count for it)";
      return false;
    }
    CubinKernel k;
    k.usage.kernel = kernel;
    k.usage.registers = registers[fn->second];
    k.usage.local_bytes = frame.count(fn->second) ? frame[fn->second] : 0;
    if (auto it = static_smem.find(kernel); it != static_smem.end())
      k.usage.static_smem = reserve_in_section ? std::max<int64_t>(0, it->second - kReservedSmem) : it->second;
    if (auto it = max_threads.find(kernel); it != max_threads.end()) k.usage.max_threads = it->second;
    if (!dynamicSmem(elf, smem_globals, kernel + "_smem", k.usage.dynamic_smem, error)) return false;
    if (auto it = spills.find(kernel); it != spills.end()) std::tie(k.spill_stores, k.spill_loads) = it->second;
    out.push_back(std::move(k));
  }
  return true;
}

}  // namespace etc::backend
