#include "compiler/frontend/loader.h"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>

#include "grammar/parse.h"

namespace etc {

namespace {

// Deep include chains are almost always cycles through different spellings of a path or
// generated nonsense; a fixed limit keeps the recursion bounded.
constexpr size_t kMaxIncludeDepth = 64;

class Loader {
 public:
  Loader(const LoadOptions& opts, SourceManager& sources, ast::Context& ctx, DiagnosticEngine& diags,
         LoadedSource* out)
      : opts_(opts), sources_(sources), ctx_(ctx), diags_(diags), out_(out) {}

  void load(uint32_t file_id, bool is_main) {
    stack_.push_back(file_id);
    ast::File* file = parseFile(file_id, sources_, ctx_, diags_);
    out_->decls.reserve(out_->decls.size() + file->decls.size());
    for (const ast::Decl* d : file->decls) {
      if (d->kind == ast::DeclKind::Include) {
        include(*static_cast<const ast::IncludeDecl*>(d), file_id);
        continue;
      }
      if (d->kind == ast::DeclKind::Module && !is_main) {
        diags_.error(d->range.begin, "a module declaration may only appear in the main file, not in an included file");
        continue;
      }
      out_->decls.push_back(d);
    }
    stack_.pop_back();
  }

 private:
  void include(const ast::IncludeDecl& inc, uint32_t from_file) {
    namespace fs = std::filesystem;
    SourceLoc at = inc.path_range.begin;
    if (inc.path.empty()) {
      diags_.error(at, "empty include path");
      return;
    }
    std::vector<fs::path> candidates;
    fs::path p(inc.path);
    if (p.is_absolute()) {
      candidates.push_back(p);
    } else {
      candidates.push_back(fs::path(std::string(sources_.name(from_file))).parent_path() / p);
      for (const std::string& dir : opts_.include_dirs) candidates.push_back(fs::path(dir) / p);
    }
    std::error_code ec;
    const fs::path* found = nullptr;
    for (const fs::path& c : candidates) {
      if (fs::is_regular_file(c, ec)) {
        found = &c;
        break;
      }
    }
    if (!found) {
      std::string searched;
      for (const fs::path& c : candidates) searched += fmt::format("{}'{}'", searched.empty() ? "" : ", ", c.string());
      diags_.error(at, fmt::format("cannot find include file '{}' (searched {})", inc.path, searched));
      return;
    }
    fs::path canonical = fs::weakly_canonical(*found, ec);
    std::string key = ec ? found->string() : canonical.string();
    if (uint32_t seen = sources_.findByCanonicalPath(key)) {
      for (uint32_t open : stack_) {
        if (open == seen) {
          std::vector<Note> notes;
          for (size_t i = 1; i < stack_.size(); ++i)
            notes.push_back({sources_.includedFrom(stack_[i]),
                             fmt::format("'{}' included here", sources_.name(stack_[i]))});
          diags_.error(at, fmt::format("include cycle: '{}' is already being included", inc.path), std::move(notes));
          return;
        }
      }
      return;  // included before: textual inclusion happens once
    }
    if (stack_.size() >= kMaxIncludeDepth) {
      diags_.error(at, fmt::format("includes nested too deeply (limit {})", kMaxIncludeDepth));
      return;
    }
    std::string error;
    uint32_t id = sources_.addFile(found->string(), &error);
    if (id == 0) {
      diags_.error(at, fmt::format("cannot read include file '{}': {}", found->string(), error));
      return;
    }
    sources_.setIncludedFrom(id, at);
    load(id, false);
  }

  const LoadOptions& opts_;
  SourceManager& sources_;
  ast::Context& ctx_;
  DiagnosticEngine& diags_;
  LoadedSource* out_;
  std::vector<uint32_t> stack_;
};

}  // namespace

bool loadFile(const std::string& path, const LoadOptions& opts, SourceManager& sources, ast::Context& ctx,
              DiagnosticEngine& diags, LoadedSource* out) {
  std::string error;
  uint32_t id = sources.addFile(path, &error);
  if (id == 0) {
    diags.error({}, fmt::format("cannot read '{}': {}", path, error));
    return false;
  }
  loadBuffer(id, opts, sources, ctx, diags, out);
  return true;
}

void loadBuffer(uint32_t file_id, const LoadOptions& opts, SourceManager& sources, ast::Context& ctx,
                DiagnosticEngine& diags, LoadedSource* out) {
  out->main_file = file_id;
  Loader(opts, sources, ctx, diags, out).load(file_id, true);
}

}  // namespace etc
