// Worker threads (core/workers.h): every index once, on the workers asked for, worker 0 the caller's
// thread, and an exception stops the hand-out and reaches the caller after every thread stopped.
#include "core/workers.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace idem;

TEST_CASE("parallelFor calls every index once on the workers asked for, worker 0 on the caller's thread") {
  for (int workers : {1, 3, 8}) {
    std::vector<std::atomic<int>> calls(50);
    std::mutex mu;
    std::set<int> seen;
    bool callerIsZero = true;
    const auto caller = std::this_thread::get_id();
    parallelFor(calls.size(), workers, [&](int w, size_t i) {
      calls[i]++;
      std::lock_guard<std::mutex> lock(mu);
      seen.insert(w);
      if ((std::this_thread::get_id() == caller) != (w == 0)) callerIsZero = false;
    });
    for (const auto& c : calls) CHECK(c == 1);
    CHECK(*seen.rbegin() < workers);
    CHECK(callerIsZero);
  }
  int none = 0;
  parallelFor(0, 4, [&](int, size_t) { ++none; });
  CHECK(none == 0);
}

TEST_CASE("parallelFor rethrows a worker's exception after the others stopped, and starts no index after it") {
  std::atomic<int> running{0};
  auto body = [&](int, size_t i) {
    ++running;
    struct Leave {
      std::atomic<int>& n;
      ~Leave() { --n; }
    } leave{running};
    if (i == 3) throw std::runtime_error("index 3");
  };
  CHECK_THROWS_WITH(parallelFor(1000, 4, body), "index 3");
  CHECK(running == 0); // every worker returned before the exception reached the caller
  // One worker: the indices after the one that threw are never started.
  std::vector<size_t> started;
  CHECK_THROWS(parallelFor(10, 1, [&](int, size_t i) {
    started.push_back(i);
    if (i == 3) throw std::runtime_error("index 3");
  }));
  CHECK(started == std::vector<size_t>{0, 1, 2, 3});
}

TEST_CASE("onWorkers runs the body once per worker and tells the others of an error") {
  std::atomic<int> bodies{0}, errors{0};
  onWorkers(3, [&](int) { ++bodies; });
  CHECK(bodies == 3);
  CHECK_THROWS_AS(onWorkers(2, [&](int w) { if (w == 1) throw std::logic_error("w1"); }, [&] { ++errors; }),
                  std::logic_error);
  CHECK(errors == 1);
}
