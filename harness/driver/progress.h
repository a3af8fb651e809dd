#pragma once
/// The progress line of long commands (sweep, compare, demo, check): on a terminal, one line on stderr
/// rewritten in place — "  compare wallet: 34/120 schedules · 3 violations · ~12 s left" — and erased
/// when the work ends. Off a terminal (CI, pipes) the same text as a line of its own once a minute, from a
/// minute in (a CI job that prints nothing for ten minutes is often killed as hung); a shorter command
/// prints none. Thread-safe: workers may report from any thread.
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace idem {

class Progress {
public:
  /// `enabled` defaults to: stderr is a terminal (else a line a minute). `total` 0: not known, the line
  /// shows the count alone.
  explicit Progress(std::string label, size_t total = 0, bool enabled = Progress::terminal());
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// More schedules to run (their number is often known only once a baseline ran).
  void addTotal(size_t n);
  /// One more schedule done; `violation` when it failed.
  void done(bool violation = false);
  /// The number of schedules done so far, for callbacks that report a count.
  void doneCount(size_t done);
  /// What is being run, shown first on the line.
  void setLabel(std::string label);
  /// Erases the line (also done by the destructor).
  void clear();

  size_t completed() const;
  size_t violations() const;

  /// stderr is a terminal.
  static bool terminal();
  /// "~12 s left", "~2 min left", "" when not yet known.
  static std::string timeLeft(double elapsedSeconds, size_t done, size_t total);

private:
  void draw(bool force); // with mu_ held
  std::string line() const; // with mu_ held
  mutable std::mutex mu_;
  std::string label_;
  size_t total_ = 0, done_ = 0, violations_ = 0, width_ = 0;
  bool enabled_;
  std::chrono::steady_clock::time_point start_, lastDraw_, lastPlain_;
};

} // namespace idem
