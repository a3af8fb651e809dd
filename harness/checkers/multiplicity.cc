/// Two searches over the same space. Listing explanations goes by the number of units off (0, 1, 2, …),
/// so the simplest ones are all found before any budget runs out, in unit order within one size.
/// Counting them goes class by class (units of equal amount share one total, spread over the members
/// afterwards), which stays cheap on many equal amounts; it tells whether the list is complete.
#include "checkers/multiplicity.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace idem::detail {

namespace {

using Wide = __int128;

Wide magnitude(int64_t a) { return a < 0 ? -static_cast<Wide>(a) : a; }

/// Counts the explanations of `total`, up to `limit`, class by class.
class Counter {
public:
  Counter(const std::vector<Unit>& units, size_t limit, size_t maxNodes) : limit_(limit), maxNodes_(maxNodes) {
    std::map<int64_t, size_t> byAmount;
    for (const Unit& u : units) {
      int lo = std::max(0, u.lo), hi = std::max(lo, u.hi);
      auto [it, fresh] = byAmount.emplace(u.amount, classes_.size());
      if (fresh) classes_.push_back(Class{u.amount, {}, 0, 0});
      Class& c = classes_[it->second];
      c.members.emplace_back(lo, hi);
      c.lo += lo;
      c.hi += hi;
    }
    std::sort(classes_.begin(), classes_.end(),
              [](const Class& a, const Class& b) { return magnitude(a.amount) > magnitude(b.amount); });
    const size_t n = classes_.size();
    lo_.assign(n + 1, 0);
    hi_.assign(n + 1, 0);
    for (size_t i = n; i-- > 0;) {
      Wide a = static_cast<Wide>(classes_[i].amount) * classes_[i].lo;
      Wide b = static_cast<Wide>(classes_[i].amount) * classes_[i].hi;
      lo_[i] = lo_[i + 1] + std::min(a, b);
      hi_[i] = hi_[i + 1] + std::max(a, b);
    }
  }

  /// (count up to the limit, whether the search finished).
  std::pair<size_t, bool> run(int64_t total) {
    classes(0, total, 1);
    return {count_, !cut_};
  }

private:
  struct Class {
    int64_t amount = 0;
    std::vector<std::pair<int, int>> members; ///< (lo, hi) of each unit
    int lo = 0, hi = 0;
  };

  bool stop() {
    if (count_ >= limit_ || ++nodes_ > maxNodes_) {
      cut_ = cut_ || nodes_ > maxNodes_;
      return true;
    }
    return false;
  }

  /// `ways`: the spreads of the classes before i (saturated at the limit).
  void classes(size_t i, Wide rem, size_t ways) {
    if (stop()) return;
    if (rem < lo_[i] || rem > hi_[i]) return;
    if (i == classes_.size()) {
      if (rem == 0) count_ = std::min(limit_, count_ + ways);
      return;
    }
    const Class& c = classes_[i];
    for (int t = c.lo; t <= c.hi && count_ < limit_ && !cut_; ++t) {
      size_t w = spreads(c, t);
      if (w == 0) continue;
      classes(i + 1, rem - static_cast<Wide>(t) * c.amount, std::min(limit_, ways * w));
    }
  }

  /// How many ways `t` splits over the members of c within their bounds (saturated at the limit).
  size_t spreads(const Class& c, int t) const {
    std::vector<size_t> ways(static_cast<size_t>(t) + 1, 0); // ways[s]: members so far summing to s
    ways[0] = 1;
    for (const auto& [lo, hi] : c.members) {
      std::vector<size_t> next(ways.size(), 0);
      for (int s = 0; s <= t; ++s) {
        if (!ways[s]) continue;
        for (int v = lo; v <= hi && s + v <= t; ++v) next[s + v] = std::min(limit_, next[s + v] + ways[s]);
      }
      ways = std::move(next);
    }
    return ways[t];
  }

