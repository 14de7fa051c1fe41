// Deterministic byte-level mutations of model files, shared by the loader gtests
// (tests/unit/test_loader.cpp) and the ASan fuzz driver (tests/fuzz/fuzz_loader.cpp).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace onnxgpu::fuzz {

// splitmix64: tiny, fast, and the same sequence on every platform.
struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); n > 0.
  size_t below(size_t n) { return size_t(next() % n); }
};

inline std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::string truncated(const std::string& s, Rng& rng) { return s.substr(0, rng.below(s.size() + 1)); }

inline std::string bit_flipped(std::string s, Rng& rng, int flips) {
  if (s.empty()) return s;
  for (int i = 0; i < flips; ++i) s[rng.below(s.size())] ^= char(1u << rng.below(8));
  return s;
}

inline std::string byte_inserted(std::string s, Rng& rng) {
  size_t n = 1 + rng.below(4);
  for (size_t i = 0; i < n; ++i) s.insert(s.begin() + std::ptrdiff_t(rng.below(s.size() + 1)), char(rng.next()));
  return s;
}

// Overwrites one byte with a value protobuf parsers find interesting (varint continuation, wire types).
inline std::string byte_set(std::string s, Rng& rng) {
  static const unsigned char kValues[] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0x08, 0x0a, 0x12, 0x1a, 0x22, 0x3a, 0x42};
  if (s.empty()) return s;
  s[rng.below(s.size())] = char(kValues[rng.below(sizeof kValues)]);
  return s;
}

inline std::string chunk_erased(std::string s, Rng& rng) {
  if (s.empty()) return s;
  size_t at = rng.below(s.size());
  s.erase(at, 1 + rng.below(std::min<size_t>(16, s.size() - at)));
  return s;
}

inline std::string garbage(Rng& rng, size_t max_len) {
  std::string s(rng.below(max_len + 1), '\0');
  for (auto& c : s) c = char(rng.next());
  return s;
}

// One of the mutations above, chosen by `rng`.
inline std::string mutate(const std::string& s, Rng& rng) {
  switch (rng.below(6)) {
    case 0: return truncated(s, rng);
    case 1: return bit_flipped(s, rng, 1);
    case 2: return bit_flipped(s, rng, 1 + int(rng.below(8)));
    case 3: return byte_inserted(s, rng);
    case 4: return byte_set(s, rng);
    default: return chunk_erased(s, rng);
  }
}

}  // namespace onnxgpu::fuzz
