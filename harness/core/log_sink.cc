// LogSink: a child's output, bounded.
#include "core/log_sink.h"

#include "core/error.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>

namespace idem {

LogSink::LogSink(const std::filesystem::path& file, size_t head, size_t tail) : head_(head), tail_(tail) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw sysError("log pipe");
  readFd_ = fds[0];
  writeFd_ = fds[1];
  fileFd_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fileFd_ < 0) {
    auto err = sysError(fmt::format("log file {}", file.string()));
    ::close(readFd_);
    ::close(writeFd_);
    throw err;
  }
  thread_ = std::thread([this] { run(); });
}

LogSink::~LogSink() {
  finish(std::chrono::milliseconds(0));
  closeWriteFd();
  if (readFd_ >= 0) ::close(readFd_);
  if (fileFd_ >= 0) ::close(fileFd_);
}

void LogSink::closeWriteFd() {
  if (writeFd_ >= 0) ::close(writeFd_);
  writeFd_ = -1;
}

void LogSink::take(const char* data, size_t n) {
  total_ += n;
  if (written_ < head_) { // the head goes to the file at once
    size_t k = std::min<size_t>(n, head_ - written_);
    for (size_t off = 0; off < k;) {
      ssize_t w = ::write(fileFd_, data + off, k - off);
      if (w <= 0) break; // a full disk loses log bytes, never blocks the child
      off += static_cast<size_t>(w);
    }
    written_ += k;
    data += k;
    n -= k;
  }
  ring_.append(data, n);
  if (ring_.size() > 2 * tail_) ring_.erase(0, ring_.size() - tail_);
}

void LogSink::run() {
  char buf[65536];
  while (true) {
    pollfd p{readFd_, POLLIN, 0};
    int ready = ::poll(&p, 1, stop_ ? 0 : 50);
    if (ready < 0 && errno == EINTR) continue;
    if (ready > 0) {
      ssize_t n = ::read(readFd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        {
          std::lock_guard<std::mutex> lock(eofMu_);
          eof_ = true;
        }
        eofCv_.notify_all();
        return;
      }
      take(buf, static_cast<size_t>(n));
      continue;
    }
    if (stop_) return; // nothing left in the pipe, and asked to stop
  }
}

void LogSink::finish(std::chrono::milliseconds wait) {
  if (finished_) return;
  finished_ = true;
  closeWriteFd();
  {
    std::unique_lock<std::mutex> lock(eofMu_);
    eofCv_.wait_for(lock, wait, [&] { return eof_.load(); });
  }
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  uint64_t cut = total_ - written_ - std::min<uint64_t>(ring_.size(), tail_);
  std::string tail = ring_.size() > tail_ ? ring_.substr(ring_.size() - tail_) : ring_;
  std::string out = cut > 0 ? fmt::format("\n[... {} bytes cut ...]\n", cut) + tail : tail;
  for (size_t off = 0; off < out.size();) {
    ssize_t w = ::write(fileFd_, out.data() + off, out.size() - off);
    if (w <= 0) break;
    off += static_cast<size_t>(w);
  }
}

} // namespace idem
