// Make dependency files (etcc -MD) and atomic output writing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "compiler/driver/atomic_file.h"
#include "compiler/driver/depfile.h"
#include "compiler/support/source.h"

namespace etc {
namespace {

namespace fs = std::filesystem;

TEST(Depfile, OneRuleMainFileFirst) {
  DepfileOptions o;
  o.targets = {"out/mlp.fatbin"};
  EXPECT_EQ(renderDepfile(o, {"mlp.etir", "inc/common.etir"}),
            "out/mlp.fatbin: \\\n  mlp.etir \\\n  inc/common.etir\n");
}

TEST(Depfile, PhonyRulesForIncludedFilesOnly) {
  DepfileOptions o;
  o.targets = {"a.fatbin", "b"};
  o.phony = true;
  EXPECT_EQ(renderDepfile(o, {"a.etir", "x.etir", "y.etir"}),
            "a.fatbin b: \\\n  a.etir \\\n  x.etir \\\n  y.etir\n\nx.etir:\n\ny.etir:\n");
}

TEST(Depfile, EscapesWhatMakeWouldSplitOrExpand) {
  EXPECT_EQ(escapeForMake("my dir/a.etir"), "my\\ dir/a.etir");
  EXPECT_EQ(escapeForMake("a$b#c"), "a$$b\\#c");
  // A backslash before a space is doubled so that make reads one backslash and an escaped space.
  EXPECT_EQ(escapeForMake("a\\ b"), "a\\\\\\ b");
  EXPECT_EQ(escapeForMake("plain/path.etir"), "plain/path.etir");
}

TEST(Depfile, FilesReadSkipsBuffersAndKeepsOrder) {
  fs::path dir = fs::temp_directory_path() / ("etc_depfile_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* n : {"main.etir", "inc.etir"}) std::ofstream(dir / n) << "// x\n";
  SourceManager sources;
  std::string error;
  ASSERT_NE(sources.addFile((dir / "main.etir").string(), &error), 0u);
  sources.addBuffer("<stdin>", "module @m\n");
  ASSERT_NE(sources.addFile((dir / "inc.etir").string(), &error), 0u);
  EXPECT_EQ(filesRead(sources),
            (std::vector<std::string>{(dir / "main.etir").string(), (dir / "inc.etir").string()}));
  fs::remove_all(dir);
}

TEST(AtomicFile, ReplacesWholeFileAndLeavesNoTemporary) {
  fs::path dir = fs::temp_directory_path() / ("etc_atomic_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string path = (dir / "out.bin").string();
  std::string error;
  ASSERT_TRUE(writeFileAtomically(path, std::string("old contents, longer"), &error)) << error;
  ASSERT_TRUE(writeFileAtomically(path, std::string("new\0x", 5), &error)) << error;
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), std::string("new\0x", 5));
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1u);
  fs::remove_all(dir);
}

TEST(AtomicFile, FailureNamesTheFileAndWritesNothing) {
  std::string error;
  EXPECT_FALSE(writeFileAtomically("/nonexistent-dir-etc/out.fatbin", "x", &error));
  EXPECT_EQ(error, "cannot write '/nonexistent-dir-etc/out.fatbin': No such file or directory");
}

}  // namespace
}  // namespace etc
