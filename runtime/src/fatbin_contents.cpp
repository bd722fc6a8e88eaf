#include "fatbin_contents.h"

#include "elf_symbols.h"
#include "fatbin_reader.h"
#include "rt_error.h"

namespace etc::rt {

FatbinContents readFatbinContents(std::span<const uint8_t> bytes) {
  std::vector<FatbinImage> images;
  std::string error;
  if (!parseFatbin(bytes, images, error)) fail(ETC_STATUS_BAD_FATBIN, "not a valid fatbin: " + error);
  if (images.empty()) fail(ETC_STATUS_BAD_FATBIN, "the fatbin holds no code images");
  FatbinContents out;
  const FatbinImage* first_cubin = nullptr;
  for (const FatbinImage& im : images) {
    out.targets.push_back(CodeTarget{im.is_ptx, im.sm, im.arch_specific});
    if (!im.is_ptx && !im.compressed && !first_cubin) first_cubin = &im;
  }
  if (!first_cubin)
    fail(ETC_STATUS_BAD_FATBIN, "the fatbin has no uncompressed cubin to read the module descriptor from (it has " +
                                    targetsText(out.targets) + ")");
  std::span<const uint8_t> desc;
  if (!findElfSymbol(first_cubin->data, "etc_descriptor", desc, error))
    fail(ETC_STATUS_BAD_FATBIN, "the fatbin's " + first_cubin->archName() +
                                    " cubin has no module descriptor (was it made by etcc?): " + error);
  out.descriptor_json.assign(desc.begin(), desc.end());
  return out;
}

}  // namespace etc::rt
