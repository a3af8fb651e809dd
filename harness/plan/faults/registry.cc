/// The registry of fault kinds: the built-ins, registered here in this order (one line each), and any a
/// caller adds with registerFaultKind.
#include "plan/faults/kinds.h"

#include "core/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <mutex>

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

void requireHttpFaultKind(const std::string& kind, const std::string& what) {
  if (faultKind(kind, what).atHttpServer()) return;
  throw UsageError(fmt::format("{}: an HTTP scenario runs {} faults at its server's steps, not {} (one server process, "
                               "no stream, no servers of the run's own)", what, fmt::join(httpFaultKinds(), ", "), kind));
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