  size_t limit_, maxNodes_;
  std::vector<Class> classes_;
  std::vector<Wide> lo_, hi_;
  size_t count_ = 0, nodes_ = 0;
  bool cut_ = false;
};

/// Lists explanations by the number of units off. A unit that can't be at 1 (never delivered: at most 0)
/// is off in every explanation; it is set first.
class Lister {
public:
  Lister(const std::vector<Unit>& units, size_t want, size_t maxNodes)
      : units_(units), want_(want), maxNodes_(maxNodes), m_(units.size(), 1) {
    for (size_t i = 0; i < units.size(); ++i) (canBeOne(units[i]) ? free_ : forced_).push_back(i);
  }

  /// Explanations, fewest units off first, until `want` are found or the node budget ends.
  std::vector<std::vector<int>> run(int64_t total) {
    Wide need = total;
    for (const Unit& u : units_) need -= u.amount; // what the units off must add up to
    force(0, need);
    return std::move(out_);
  }

private:
  static int lo(const Unit& u) { return std::max(0, u.lo); }
  static int hi(const Unit& u) { return std::max(lo(u), u.hi); }
  static bool canBeOne(const Unit& u) { return lo(u) <= 1 && 1 <= hi(u); }

  bool over() {
    if (++nodes_ > maxNodes_ || out_.size() >= want_) done_ = true;
    return done_;
  }

  void force(size_t k, Wide need) {
    if (done_) return;
    if (k == forced_.size()) {
      for (size_t d = 0; d <= free_.size() && !done_; ++d) deviate(0, d, need);
      return;
    }
    const Unit& u = units_[forced_[k]];
    for (int v = lo(u); v <= hi(u) && !done_; ++v) {
      m_[forced_[k]] = v;
      force(k + 1, need - static_cast<Wide>(v - 1) * u.amount);
    }
    m_[forced_[k]] = 1;
  }

  /// Chooses `left` more free units off among free_[i..], whose deviations must add up to `need`.
  void deviate(size_t i, size_t left, Wide need) {
    if (over()) return;
    if (left == 0) {
      if (need == 0) out_.push_back(m_);
      return;
    }
    for (size_t j = i; j + left <= free_.size() && !done_; ++j) {
      const Unit& u = units_[free_[j]];
      for (int v = lo(u); v <= hi(u) && !done_; ++v) {
        if (v == 1) continue;
        m_[free_[j]] = v;
        deviate(j + 1, left - 1, need - static_cast<Wide>(v - 1) * u.amount);
      }
      m_[free_[j]] = 1;
    }
  }

  const std::vector<Unit>& units_;
  size_t want_, maxNodes_;
  std::vector<int> m_;
  std::vector<size_t> free_, forced_;
  std::vector<std::vector<int>> out_;
  size_t nodes_ = 0;
  bool done_ = false;
};

int64_t distance(const std::vector<int>& m) {
  int64_t d = 0;
  for (int x : m) d += x > 1 ? x - 1 : 1 - x;
  return d;
}

} // namespace

int deviations(const std::vector<int>& m) {
  return static_cast<int>(std::count_if(m.begin(), m.end(), [](int x) { return x != 1; }));
}

Explanations explain(const std::vector<Unit>& units, int64_t total, size_t maxSolutions, size_t maxNodes) {
  // How many there are (up to one more than will be listed) first: the listing stops once it has them all.
  auto [count, finished] = Counter(units, maxSolutions + 1, maxNodes).run(total);
  Explanations e;
  e.solutions = Lister(units, finished ? std::min(count, maxSolutions) : maxSolutions, maxNodes).run(total);
  std::stable_sort(e.solutions.begin(), e.solutions.end(), [](const auto& a, const auto& b) {
    int da = deviations(a), db = deviations(b);
    return da != db ? da < db : distance(a) < distance(b);
  });
  e.complete = finished && count <= e.solutions.size();
  return e;
}

} // namespace idem::detail
