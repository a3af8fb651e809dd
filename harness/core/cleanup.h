#pragma once
/// What must be undone on any exit of idemproof (cleanup.cc).
#include <functional>
#include <string>

namespace idem {

/// What must be undone on any exit: process groups to kill (or servers to stop gracefully) and temp dirs
/// to remove. Thread-safe. installSignalHandlers() makes SIGINT/SIGTERM/SIGHUP run everything, then exit
/// with 128+signal.
class Cleanup {
public:
  static Cleanup& instance();
  /// Registers an action; returns an id to unregister it when the resource was released normally.
  int add(std::string what, std::function<void()> action);
  void remove(int id);
  /// Runs every registered action, newest first, once.
  void runAll();
  /// Blocks SIGINT/SIGTERM/SIGHUP in every thread and handles them on a dedicated thread, and has
  /// std::terminate run everything before it aborts. Call first thing in main, before any thread starts.
  static void installSignalHandlers();
  /// The signal being handled (SIGINT, ...) once one arrived, else 0. The signal thread exits the
  /// process with 128+signal after cleaning up; other threads should then just wait for it.
  static int interrupted();
  /// The abbreviation of interrupted()'s signal ("SIGINT"), "" when none arrived.
  static std::string interruptedName();

  /// While one is held, the signal thread, once it has cleaned up, waits before it exits (until every hold
  /// is released, a second signal arrives, or kMaxExitHold passed): a command that was interrupted may
  /// still write its report of what finished before the signal. Holds nest; any thread may hold one.
  class ExitHold {
  public:
    ExitHold();
    ~ExitHold();
    ExitHold(const ExitHold&) = delete;
    ExitHold& operator=(const ExitHold&) = delete;
  };
};

/// How long an interrupted idemproof waits for its report before it exits all the same.
inline constexpr int kMaxExitHoldSeconds = 60;

} // namespace idem
