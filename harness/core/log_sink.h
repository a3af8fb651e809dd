#pragma once
/// Bounded capture of a child's output. The child writes into a pipe; a thread of idemproof copies the
/// first `head` bytes to the log file as they come, then keeps only the last `tail` bytes in memory, and
/// when the pipe closes writes "[... N bytes cut ...]" and that tail after the head. Memory and disk stay
/// bounded (head + tail) whatever the child writes, and the child never blocks on a full disk.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>

namespace idem {

class LogSink {
public:
  /// Creates the pipe and the file (appended to), starts the thread. Throws std::system_error.
  LogSink(const std::filesystem::path& file, size_t head, size_t tail);
  /// finish(0).
  ~LogSink();
  LogSink(const LogSink&) = delete;
  LogSink& operator=(const LogSink&) = delete;

  /// The pipe's write end, for the child's stdout and stderr.
  int writeFd() const { return writeFd_; }
  /// Closes idemproof's copy of the write end (once the child holds its own).
  void closeWriteFd();
  /// Waits up to `wait` for every writer to close the pipe (a process the child started may hold it),
  /// takes what is in the pipe already, writes the tail to the file and stops the thread. Idempotent.
  void finish(std::chrono::milliseconds wait);
  /// Bytes the child wrote so far, and bytes left out of the file.
  uint64_t total() const { return total_; }

private:
  void run();
  void take(const char* data, size_t n);

  int readFd_ = -1, writeFd_ = -1, fileFd_ = -1;
  size_t head_, tail_;
  std::string ring_;            ///< the last bytes after the head (at most 2 x tail_ between trims)
  uint64_t written_ = 0;        ///< bytes in the file's head
  std::atomic<uint64_t> total_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> eof_{false};
  std::mutex eofMu_;               ///< with eofCv_: finish() waits for the end of the output, not in ticks
  std::condition_variable eofCv_;
  std::thread thread_;
  bool finished_ = false;
};

} // namespace idem
