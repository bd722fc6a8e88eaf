// How the tools' readers of user files (.npy, .safetensors, the arguments of etc-run) refuse
// one: an exception whose message says what is wrong, which the command prints.
#pragma once

#include <stdexcept>
#include <string>

namespace etc::tools {

[[noreturn]] inline void bad(const std::string& why) { throw std::runtime_error(why); }

}  // namespace etc::tools
