// A map from names to small values, for the symbol tables of large modules: open addressing
// with linear probing in one flat array, each slot holding the name's hash, the name and the
// value. A lookup is one hash and usually one cache line, where a node-based hash map takes a
// bucket, a node and a division (name lookups were a tenth of the front end's time on a 10 MB
// module). Names are only added, never removed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace etc {

template <class V>
class NameIndex {
 public:
  // The value of `name`, or null.
  const V* find(std::string_view name) const {
    if (slots_.empty()) return nullptr;
    const uint64_t h = hashOf(name);
    for (size_t i = h & mask();; i = (i + 1) & mask()) {
      const Slot& s = slots_[i];
      if (s.hash == 0) return nullptr;
      if (s.hash == h && s.name == name) return &s.value;
    }
  }
  // Adds `name` -> `value` unless `name` is present (then nothing changes, as
  // std::unordered_map::emplace). Returns whether it was added.
  bool insert(std::string_view name, V value) {
    if (2 * (count_ + 1) > slots_.size()) grow();
    const uint64_t h = hashOf(name);
    for (size_t i = h & mask();; i = (i + 1) & mask()) {
      Slot& s = slots_[i];
      if (s.hash == 0) {
        s.hash = h;
        s.name = std::string(name);
        s.value = std::move(value);
        ++count_;
        return true;
      }
      if (s.hash == h && s.name == name) return false;
    }
  }
  size_t size() const { return count_; }
  // Room for `n` names without growing.
  void reserve(size_t n) {
    while (2 * n > slots_.size()) grow();
  }

 private:
  struct Slot {
    uint64_t hash = 0;  // 0: empty (hashOf never returns 0)
    std::string name;
    V value{};
  };
  static uint64_t hashOf(std::string_view name) { return std::hash<std::string_view>{}(name) | 1; }
  size_t mask() const { return slots_.size() - 1; }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_ = std::vector<Slot>(old.empty() ? 16 : 2 * old.size());
    for (Slot& s : old) {
      if (s.hash == 0) continue;
      size_t i = s.hash & mask();
      while (slots_[i].hash != 0) i = (i + 1) & mask();
      slots_[i] = std::move(s);
    }
  }

  std::vector<Slot> slots_;  // size 0 or a power of two, at most half full
  size_t count_ = 0;
};

}  // namespace etc
