// The classes of a trace's kill points and the reduced selection of a long sweep (history/point_class.h),
// on hand-built histories shaped like the reference targets' traces.
#include "history/point_class.h"

#include <catch2/catch.hpp>

#include <map>

using namespace idem;

namespace {

/// A history being built: sends and one process's steps, numbered per verb as the proxies number them.
struct PcBuilder {
  History h;
  std::map<std::string, int> k;
  int64_t us = 0;

  void send(const std::string& entry, int n, bool retry = false) {
    ops::Send s;
    s.entry = entry;
    s.n = n;
    s.retry = retry;
    h.append("producer", s);
  }
  void step(const std::string& server, const std::string& verb, std::vector<std::string> delivered = {},
            std::vector<std::string> acked = {}) {
    ops::Step s;
    s.server = server;
    s.verb = verb;
    s.k = ++k[verb];
    s.tReqUs = ++us;
    for (auto& e : delivered) s.delivered.push_back({e, {}});
    s.empty = (verb == "XREADGROUP" || verb == "XAUTOCLAIM") && delivered.empty();
    s.acked = std::move(acked);
    h.append("c1", s);
  }
  /// One entry's work as dedup-table does it (a duplicate skips the UPDATE).
  void work(const std::string& entry, bool duplicate = false) {
    step("pg", "BEGIN");
    step("pg", "INSERT");
    if (!duplicate) step("pg", "UPDATE");
    step("pg", "COMMIT");
    step("valkey", "XACK", {}, {entry});
  }
};

/// `events` events sent once, then a retry of event 2, worked in order after one read.
PcBuilder walletLike(int events) {
  PcBuilder b;
  std::vector<std::string> entries;
  for (int n = 1; n <= events; ++n) {
    entries.push_back(std::to_string(n) + "-0");
    b.send(entries.back(), n);
  }
  entries.push_back(std::to_string(events + 1) + "-0");
  b.send(entries.back(), 2, true);
  b.step("pg", "PARSE");
  b.step("valkey", "XREADGROUP"); // nothing yet: no point
  b.step("valkey", "XREADGROUP", entries);
  for (size_t i = 0; i < entries.size(); ++i) b.work(entries[i], i + 1 == entries.size());
  return b;
}

std::map<std::string, std::vector<std::string>> byClass(const Trace& t, const std::vector<PointClass>& cs) {
  std::map<std::string, std::vector<std::string>> out;
  for (size_t i = 0; i < cs.size(); ++i) out[cs[i].key].push_back(t.points[i].fault.str());
  return out;
}

} // namespace

TEST_CASE("point classes: when, verb, previous verb and the role of the entry, with the schedule's last apart") {
  auto ops = walletLike(3).h.ops();
  Trace t = traceOf(ops);
  auto cs = classifyPoints(ops, t.points);
  REQUIRE(cs.size() == t.points.size());
  auto classes = byClass(t, cs);
  CHECK(classes["before:PARSE prev=- role=start"] == std::vector<std::string>{"before:PARSE#1"});
  // The read that handed over the entries belongs to the first entry's work.
  CHECK(classes["after:XREADGROUP prev=PARSE role=first"] == std::vector<std::string>{"after:XREADGROUP#2"});
  CHECK(classes["before:BEGIN prev=XREADGROUP role=first"] == std::vector<std::string>{"before:BEGIN#1"});
  CHECK(classes["before:BEGIN prev=XACK role=first"] == std::vector<std::string>{"before:BEGIN#2", "before:BEGIN#3"});
  CHECK(classes["after:COMMIT prev=UPDATE role=first"] ==
        std::vector<std::string>{"after:COMMIT#1", "after:COMMIT#2", "after:COMMIT#3"});
  // The retry of event 2, sent last: its own class, marked last; it skips the UPDATE.
  CHECK(classes["after:COMMIT prev=INSERT role=retry,last"] == std::vector<std::string>{"after:COMMIT#4"});
  CHECK(classes["before:XACK prev=COMMIT role=retry,last"] == std::vector<std::string>{"before:XACK#4"});
  CHECK(classCount(cs) == classes.size());
  for (size_t i = 0; i < cs.size(); ++i) {
    INFO(t.points[i].fault.str());
    const std::string p = t.points[i].fault.str();
    // Near the retry: event 2's first delivery (the original) and event 3's (just before the retry).
    const bool near = p.find("#2") != std::string::npos || p.find("#3") != std::string::npos;
    if (cs[i].role == "first" && p.find("XREADGROUP") == std::string::npos) CHECK(cs[i].nearRetry == near);
  }
}

TEST_CASE("point classes: a claimed entry and one read twice are redeliveries, steps after the last ack are the end") {
  PcBuilder b;
  b.send("1-0", 1);
  b.send("2-0", 2);
  b.step("valkey", "XREADGROUP", {"1-0"});
  b.work("1-0");
  b.step("valkey", "XAUTOCLAIM", {"2-0"}); // 2-0 was never read before, but a claim hands it over again
  b.work("2-0");
  b.step("valkey", "XREADGROUP", {"1-0"}); // read again after its acknowledgement: a new delivery
  b.step("pg", "BEGIN");
  auto ops = b.h.ops();
  Trace t = traceOf(ops);
  auto cs = classifyPoints(ops, t.points);
  std::map<std::string, std::string> role;
  for (size_t i = 0; i < cs.size(); ++i) role[t.points[i].fault.str()] = cs[i].role + (cs[i].last ? ",last" : "");
  CHECK(role["after:XREADGROUP#1"] == "first");
  CHECK(role["after:COMMIT#1"] == "first");
  CHECK(role["before:XAUTOCLAIM#1"] == "redelivery,last");
  CHECK(role["after:XACK#2"] == "redelivery,last");
  CHECK(role["after:XREADGROUP#2"] == "end");
  CHECK(role["before:BEGIN#3"] == "end");
}

TEST_CASE("reduced selection: per class the first, middle and last points and those near the producer retry") {
  auto ops = walletLike(50).h.ops();
  Trace t = traceOf(ops);
  auto cs = classifyPoints(ops, t.points);
  auto picked = reducedSelection(cs);
  REQUIRE(t.points.size() > 500);
  CHECK(std::is_sorted(picked.begin(), picked.end()));
  std::map<std::string, std::vector<std::string>> chosen;
  for (size_t i : picked) chosen[cs[i].key].push_back(t.points[i].fault.str());
  // Every class is represented.
  CHECK(chosen.size() == classCount(cs));
  // after:COMMIT of first deliveries, events 1..50: the first, event 2 (the retried one), event 26 (the
  // middle of 50) and event 50 (the last, just before the retry).
  CHECK(chosen["after:COMMIT prev=UPDATE role=first"] ==
        std::vector<std::string>{"after:COMMIT#1", "after:COMMIT#2", "after:COMMIT#26", "after:COMMIT#50"});
  // BEGIN after an XACK: events 2..50.
  CHECK(chosen["before:BEGIN prev=XACK role=first"] ==
        std::vector<std::string>{"before:BEGIN#2", "before:BEGIN#26", "before:BEGIN#50"});
  CHECK(picked.size() < t.points.size() / 5);
  // A pure function: the same trace gives the same selection (every shard of a sweep agrees).
  CHECK(reducedSelection(classifyPoints(ops, traceOf(ops).points)) == picked);
}
