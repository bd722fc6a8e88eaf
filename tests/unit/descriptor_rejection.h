// For the descriptor tests: the message with which parseDescriptor refuses a descriptor.
// (Apart from runtime_fixtures, which the fuzz replayers link without GoogleTest.)
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "runtime/src/descriptor.h"
#include "runtime/src/rt_error.h"

namespace etc::rt::testing {

// The error message, expecting ETC_STATUS_BAD_DESCRIPTOR; "(accepted)" if parsed.
inline std::string rejection(const nlohmann::json& j) {
  try {
    parseDescriptor(j.dump());
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), ETC_STATUS_BAD_DESCRIPTOR);
    return e.what();
  }
  return "(accepted)";
}

}  // namespace etc::rt::testing
