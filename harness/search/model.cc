/// The RapidCheck generators of the model. Containers are built here rather than with gen::container so
/// that their length has a fixed range and distribution (gen::container ties it to the size parameter)
/// while shrinking the RapidCheck way: remove chunks first, then shrink each element.
#include "search/model.h"

#include <rapidcheck.h>

#include <algorithm>

namespace idem {

namespace {

/// A vector shrinkable from element shrinkables: shrinks by removing chunks (never below `minSize`)
/// and then by shrinking each element.
template <typename T>
rc::Shrinkable<std::vector<T>> vectorOf(std::vector<rc::Shrinkable<T>> elems, size_t minSize) {
  using Elems = std::vector<rc::Shrinkable<T>>;
  auto s = rc::shrinkable::shrinkRecur(std::move(elems), [minSize](const Elems& es) {
    auto removals = rc::seq::filter(rc::shrink::removeChunks(es), [minSize](const Elems& v) { return v.size() >= minSize; });
    auto each = rc::shrink::eachElement(es, [](const rc::Shrinkable<T>& e) { return e.shrinks(); });
    return rc::seq::concat(std::move(removals), std::move(each));
  });
  return rc::shrinkable::map(std::move(s), [](const Elems& es) {
    std::vector<T> v;
    v.reserve(es.size());
    for (const auto& e : es) v.push_back(e.value());
    return v;
  });
}

/// A vector whose length is c with probability weights[c] / Σ weights.
template <typename T>
rc::Gen<std::vector<T>> weightedVector(rc::Gen<T> elem, std::vector<int> weights) {
  return [=](const rc::Random& random, int size) {
    rc::Random r(random);
    int total = 0;
    for (int w : weights) total += w;
    int pick = static_cast<int>(r.split().next() % static_cast<uint64_t>(std::max(1, total)));
    size_t count = 0, minSize = weights.size();
    for (size_t c = 0; c < weights.size(); ++c) {
      if (weights[c] > 0) minSize = std::min(minSize, c);
    }
    for (size_t c = 0; c < weights.size(); ++c) {
      if (pick < weights[c]) {
        count = c;
        break;
      }
      pick -= weights[c];
    }
    std::vector<rc::Shrinkable<T>> elems;
    for (size_t i = 0; i < count; ++i) elems.push_back(elem(r.split(), size));
    return vectorOf(std::move(elems), minSize);
  };
}

/// A vector of exactly gens.size() elements, element i from gens[i].
rc::Gen<std::vector<int64_t>> fixedVector(std::vector<rc::Gen<int64_t>> gens) {
  return [=](const rc::Random& random, int size) {
    rc::Random r(random);
    std::vector<rc::Shrinkable<int64_t>> elems;
    for (const auto& g : gens) elems.push_back(g(r.split(), size));
    return vectorOf(std::move(elems), gens.size());
  };
}

std::vector<int> uniform(int lo, int hi) {
  std::vector<int> w(static_cast<size_t>(std::max(hi, 0)) + 1, 0);
  for (int c = std::max(lo, 0); c <= hi; ++c) w[c] = 1;
  return w;
}

rc::Gen<bool> coin() {
  return rc::gen::map(rc::gen::inRange(0, 2), [](int x) { return x == 1; });
}

} // namespace

std::string versionKeyField(const Scenario& sc) {
  for (const auto& f : sc.fields)
    if (f.gen == "version") return f.of;
  return "";
}

rc::Gen<Shape> shapeGen(const Scenario& sc, const KillModel& km, const ModelParams& p) {
  using namespace rc;
  std::vector<Gen<int64_t>> draws;
  for (const auto& f : sc.fields) {
    if (f.gen == "key") draws.push_back(gen::inRange<int64_t>(0, std::max<int64_t>(1, sc.keys.size())));
    else if (f.gen == "int") draws.push_back(gen::inRange<int64_t>(f.min, f.max + 1));
    else if (f.gen == "pick") draws.push_back(gen::inRange<int64_t>(0, std::max<int64_t>(1, f.values.size())));
  }
  int maxEvents = std::max(1, p.maxEvents);
  bool versioned = !versionKeyField(sc).empty();
  const bool several = p.maxConsumers >= 2;
  auto retry = gen::build<Shape::Retry>(gen::set(&Shape::Retry::phase, gen::inRange(1, std::max(1, p.maxPhases) + 1)),
                                        gen::set(&Shape::Retry::offset, gen::inRange(0, 2 * maxEvents + 2)),
                                        gen::set(&Shape::Retry::inflight, several ? gen::map(gen::inRange(0, 10), [](int x) { return x >= 6; })
                                                                                  : gen::just(false)));
  std::vector<int> retryWeights{7, 2, 1};
  retryWeights.resize(static_cast<size_t>(std::max(0, p.maxRetriesPerEvent)) + 1);
  auto event = gen::build<Shape::Event>(
      gen::set(&Shape::Event::retries, weightedVector(retry, retryWeights)),
      gen::set(&Shape::Event::draws, fixedVector(draws)),
      gen::set(&Shape::Event::order, versioned ? gen::inRange(0, maxEvents) : gen::just(0)));
  int verbs = std::max<int>(1, km.verbs().size());
  const bool relay = km.relay() && !km.relay()->empty();
  int maxK = std::max(1, km.maxBound(maxEvents));
  auto kill = gen::build<Shape::Kill>(gen::set(&Shape::Kill::verb, gen::inRange(0, verbs)),
                                      gen::set(&Shape::Kill::before, coin()),
                                      gen::set(&Shape::Kill::k, gen::inRange(1, maxK + 1)),
                                      gen::set(&Shape::Kill::kind, p.faultKinds.size() > 1
                                                                       ? gen::inRange(0, int(p.faultKinds.size()))
                                                                       : gen::just(0)),
                                      gen::set(&Shape::Kill::pastLease, sc.http || p.callTimeoutMs > 0 ? gen::map(gen::inRange(0, 4), [](int x) { return x == 3; })
                                                                                : gen::just(false)),
                                      // With an outbox relay one more choice: r1 (materialize).
                                      gen::set(&Shape::Kill::process, several || relay
                                                                          ? gen::inRange(0, p.maxConsumers + (relay ? 1 : 0))
                                                                          : gen::just(0)));
  int maxHoldK = std::max(1, km.maxBound(maxEvents));
  auto hold = gen::build<Shape::Hold>(gen::set(&Shape::Hold::process, gen::inRange(0, std::max(1, p.maxConsumers))),
                                      gen::set(&Shape::Hold::verb, gen::inRange(0, verbs)),
                                      gen::set(&Shape::Hold::before, gen::map(coin(), [](bool b) { return !b; })),
                                      gen::set(&Shape::Hold::k, gen::inRange(1, maxHoldK + 1)),
                                      // Released by the others' idleness or another process's point: both
                                      // decide the order. A time (release 1) would leave it to how fast
                                      // the others run, so it is for holds a user writes.
                                      gen::set(&Shape::Hold::release, gen::element(0, 2)),
                                      gen::set(&Shape::Hold::other, gen::inRange(0, std::max(1, p.maxConsumers - 1))),
                                      gen::set(&Shape::Hold::untilVerb, gen::inRange(0, verbs)),
                                      gen::set(&Shape::Hold::untilBefore, coin()),
                                      gen::set(&Shape::Hold::untilK, gen::inRange(1, maxHoldK + 1)));
  std::vector<int> holdWeights{1, 2, 1};
  holdWeights.resize(static_cast<size_t>(std::max(0, p.maxHolds)) + 1);
  const bool http = sc.http.has_value();
  // HTTP: a request's kind and wait are weighted so that most are plain sends; each shrinks toward one.
  auto request = gen::build<Shape::Request>(
      // Thresholds over inRange, which shrinks toward 0 (a send that waits), where weightedElement would not.
      gen::set(&Shape::Request::kind, gen::map(gen::inRange(0, 17), [](int x) { return x < 12 ? 0 : x < 15 ? 1 : x - 13; })),
      gen::set(&Shape::Request::key, gen::inRange(0, maxEvents)),
      gen::set(&Shape::Request::wait, gen::map(gen::inRange(0, 18), [](int x) { return x < 10 ? 0 : x < 15 ? 1 : x - 13; })),
      gen::set(&Shape::Request::mismatch, gen::map(gen::inRange(0, 10), [](int x) { return x >= 8; })),
      gen::set(&Shape::Request::copies, gen::inRange(2, std::max(2, p.maxBurst) + 1)),
      gen::set(&Shape::Request::malformed, gen::inRange(0, 3)),
      gen::set(&Shape::Request::late, gen::map(gen::inRange(0, 10), [](int x) { return x >= 9; })));
  if (http) event = gen::build<Shape::Event>(gen::set(&Shape::Event::draws, fixedVector(draws)));
  int minC = std::clamp(p.minConsumers, 1, kMaxConsumers), maxC = std::clamp(p.maxConsumers, minC, kMaxConsumers);
  int keys = std::max<int>(1, sc.keys.size());
  auto base = gen::build<Shape>(
      gen::set(&Shape::events, weightedVector(event, uniform(std::max(1, p.minEvents), maxEvents))),
      gen::set(&Shape::kills, weightedVector(kill, uniform(p.minKills, std::max(p.minKills, p.maxKills)))),
      gen::set(&Shape::keys, gen::inRange(1, keys + 1)),
      gen::set(&Shape::sameName, p.drawRestart ? coin() : gen::just(false)),
      gen::set(&Shape::consumers, minC < maxC ? gen::inRange(minC, maxC + 1) : gen::just(minC)),
      gen::set(&Shape::holds, several && p.maxHolds > 0 ? weightedVector(hold, holdWeights)
                                                        : gen::just(std::vector<Shape::Hold>{})));
  // The requests apart, so that a consumer scenario's shapes are drawn from the same random stream as before
  // HTTP scenarios existed: a seed gives the same schedules in every version.
  if (!http) return base;
  auto withRequests = gen::map(gen::pair(base, weightedVector(request, uniform(1, std::max(1, p.maxRequests)))),
                               [](std::pair<Shape, std::vector<Shape::Request>> x) {
                                 x.first.requests = std::move(x.second);
                                 return std::move(x.first);
                               });
  const int minR = std::clamp(p.minReplicas, 1, kMaxReplicas), maxR = std::clamp(p.maxReplicas, minR, kMaxReplicas);
  if (maxR == 1) return withRequests;
  // Where the requests go, apart from the rest: a route per possible request, each shrinking toward replica 1.
  std::vector<Gen<int64_t>> routes(static_cast<size_t>(std::max(1, p.maxRequests)), gen::inRange<int64_t>(0, 6));
  // Holds of one replica's step against the others (hold:s1:…), when asked for (--faults …,hold).
  auto holds = p.maxHolds > 0 ? weightedVector(hold, holdWeights) : gen::just(std::vector<Shape::Hold>{});
  using Extra = std::tuple<int, std::vector<int64_t>, std::vector<Shape::Hold>>;
  auto extra = gen::tuple(minR < maxR ? gen::inRange(minR, maxR + 1) : gen::just(minR), fixedVector(routes), holds);
  // The rest is drawn from the case's random source exactly as with one replica; the replicas from a split of
  // it that nothing else uses.
  return [=](const rc::Random& random, int size) {
    rc::Random r(random);
    r.split();
    r.split();
    rc::Random apart = r.split();
    return rc::shrinkable::map(rc::shrinkable::pair(withRequests(random, size), extra(apart, size)),
                               [](const std::pair<Shape, Extra>& x) {
                                 Shape s = x.first;
                                 s.replicas = std::get<0>(x.second);
                                 s.routes = std::get<1>(x.second);
                                 s.holds = std::get<2>(x.second);
                                 return s;
                               });
  };
}

rc::Shrinkable<Shape> generateCase(const rc::Gen<Shape>& gen, uint64_t seed, uint64_t index) {
  rc::Random random(rc::Random::Key{seed, index, 0x6964656d70726f6fULL, 0x636865636bULL});
  return gen(random, rc::kNominalSize);
}

} // namespace idem
