/// The append-only log of one run (History): ops appended under a lock, each with its index and time; and
/// the few rules of a record that are no part of its JSON mapping (history_json.cc).
#include "history/history.h"

#include <fmt/format.h>

#include <algorithm>

namespace idem {

using nlohmann::json;

namespace ops {

bool Step::delivers(const std::string& entry) const {
  return std::any_of(delivered.begin(), delivered.end(), [&](const Delivered& d) { return d.entry == entry; });
}

bool Step::reachedServer() const {
  return outcome == StepOutcome::Ok || outcome == StepOutcome::KilledAfter || outcome == StepOutcome::Forwarded ||
         outcome == StepOutcome::DroppedAfter;
}

Note Note::afterRestart(const std::string& server, const std::string& fault, const std::string& outcome) {
  return Note{fmt::format("after the {} restart ({}): {}", server, fault, outcome)};
}

std::string Note::noNewConnection(const std::string& label) { return label + " made no new connection"; }

bool Note::saysNoNewConnection(const std::string& label) const {
  const std::string tail = ": " + noNewConnection(label);
  return message.rfind("after the ", 0) == 0 && message.size() >= tail.size() &&
         message.compare(message.size() - tail.size(), tail.size(), tail) == 0;
}

Note Note::openAtRestart(const std::string& label, int connections, const std::string& server,
                         const std::string& fault) {
  return Note{fmt::format("{} had opened {} connection{} by the {} restart ({})", label, connections,
                          connections == 1 ? "" : "s", server, fault)};
}

bool Note::saysOpenAtRestart(const std::string& label, const std::string& fault) const {
  const std::string head = label + " had opened ", tail = " restart (" + fault + ")";
  return message.rfind(head, 0) == 0 && message.rfind(head + "0 ", 0) != 0 && message.size() >= tail.size() &&
         message.compare(message.size() - tail.size(), tail.size(), tail) == 0;
}

std::string Exit::text() const { return signal ? fmt::format("signal {}", *signal) : fmt::format("exit {}", status.value_or(-1)); }

} // namespace ops

History::History() : start_(std::chrono::steady_clock::now()) {}

History::History(const History& o) {
  std::lock_guard<std::mutex> lock(o.mu_);
  ops_ = o.ops_;
  start_ = o.start_;
}

History& History::operator=(const History& o) {
  if (this == &o) return *this;
  std::scoped_lock lock(mu_, o.mu_);
  ops_ = o.ops_;
  start_ = o.start_;
  return *this;
}

int64_t History::nowUs() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start_).count();
}

int64_t History::append(std::string process, Record record) {
  std::lock_guard<std::mutex> lock(mu_);
  Op op;
  op.index = static_cast<int64_t>(ops_.size());
  op.time_us = nowUs();
  op.process = std::move(process);
  op.record = std::move(record);
  ops_.push_back(std::move(op));
  return ops_.back().index;
}

std::vector<Op> History::ops() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ops_;
}

size_t History::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ops_.size();
}

std::vector<Op> History::opsFrom(size_t from) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (from >= ops_.size()) return {};
  return {ops_.begin() + static_cast<std::ptrdiff_t>(from), ops_.end()};
}

json History::toJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  return json(ops_);
}

History History::fromJson(const json& j) {
  History h;
  h.ops_ = j.get<std::vector<Op>>();
  return h;
}

} // namespace idem
