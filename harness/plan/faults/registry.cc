/// The registry of fault kinds: the built-ins, registered here in this order (one line each), and any a
/// caller adds with registerFaultKind.
#include "plan/faults/kinds.h"

#include "core/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <optional>

namespace idem {

namespace {

struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<FaultKind>> kinds;

  Registry() {
    kinds.push_back(faults::makeKill());
    kinds.push_back(faults::makeDrop());
    kinds.push_back(faults::makeDelay());
    kinds.push_back(faults::makeError());
    kinds.push_back(faults::makeForget());
    kinds.push_back(faults::makeRestart());
    kinds.push_back(faults::makeHold());
    kinds.push_back(faults::makeTimeKill());
    kinds.push_back(faults::makeRebalance());
    kinds.push_back(faults::makeAge());
    kinds.push_back(faults::makePause());
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

} // namespace

namespace faults {

void PlainKind::check(const Fault& f, const std::string& what) const {
  requireArgs(f, 0, what, (name_ + ":before|after:VERB#k").c_str());
}

std::optional<Fault> PlainKind::sweptAt(const Fault& point, const std::string&, int) const {
  Fault f = point;
  f.kind = name_;
  return f;
}

void requireArgs(const Fault& f, size_t n, const std::string& what, const char* form) {
  if (f.args.size() == n) return;
  throw UsageError(n == 0 ? fmt::format("{}: a {} fault takes no arguments ({})", what, f.kind, form)
                          : fmt::format("{}: a {} fault takes {} argument{} ({})", what, f.kind, n, n == 1 ? "" : "s", form));
}

void Release::check(const Fault& f, const std::string& what) const {
  if (f.args.empty()) return;
  if (f.args.size() == 1) {
    const std::string& ms = f.args[0];
    const bool number = !ms.empty() && ms.size() <= 6 &&
                        std::all_of(ms.begin(), ms.end(), [](unsigned char c) { return std::isdigit(c); });
    if (!number || std::stoi(ms) < 1 || (maxMs > 0 && std::stoi(ms) > maxMs))
      throw UsageError(fmt::format("{}: a {}'s time must be a whole number of milliseconds from 1{} ({})", what, noun,
                                   maxMs > 0 ? fmt::format(" to {}", maxMs) : "", form));
    return;
  }
  // The releasing point has the fault text form of a process's step: cM:before|after:VERB#j.
  std::optional<Fault> until;
  if (f.args.size() == 3) {
    try {
      until = Fault::parse(f.args[0] + ":" + f.args[1] + ":" + f.args[2], what);
    } catch (const UsageError&) {
    }
  }
  if (!until || until->process.empty() || !until->isKill())
    throw UsageError(fmt::format("{}: a {} {} another process's point, e.g. c2:after:XACK#1 ({})", what, noun, ends, form));
  if (until->process == f.process)
    throw UsageError(fmt::format("{}: a {} can't wait for the process it {} ({})", what, noun, stops, f.process));
}

Effect Release::effect(const Fault& f, Effect e) const {
  if (f.args.size() == 1) e.time = std::chrono::milliseconds(std::stoi(f.args[0]));
  if (f.args.size() == 3) e.until = f.args[0] + ":" + f.args[1] + ":" + f.args[2];
  return e;
}

void requireWhen(const Fault& f, When when, const std::string& what, const char* why) {
  if (f.when == when) return;
  throw UsageError(fmt::format("{}: a {} fault acts {} its step only: {}", what, f.kind,
                               when == When::Before ? "before" : "after", why));
}

} // namespace faults

const FaultKind& faultKind(const std::string& name, const std::string& what) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const auto& k : r.kinds)
    if (k->name() == name) return *k;
  std::vector<std::string> names;
  for (const auto& k : r.kinds) names.push_back(k->name());
  throw UsageError(fmt::format("{}: no fault kind '{}' (kinds: {})", what, name, fmt::join(names, ", ")));
}

int applicationWeight(const Fault& f) { return faultKind(f.kind, "fault").weight(); }

int applicationWeight(const std::vector<Fault>& faults) {
  int n = 0;
  for (const auto& f : faults) n += applicationWeight(f);
  return n;
}

namespace {

/// The names of the registered kinds `keep` says yes to, in registration order.
template <class Keep>
std::vector<std::string> kindNames(Keep keep) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& k : r.kinds)
    if (keep(*k)) names.push_back(k->name());
  return names;
}

} // namespace

std::vector<std::string> faultKinds() {
  return kindNames([](const FaultKind&) { return true; });
}

std::vector<std::string> httpFaultKinds() {
  return kindNames([](const FaultKind& k) { return k.atHttpServer(); });
}

void requireHttpFaultKind(const std::string& kind, const std::string& what, int replicas) {
  if (faultKind(kind, what).atHttpServer() || (kind == "hold" && replicas >= 2)) return;
  if (kind == "hold")
    throw UsageError(fmt::format("{}: a hold needs a second server process to hold against: run two replicas or "
                                 "more (--replicas 2, or \"replicas\": 2 in the schedule)", what));
  throw UsageError(fmt::format("{}: an HTTP scenario runs {} faults at its server's steps, not {} (no stream, no "
                               "consumer){}", what, fmt::join(httpFaultKinds(), ", "), kind,
                               replicas >= 2 ? "; and hold, between its replicas" : ""));
}

void requireHttpFault(const Fault& f, const std::string& what, int replicas) {
  requireHttpFaultKind(f.kind, what, replicas);
  std::vector<std::string> named;
  if (!f.process.empty()) named.push_back(f.process);
  if (!faultKind(f.kind, "fault").effect(f).until.empty()) named.push_back(f.args[0]);
  for (const auto& p : named)
    if (!isServerLabel(p))
      throw UsageError(fmt::format("{}: {}: an HTTP run's processes are its server's, s1..s{} (its replicas) and the "
                                   "ones that replace them, not {}", what, f.str(), replicas, p));
  if (f.kind == "pause" && f.args.size() == 3 && replicas < 2)
    throw UsageError(fmt::format("{}: {}: an HTTP run with one replica has one server process, so a pause ends at a time "
                                 "(pause:before|after:VERB#k[:MS]), not at another process's point",
                                 what, f.str()));
}

std::vector<std::string> stepFaultKinds() {
  return kindNames([](const FaultKind& k) { return k.atStep(); });
}

void registerFaultKind(std::unique_ptr<FaultKind> kind) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (auto& k : r.kinds) {
    if (k->name() == kind->name()) {
      k = std::move(kind);
      return;
    }
  }
  r.kinds.push_back(std::move(kind));
}

} // namespace idem
