#pragma once
/// The one seeded generator of idemproof: everything a seed decides (generated events, shuffled streams)
/// draws from it, so a seed printed on one machine replays the same schedule on another standard library
/// and compiler. The C++ distributions (std::uniform_int_distribution, std::shuffle) are left to each
/// implementation and are not used for that. (RapidCheck's own generator, behind `check`, is portable too:
/// it is its own code, not the standard library's.)
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace idem {

/// SplitMix64 (Steele, Lea, Flood 2014): a 64-bit state, every output fully specified.
class Rng {
public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  /// Uniform in [0, n), n > 0, without modulo bias (Lemire's multiply-and-reject).
  uint64_t below(uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
    auto low = static_cast<uint64_t>(m);
    if (low < n) {
      uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  /// Uniform in [lo, hi], lo <= hi.
  int64_t between(int64_t lo, int64_t hi) {
    uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    if (span == UINT64_MAX) return static_cast<int64_t>(next());
    return static_cast<int64_t>(static_cast<uint64_t>(lo) + below(span + 1));
  }

  /// Fisher–Yates, from the back.
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

private:
  uint64_t state_;
};

} // namespace idem
