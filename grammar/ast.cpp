// ast::Context's block allocation (the rest of the AST is header-only).
#include "grammar/ast.h"

#include <cstdint>
#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace etc::ast {

namespace {

constexpr size_t kSmallBlock = size_t{64} << 10;
constexpr size_t kHugePage = size_t{2} << 20;

// A block of whole huge pages, 2 MiB aligned and advised as huge pages where the system has
// them (transparent huge pages in "madvise" mode): one page fault per 2 MiB instead of 512.
void* mapHuge(size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  size_t len = size + kHugePage;
  void* raw = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  uintptr_t aligned = (begin + kHugePage - 1) & ~(uintptr_t{kHugePage} - 1);
  if (aligned > begin) munmap(raw, aligned - begin);
  size_t tail = begin + len - (aligned + size);
  if (tail) munmap(reinterpret_cast<void*>(aligned + size), tail);
  madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
#else
  void* p = std::malloc(size);
  if (!p) throw std::bad_alloc();
  return p;
#endif
}

void unmapHuge(void* p, size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  munmap(p, size);
#else
  (void)size;
  std::free(p);
#endif
}

}  // namespace

Context::~Context() {
  destroyAll(exprs_);
  destroyAll(stmts_);
  destroyAll(decls_);
  destroyAll(files_);
  for (const Block& b : blocks_) {
    if (b.size == kSmallBlock) std::free(b.base);
    else unmapHuge(b.base, b.size);
  }
}

void Context::newBlock(size_t min_size) {
  // The first block is small (most contexts hold one small file); later ones are huge pages.
  void* p;
  size_t size;
  if (blocks_.empty() && min_size <= kSmallBlock) {
    size = kSmallBlock;
    p = std::malloc(size);
    if (!p) throw std::bad_alloc();
  } else {
    size = (std::max(min_size, kHugePage) + kHugePage - 1) & ~(kHugePage - 1);
    p = mapHuge(size);
  }
  blocks_.push_back(Block{p, size});
  next_ = static_cast<char*>(p);
  end_ = next_ + size;
}

}  // namespace etc::ast
