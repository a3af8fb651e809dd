#include "checkers/diagnosis.h"

#include <fmt/format.h>

#include <algorithm>

namespace idem::detail {

namespace {

using Wide = __int128;

constexpr size_t kMaxItems = 24;
constexpr int kMaxCap = 8;

} // namespace

Combinations findCombinations(const std::vector<Item>& input, int64_t target, size_t maxSolutions, size_t maxNodes) {
  Combinations out;
  if (input.size() > kMaxItems) {
    out.complete = false;
    return out;
  }
  std::vector<Item> items = input;
  for (auto& it : items) {
    if (it.cap > kMaxCap) {
      it.cap = kMaxCap;
      out.complete = false;
    }
    it.cap = std::max(it.cap, 0);
  }
  const size_t n = items.size();
  std::vector<Wide> lo(n + 1, 0), hi(n + 1, 0); // reachable range of sum over items i..n-1
  for (size_t i = n; i-- > 0;) {
    Wide span = static_cast<Wide>(items[i].amount) * items[i].cap;
    lo[i] = lo[i + 1] + std::min<Wide>(0, span);
    hi[i] = hi[i + 1] + std::max<Wide>(0, span);
  }
  std::vector<int> x(n, 0);
  size_t nodes = 0;
  bool stop = false;
  auto dfs = [&](auto&& self, size_t i, Wide rem) -> void {
    if (stop) return;
    if (++nodes > maxNodes) {
      out.complete = false;
      stop = true;
      return;
    }
    if (rem < lo[i] || rem > hi[i]) return;
    if (i == n) {
      if (rem != 0) return;
      out.solutions.push_back(x);
      if (out.solutions.size() >= maxSolutions) {
        out.complete = false;
        stop = true;
      }
      return;
    }
    for (int v = 0; v <= items[i].cap && !stop; ++v) {
      x[i] = v;
      self(self, i + 1, rem - static_cast<Wide>(v) * items[i].amount);
    }
    x[i] = 0;
  };
  dfs(dfs, 0, target);
  return out;
}

std::string times(int k) {
  if (k == 1) return "once";
  if (k == 2) return "twice";
  return fmt::format("{} times", k);
}

std::string listAnd(const std::vector<std::string>& words) {
  if (words.empty()) return "";
  if (words.size() == 1) return words[0];
  std::string out;
  for (size_t i = 0; i + 1 < words.size(); ++i) out += (i ? ", " : "") + words[i];
  return out + " and " + words.back();
}

std::string listNumbers(const std::vector<int>& ns) {
  std::vector<std::string> w;
  for (int n : ns) w.push_back(std::to_string(n));
  return listAnd(w);
}

void cite(Violation& v, const Story& s) {
  v.ops.insert(v.ops.end(), s.ops.begin(), s.ops.end());
  v.entries.insert(v.entries.end(), s.entries.begin(), s.entries.end());
  if (v.kill_point.empty()) v.kill_point = s.kill_point;
}

void tidy(Violation& v) {
  auto uniq = [](auto& vec) {
    std::sort(vec.begin(), vec.end());
    vec.erase(std::unique(vec.begin(), vec.end()), vec.end());
  };
  uniq(v.ops);
  uniq(v.events);
  uniq(v.candidates);
  // entries keep their stream order (ids sort as text wrongly: 1-10 < 1-2); only drop repeats
  std::vector<std::string> seen;
  for (const auto& e : v.entries) {
    if (std::find(seen.begin(), seen.end(), e) == seen.end()) seen.push_back(e);
  }
  v.entries = seen;
}

} // namespace idem::detail
