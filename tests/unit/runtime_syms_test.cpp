#include <gtest/gtest.h>

#include "runtime/src/descriptor.h"
#include "runtime/src/rt_error.h"
#include "runtime/src/sym_state.h"
#include "runtime_fixtures.h"

namespace {

using etc::rt::Error;

class RuntimeSyms : public ::testing::Test {
 protected:
  etc::rt::Descriptor d = etc::rt::parseDescriptor(etc::rt::testing::sampleDescriptor().dump());
  etc::rt::SymState st{d};

  template <typename F>
  std::string errorOf(F&& f, etc_status want) {
    try {
      f();
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), want) << e.what();
      return e.what();
    }
    return "(no error)";
  }
};

TEST_F(RuntimeSyms, RangeChecked) {
  st.setSym("B", 128);
  st.setSym("B", 1);
  EXPECT_EQ(st.sym("B"), 1);
  EXPECT_EQ(errorOf([&] { st.setSym("B", 200); }, ETC_STATUS_BAD_SYM), "sym B = 200 is outside its range [1, 128]");
  EXPECT_EQ(errorOf([&] { st.setSym("B", 0); }, ETC_STATUS_BAD_SYM), "sym B = 0 is outside its range [1, 128]");
  EXPECT_EQ(st.sym("B"), 1);  // a rejected value leaves the old one
  EXPECT_EQ(errorOf([&] { st.setSym("Q", 1); }, ETC_STATUS_NOT_FOUND), "no sym named 'Q' (the module's syms: B, N)");
}

TEST_F(RuntimeSyms, UnsetSymsAreNamed) {
  EXPECT_EQ(errorOf([&] { st.sym("N"); }, ETC_STATUS_BAD_SYM), "sym N is not set");
  EXPECT_EQ(errorOf([&] { st.symValues(); }, ETC_STATUS_BAD_SYM), "sym B is not set");
  EXPECT_EQ(st.tensorShape(1), (std::vector<int64_t>{64, 32}));  // needs no sym
  st.setSym("B", 4);
  EXPECT_EQ(st.tensorShape(0), (std::vector<int64_t>{4, 64}));
  EXPECT_EQ(errorOf([&] { st.tensorShape(2); }, ETC_STATUS_BAD_SYM), "sym N is not set (the shape of tensor t needs it)");
}

TEST_F(RuntimeSyms, ShapesFollowSyms) {
  st.setSym("B", 33);
  st.setSym("N", 1000);
  EXPECT_EQ(st.tensorShape(2), (std::vector<int64_t>{33, 63}));
  EXPECT_EQ(st.eventShape(0), (std::vector<int64_t>{3, 2}));
  st.setSym("N", 1024);
  EXPECT_EQ(st.tensorShape(2), (std::vector<int64_t>{33, 64}));
}

TEST_F(RuntimeSyms, BindingChecksDtypeAndShape) {
  st.setSym("B", 4);
  st.bind("x", 0x1000, ETC_DTYPE_BF16, {4, 64});
  EXPECT_TRUE(st.binding(0).bound);
  EXPECT_EQ(errorOf([&] { st.bind("x", 0x1000, ETC_DTYPE_F32, {4, 64}); }, ETC_STATUS_BAD_BINDING),
            "tensor x is bf16, the buffer bound to it is f32");
  EXPECT_EQ(errorOf([&] { st.bind("x", 0x1000, ETC_DTYPE_BF16, {3, 64}); }, ETC_STATUS_BAD_BINDING),
            "tensor x has shape [B, H] = [4, 64] for these syms, the buffer bound to it has shape [3, 64]");
  EXPECT_EQ(errorOf([&] { st.bind("x", 0x1000, ETC_DTYPE_BF16, {4, 64, 1}); }, ETC_STATUS_BAD_BINDING),
            "tensor x has shape [B, H] = [4, 64] for these syms, the buffer bound to it has shape [4, 64, 1]");
  EXPECT_EQ(errorOf([&] { st.bind("t", 0x1000, ETC_DTYPE_F32, {4, 1}); }, ETC_STATUS_BAD_BINDING),
            "tensor t is a temp: the runtime allocates it");
  EXPECT_EQ(errorOf([&] { st.bind("z", 0x1000, ETC_DTYPE_F32, {}); }, ETC_STATUS_NOT_FOUND), "no tensor named 'z'");
  EXPECT_EQ(errorOf([&] { st.bind("w", 0, ETC_DTYPE_F32, {64, 32}); }, ETC_STATUS_BAD_BINDING),
            "tensor w: the device pointer is null");
}

