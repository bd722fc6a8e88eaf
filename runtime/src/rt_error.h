// The one exception type of the runtime's C++ internals. The C API catches it at the boundary
// and turns it into a status code plus the message that etc_last_error_message() returns.
#pragma once

#include <stdexcept>
#include <string>

#include "etc/runtime.h"

namespace etc::rt {

class Error : public std::runtime_error {
 public:
  Error(etc_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  etc_status status() const { return status_; }

 private:
  etc_status status_;
};

[[noreturn]] inline void fail(etc_status status, const std::string& message) { throw Error(status, message); }

}  // namespace etc::rt
