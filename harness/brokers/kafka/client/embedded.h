#pragma once
/// The embedded Kafka broker as the harness runs it: `idemproof-kafka-server` in a process group of its
/// own, its bootstrap list, its line commands (`topic NAME PARTITIONS`, `down`/`up`, `errors`, `rtt`), and
/// its stop on destruction or on any exit of idemproof (core/cleanup.h).
#include "core/child.h"
#include "core/temp_dir.h"

#include <chrono>
#include <filesystem>
#include <mutex>
#include <string>

namespace idem::kafka::client {

class EmbeddedKafka {
public:
  struct Options {
    /// The program; empty: findProgram().
    std::filesystem::path program;
    int brokers = 1;
    /// From spawn to the ready file, and for each command's answer.
    std::chrono::milliseconds timeout{10000};
  };

  /// Starts the broker and waits for its ready file. Throws UsageError naming the program and its log when
  /// it cannot be found, exits, or is not ready within the timeout.
  explicit EmbeddedKafka(Options options);
  EmbeddedKafka() : EmbeddedKafka(Options{}) {}
  /// stop().
  ~EmbeddedKafka();
  EmbeddedKafka(const EmbeddedKafka&) = delete;
  EmbeddedKafka& operator=(const EmbeddedKafka&) = delete;

  /// "127.0.0.1:PORT" (comma-separated, one per broker).
  const std::string& bootstrap() const { return bootstrap_; }
  /// Sends one command line and returns its one-line answer ("ok"). Throws std::runtime_error with the
  /// broker's own words on an `error: …` answer, or when it does not answer within the timeout.
  std::string command(const std::string& line);
  /// SIGTERM, wait up to 2 s, then SIGKILL; reaped. Idempotent; safe from the signal thread.
  void stop();
  /// Whether its process still runs (false once it exited, whatever ended it).
  bool alive();

  pid_t pid() const { return pid_; }
  const std::filesystem::path& log() const { return log_; }

  /// `idemproof-kafka-server` beside the running executable (/proc/self/exe's folder), then in its ../bin
  /// (an installed tree), then in its .. (a test executable in build/tests), then on PATH. Throws UsageError naming the places when it is in none.
  static std::filesystem::path findProgram();

private:
  std::string readLine(std::chrono::steady_clock::time_point deadline);

  Options options_;
  TempDir dir_;
  std::filesystem::path log_;
  std::filesystem::path program_;
  std::mutex mu_;     ///< one command at a time
  std::mutex stopMu_; ///< stop() from the destructor against the signal thread
  Child child_;
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1; ///< our ends of the broker's stdin and stdout
  std::string buffered_;   ///< what was read of stdout past the last line
  std::string bootstrap_;
  int cleanupId_ = -1;
};

} // namespace idem::kafka::client
