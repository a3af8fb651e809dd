#pragma once
/// The built-in fault kinds, one file each, registered in registry.cc.
#include "plan/fault_kind.h"

#include <memory>

namespace idem::faults {

std::unique_ptr<FaultKind> makeKill();
std::unique_ptr<FaultKind> makeDrop();
std::unique_ptr<FaultKind> makeDelay();
std::unique_ptr<FaultKind> makeError();
std::unique_ptr<FaultKind> makeForget();
std::unique_ptr<FaultKind> makeRestart();
std::unique_ptr<FaultKind> makeHold();
std::unique_ptr<FaultKind> makeTimeKill();

/// A kind that takes no arguments and acts at either moment with one action (kill, drop, forget).
/// `httpServer`: FaultKind::atHttpServer.
std::unique_ptr<FaultKind> makePlainKind(std::string name, std::string usage, Effect::Action action,
                                         int weight = 1, bool httpServer = false);

/// Throws UsageError naming `what` unless `f` has exactly `n` arguments; `form` is the kind's text form.
void requireArgs(const Fault& f, size_t n, const std::string& what, const char* form);
/// Throws UsageError naming `what` unless `f.when` is `when`.
void requireWhen(const Fault& f, When when, const std::string& what, const char* why);

} // namespace idem::faults
