// splitmix64 (Steele, Lea and Flood): a 64-bit generator whose every output is a fixed function
// of its state, so the prover's sample points, the interpreter's random order of the tiles and
// etc-run's random tensors are the same on every machine.
#pragma once

#include <cstdint>

namespace etc {

// The output for state x (the state advanced once): a value per key with no state to carry.
inline uint64_t splitmixAt(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The next value of the sequence in `state`.
inline uint64_t splitmix(uint64_t& state) {
  uint64_t out = splitmixAt(state);
  state += 0x9E3779B97F4A7C15ull;
  return out;
}

}  // namespace etc
