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
std::unique_ptr<FaultKind> makeRebalance();
std::unique_ptr<FaultKind> makeAge();
std::unique_ptr<FaultKind> makePause();

/// A kind that takes no arguments and acts at either moment with one action (kill, drop, forget,
/// rebalance); each says where a sweep applies it and its phrase in a story.
class PlainKind : public FaultKind {
public:
  PlainKind(std::string name, std::string usage, Effect::Action action, int weight = 1, bool httpServer = false)
      : name_(std::move(name)), usage_(std::move(usage)), action_(action), weight_(weight), httpServer_(httpServer) {}
  std::string name() const override { return name_; }
  std::string usage() const override { return usage_; }
  void check(const Fault& f, const std::string& what) const override;
  Effect effect(const Fault&) const override { return Effect{action_, {}, {}, {}, {}, false}; }
  int weight() const override { return weight_; }
  bool atHttpServer() const override { return httpServer_; }
  /// At every swept point, before and after, of every server.
  std::optional<Fault> sweptAt(const Fault& point, const std::string& server, int delayMs) const override;

private:
  std::string name_, usage_;
  Effect::Action action_;
  int weight_;
  bool httpServer_;
};

/// Throws UsageError naming `what` unless `f` has exactly `n` arguments; `form` is the kind's text form.
void requireArgs(const Fault& f, size_t n, const std::string& what, const char* form);
/// Throws UsageError naming `what` unless `f.when` is `when`.
void requireWhen(const Fault& f, When when, const std::string& what, const char* why);

/// How a fault that withholds its step ends (hold, pause): its arguments are none, MS, or another
/// process's point cM:before|after:VERB#j. `noun` ("hold"), `ends` ("releases at"), `stops` ("holds") and
/// `maxMs` (0: none) word its errors; `form` is the kind's text form.
struct Release {
  const char* noun;
  const char* ends;
  const char* stops;
  int maxMs;
  const char* form;
  /// Throws UsageError naming `what` when the arguments are none of the three.
  void check(const Fault& f, const std::string& what) const;
  /// `e` with its time or releasing point from the arguments.
  Effect effect(const Fault& f, Effect e) const;
};

} // namespace idem::faults
