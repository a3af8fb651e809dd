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
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

} // namespace

const FaultKind& faultKind(const std::string& name, const std::string& what) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const auto& k : r.kinds)
    if (k->name() == name) return *k;
  std::vector<std::string> names;
  for (const auto& k : r.kinds) names.push_back(k->name());
  throw UsageError(fmt::format("{}: no fault kind '{}' (kinds: {})", what, name, fmt::join(names, ", ")));
}

std::vector<std::string> faultKinds() {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& k : r.kinds) names.push_back(k->name());
  return names;
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