TEST_F(RuntimeSyms, LaunchChecksEveryBindingAgainstTheCurrentSyms) {
  st.setSym("B", 4);
  st.setSym("N", 16);
  st.bind("x", 0x1000, ETC_DTYPE_BF16, {4, 64});
  st.bind("w", 0x2000, ETC_DTYPE_F32, {64, 32});
  EXPECT_EQ(errorOf([&] { st.checkBindings(); }, ETC_STATUS_BAD_BINDING), "tensor y (output) is not bound");
  st.bind("y", 0x3000, ETC_DTYPE_F32, {4, 32});
  st.checkBindings();
  st.setSym("B", 5);  // the bound buffers no longer fit
  EXPECT_EQ(errorOf([&] { st.checkBindings(); }, ETC_STATUS_BAD_BINDING),
            "tensor x has shape [B, H] = [5, 64] for these syms, the buffer bound to it has shape [4, 64]");
}

TEST_F(RuntimeSyms, BindingBeforeSymsChecksDtypeNowAndShapeLater) {
  st.bind("x", 0x1000, ETC_DTYPE_BF16, {7, 64});
  EXPECT_EQ(errorOf([&] { st.bind("y", 0x1000, ETC_DTYPE_BF16, {7, 32}); }, ETC_STATUS_BAD_BINDING),
            "tensor y is f32, the buffer bound to it is bf16");
  st.setSym("B", 6);
  st.setSym("N", 1);
  st.bind("w", 0x2000, ETC_DTYPE_F32, {64, 32});
  st.bind("y", 0x3000, ETC_DTYPE_F32, {6, 32});
  EXPECT_EQ(errorOf([&] { st.checkBindings(); }, ETC_STATUS_BAD_BINDING),
            "tensor x has shape [B, H] = [6, 64] for these syms, the buffer bound to it has shape [7, 64]");
}

// A launch reuses what it derived from the syms and bindings while version() is unchanged, so
// every accepted change must move it and a rejected one must not.
TEST_F(RuntimeSyms, VersionCountsEveryAcceptedChange) {
  const uint64_t v0 = st.version();
  st.setSym("B", 4);
  const uint64_t v1 = st.version();
  EXPECT_GT(v1, v0);
  st.setSym("B", 4);  // the same value again: still a change, as far as the launch can tell
  const uint64_t v2 = st.version();
  EXPECT_GT(v2, v1);
  st.bind("x", 0x1000, ETC_DTYPE_BF16, {4, 64});
  const uint64_t v3 = st.version();
  EXPECT_GT(v3, v2);
  st.bind("x", 0x5000, ETC_DTYPE_BF16, {4, 64});  // another buffer, same shape
  const uint64_t v4 = st.version();
  EXPECT_GT(v4, v3);
  errorOf([&] { st.setSym("B", 200); }, ETC_STATUS_BAD_SYM);
  errorOf([&] { st.bind("x", 0x1000, ETC_DTYPE_F32, {4, 64}); }, ETC_STATUS_BAD_BINDING);
  errorOf([&] { st.bind("z", 0x1000, ETC_DTYPE_F32, {}); }, ETC_STATUS_NOT_FOUND);
  EXPECT_EQ(st.version(), v4);
  st.sym("B");
  st.tensorShape(0);
  errorOf([&] { st.checkBindings(); }, ETC_STATUS_BAD_BINDING);  // reading changes nothing
  EXPECT_EQ(st.version(), v4);
  st.unbind("x");
  EXPECT_GT(st.version(), v4);
}

// Unbinding lets a caller free a buffer (a KV cache before a larger one): the next launch must
// refuse to run rather than use the freed pointer.
TEST_F(RuntimeSyms, UnboundTensorFailsTheLaunchUntilBoundAgain) {
  st.setSym("B", 4);
  st.setSym("N", 16);
  st.bind("x", 0x1000, ETC_DTYPE_BF16, {4, 64});
  st.bind("w", 0x2000, ETC_DTYPE_F32, {64, 32});
  st.bind("y", 0x3000, ETC_DTYPE_F32, {4, 32});
  st.checkBindings();
  st.unbind("w");
  EXPECT_FALSE(st.binding(1).bound);
  EXPECT_EQ(st.binding(1).ptr, 0u);
  EXPECT_EQ(errorOf([&] { st.checkBindings(); }, ETC_STATUS_BAD_BINDING), "tensor w (param) is not bound");
  st.unbind("w");  // twice is fine
  EXPECT_EQ(errorOf([&] { st.unbind("t"); }, ETC_STATUS_BAD_BINDING), "tensor t is a temp: the runtime allocates it");
  EXPECT_EQ(errorOf([&] { st.unbind("z"); }, ETC_STATUS_NOT_FOUND), "no tensor named 'z'");
  st.bind("w", 0x4000, ETC_DTYPE_F32, {64, 32});
  st.checkBindings();
  EXPECT_EQ(st.binding(1).ptr, 0x4000u);
}

}  // namespace
