// A launch stopped by the watchdog leaves the GPU and the context usable: in one process, a
// program that waits forever (compiled with --no-verify-schedule) and a correct one take
// turns; every hang must end with the kernel's error record within 2 s, and every correct
// launch after it must give the exact answer. Exit status: 0 pass, 1 fail, 77 no GPU (skip).
//
//   etc-watchdog-recovery HANG.fatbin GOOD.fatbin
//
// HANG has an input x and an output y of shape [N]; GOOD is samples/two_stage_sum.etir.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "etc/runtime.hpp"

namespace {

using etc::DeviceBuffer;

int failures = 0;

void expect(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
  if (!ok) ++failures;
}

// Launches the hanging program and expects its error record, not a hang and not a CUDA error.
void runHang(etc::Module& m, int round) {
  const int64_t n = 100;
  m.setSym("N", n);
  DeviceBuffer x(m.handle(), n * 4), y(m.handle(), n * 4);
  m.bind("x", x.get(), ETC_DTYPE_F32, {n});
  m.bind("y", y.get(), ETC_DTYPE_F32, {n});
  const auto t0 = std::chrono::steady_clock::now();
  std::string message;
  etc_status status = ETC_STATUS_OK;
  try {
    m.launch("", nullptr, {ETC_MODE_MEGA, 0, 0});
    m.checkError(nullptr);
  } catch (const etc::RuntimeError& e) {
    status = e.status();
    message = e.what();
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const bool reported = message.find("wait timed out in task @consume (0): event half[0] has 1 of 2 notifies") !=
                        std::string::npos;
  expect(status == ETC_STATUS_KERNEL && reported && ms < 2000,
         "round " + std::to_string(round) + ": hang stopped after " + std::to_string(static_cast<int>(ms)) +
             " ms: " + (message.empty() ? "no error reported" : message));
}

// Launches the two-stage sum on values whose float sum is exact and compares bit for bit.
void runGood(etc::Module& m, int round) {
  const int64_t n = 1000 + 4093 * round;
  m.setSym("N", n);
  std::vector<float> a(static_cast<size_t>(n));
  double want = 0;
  for (int64_t i = 0; i < n; ++i) {
    a[static_cast<size_t>(i)] = static_cast<float>((i * 7 + round) % 13) * 0.5f;
    want += a[static_cast<size_t>(i)];
  }
  DeviceBuffer da(m.handle(), a.size() * 4), dout(m.handle(), 4);
  etc::checkStatus(etc_module_memcpy_htod(m.handle(), da.get(), a.data(), a.size() * 4));
  const float poison = -1.0f;
  etc::checkStatus(etc_module_memcpy_htod(m.handle(), dout.get(), &poison, 4));
  m.bind("a", da.get(), ETC_DTYPE_F32, {n});
  m.bind("out", dout.get(), ETC_DTYPE_F32, {1});
  std::string message;
  float got = poison;
  try {
    m.launch("", nullptr, {ETC_MODE_MEGA, 0, 0});
    m.checkError(nullptr);
    etc::checkStatus(etc_module_memcpy_dtoh(m.handle(), &got, dout.get(), 4));
  } catch (const etc::RuntimeError& e) {
    message = e.what();
  }
  expect(message.empty() && static_cast<double>(got) == want,
         "round " + std::to_string(round) + ": correct launch after the hang, N=" + std::to_string(n) + ": got " +
             std::to_string(got) + ", want " + std::to_string(want) + (message.empty() ? "" : ": " + message));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s HANG.fatbin GOOD.fatbin\n", argv[0]);
    return 2;
  }
  try {
    etc::Module hang = etc::Module::openFile(argv[1]);
    etc::Module good = etc::Module::openFile(argv[2]);
    try {
      hang.loadDevice(0);
    } catch (const etc::RuntimeError& e) {
      if (e.status() == ETC_STATUS_NO_DRIVER || e.status() == ETC_STATUS_NO_DEVICE) {
        std::printf("SKIP: %s\n", e.what());
        return 77;
      }
      throw;
    }
    good.loadDevice(0);
    for (int round = 0; round < 3; ++round) {
      runHang(hang, round);
      runGood(good, round);
    }
  } catch (const std::exception& e) {
    std::printf("FAIL %s\n", e.what());
    return 1;
  }
  std::printf("%s\n", failures == 0 ? "ALL PASS" : "FAILED");
  return failures == 0 ? 0 : 1;
}
