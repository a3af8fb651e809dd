#pragma once
/// Internal to the timeline (html_timeline*.cc): its geometry, the run as the rows need it, and the rows
/// themselves (which ops are shown, highlighted, elided; what the text column says).
#include "checkers/holds.h"
#include "history/history.h"
#include "report/html_util.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace idem::html::tl {

constexpr int kTimeW = 70, kLaneW = 68, kRowH = 19, kHeadH = 34, kMaxRows = 240;
constexpr int kWidth = 1150;   ///< fits the page's column without scrolling for up to ~7 lanes
constexpr double kCharW = 6.95; ///< advance of one character of the monospace text

/// One row of the timeline.
struct Row {
  const Op* op = nullptr; ///< null: a row standing for `elided` ops not shown
  int elided = 0;
  bool hot = false, kill = false;
  bool hold = false; ///< a hold fired or was released here
};

/// What the rows need to know about the run as a whole.
struct Context {
  std::vector<std::string> lanes;          ///< producer, c1, c2, ..., valkey, pg, dead-letter, sink (HTTP: client, s1, s2, ..., pg)
  /// The broker lane's ("valkey") title: the broker the run's steps went to (Valkey, Kafka, NATS, RabbitMQ).
  std::string brokerTitle = "Valkey";
  std::map<int, std::string> requestServer; ///< HTTP: request id -> the server process it went to
  std::map<std::string, std::string> tags; ///< stream entry -> "e3" / "e2 (retry)"
  std::set<int64_t> hotOps;
  std::set<std::string> hotEntries;
  std::set<int64_t> hotEvents;
  std::set<std::string> hotIds; ///< event ids of the hot events (a step naming one, e.g. SET seen:<id>, is hot)
  /// Poison events: the dead-letter destination's name (a table or a stream, from the final op), its lane
  /// ("dead-letter"), and the steps that wrote to it (drawn to that lane instead of their server's).
  std::string deadLetter;
  std::set<int64_t> deadLetterOps;
  /// The sink (docs/sink.md): its lane ("sink") when the run made calls; each call record's op -> the op of
  /// the CALL step that carried it (checkers/sink_view.h linkCalls), drawn as a link on the sink's lane.
  std::map<int64_t, int64_t> callSteps;
  std::map<int64_t, std::string> callVia; ///< call record's op -> "c1 CALL#2"
  std::map<std::string, int> eventOfId; ///< event id -> its number (a call's ref as "e2")
  std::vector<HoldSpan> holds;  ///< the holds that fired (checkers/holds.h)
  std::map<int64_t, size_t> holdFired, holdReleased; ///< op index -> its hold in `holds`
  const HoldSpan* firedAt(int64_t op) const {
    auto it = holdFired.find(op);
    return it == holdFired.end() ? nullptr : &holds[it->second];
  }
  const HoldSpan* releasedAt(int64_t op) const {
    auto it = holdReleased.find(op);
    return it == holdReleased.end() ? nullptr : &holds[it->second];
  }
  int x(const std::string& lane) const {
    for (size_t i = 0; i < lanes.size(); ++i)
      if (lanes[i] == lane) return kTimeW + static_cast<int>(i) * kLaneW + kLaneW / 2;
    return -1;
  }
  int textX() const { return kTimeW + static_cast<int>(lanes.size()) * kLaneW + 10; }
  int textW() const { return std::max(560, kWidth - textX()); }
  size_t textChars() const { return static_cast<size_t>(textW() / kCharW); }
};

/// Lanes, entry tags and the hot ops, entries and events of a run (its violations, from the run's JSON).
Context contextOf(const json& run, const std::vector<Op>& history);
/// The rows of a history: every op but the plan; beyond kMaxRows, only those near the hot ones.
std::vector<Row> rowsOf(const Context& c, const std::vector<Op>& history);
/// What the text column says of an op (not escaped).
std::string describe(const Context& c, const Op& op);

} // namespace idem::html::tl
