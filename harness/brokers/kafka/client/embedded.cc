// EmbeddedKafka: idemproof-kafka-server spawned with core/child.h, its stdin and stdout piped for its line
// commands, stopped gracefully by its destructor or by Cleanup.
#include "brokers/kafka/client/embedded.h"

#include "core/cleanup.h"
#include "core/error.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace idem::kafka::client {
namespace {

constexpr const char* kProgram = "idemproof-kafka-server";

/// The last lines of the broker's log, for a message.
std::string logTail(const std::filesystem::path& log) {
  std::ifstream in(log);
  std::string line, tail;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  for (size_t i = lines.size() > 5 ? lines.size() - 5 : 0; i < lines.size(); ++i) tail += (tail.empty() ? "" : " | ") + lines[i];
  return tail.empty() ? "(empty log)" : tail;
}

/// A pipe whose both ends are close-on-exec (the child gets its end through ChildSpec, dup2'd).
std::pair<int, int> makePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw sysError("pipe2");
  return {fds[0], fds[1]};
}

/// The broker's stdin: a socket pair rather than a pipe, so that a command to a broker that died fails
/// with EPIPE (send's MSG_NOSIGNAL) instead of raising SIGPIPE in whatever process links this.
std::pair<int, int> makeStdin() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) throw sysError("socketpair");
  return {fds[0], fds[1]};
}

} // namespace

std::filesystem::path EmbeddedKafka::findProgram() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::vector<std::filesystem::path> places;
  if (!ec) {
    places.push_back(self.parent_path() / kProgram);
    places.push_back((self.parent_path() / ".." / "bin" / kProgram).lexically_normal());
    // A test executable of the build tree (build/tests/) finds the one built beside idemproof (build/).
    places.push_back((self.parent_path() / ".." / kProgram).lexically_normal());
  }
  for (const auto& p : places)
    if (::access(p.c_str(), X_OK) == 0) return p;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      const auto p = std::filesystem::path(dir.empty() ? "." : dir) / kProgram;
      if (::access(p.c_str(), X_OK) == 0) return p;
    }
  }
  throw UsageError(fmt::format("{} not found beside {}, in its ../bin or .., or on PATH", kProgram,
                               ec ? std::string("idemproof") : self.string()));
}

EmbeddedKafka::EmbeddedKafka(Options options)
    : options_(std::move(options)), dir_("idemproof-kafka-"), log_(dir_.path() / "kafka.log") {
  program_ = options_.program.empty() ? findProgram() : options_.program;
  const auto ready = dir_.path() / "ready";
  auto [inRead, inWrite] = makeStdin();
  auto [outRead, outWrite] = makePipe();
  in_ = inWrite;
  out_ = outRead;
  ChildSpec spec;
  spec.argv = {program_.string(), "--brokers", std::to_string(options_.brokers), "--ready-file", ready.string()};
  spec.cwd = dir_.path();
  if (const char* path = std::getenv("PATH")) spec.env["PATH"] = path;
  spec.log = log_;
  spec.what = "embedded Kafka broker";
  spec.stdinFd = inRead;
  spec.stdoutFd = outWrite;
  try {
    child_ = Child::spawn(spec);
  } catch (const SpawnError& e) {
    ::close(inRead);
    ::close(outWrite);
    ::close(in_);
    ::close(out_);
    throw UsageError(e.what());
  }
  ::close(inRead);
  ::close(outWrite);
  pid_ = child_.pid();

  auto fail = [&](const std::string& why) {
    child_.stop(std::chrono::milliseconds(0));
    ::close(in_);
    ::close(out_);
    in_ = out_ = -1;
    return UsageError(fmt::format("{} ({}) {} (log: {}): {}", spec.what, program_.string(), why, log_.string(),
                                  logTail(log_)));
  };
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  std::error_code ec;
  while (!std::filesystem::exists(ready, ec)) {
    if (auto status = child_.poll()) throw fail(fmt::format("exited at start ({})", status->str()));
    if (std::chrono::steady_clock::now() > deadline)
      throw fail(fmt::format("wrote no ready file within {} ms", options_.timeout.count()));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  {
    std::ifstream f(ready);
    std::getline(f, bootstrap_);
  }
  // The same list comes first on stdout, right after the file: read it, so that the answers come next.
  try {
    const std::string line = readLine(deadline);
    if (bootstrap_.empty()) bootstrap_ = line;
  } catch (const std::runtime_error& e) {
    throw fail(e.what());
  }
  if (bootstrap_.empty()) throw fail("wrote an empty bootstrap list");
  // Newer than the kill-the-group action Child::spawn registered, so it runs first: a graceful stop.
  cleanupId_ = Cleanup::instance().add(fmt::format("stop embedded Kafka broker (pid {})", pid_), [this] { stop(); });
}

EmbeddedKafka::~EmbeddedKafka() {
  if (cleanupId_ >= 0) Cleanup::instance().remove(cleanupId_); // waits if the signal thread is running it
  stop();
  if (in_ >= 0) ::close(in_);
  if (out_ >= 0) ::close(out_);
}

bool EmbeddedKafka::alive() {
  std::lock_guard<std::mutex> lock(stopMu_);
  return child_.valid() && !child_.poll();
}

void EmbeddedKafka::stop() {
  std::lock_guard<std::mutex> lock(stopMu_);
  if (child_.valid()) child_.stop(std::chrono::milliseconds(2000));
}

std::string EmbeddedKafka::readLine(std::chrono::steady_clock::time_point deadline) {
  while (true) {
    const auto nl = buffered_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) throw std::runtime_error(fmt::format("{}: no answer within {} ms", kProgram, options_.timeout.count()));
    pollfd p{out_, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()) + 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buf[4096];
    const ssize_t got = ::read(out_, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw std::runtime_error(fmt::format("{}: its output ended (it exited; log: {})", kProgram, log_.string()));
    buffered_.append(buf, static_cast<size_t>(got));
  }
}

std::string EmbeddedKafka::command(const std::string& line) {
  if (line.find('\n') != std::string::npos) throw std::invalid_argument("a Kafka broker command is one line: " + line);
  std::lock_guard<std::mutex> lock(mu_);
  if (in_ < 0) throw std::runtime_error(fmt::format("{}: not running", kProgram));
  const std::string msg = line + "\n";
  size_t done = 0;
  while (done < msg.size()) {
    const ssize_t n = ::send(in_, msg.data() + done, msg.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(fmt::format("{}: command '{}': {}", kProgram, line, std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
  const std::string answer = readLine(std::chrono::steady_clock::now() + options_.timeout);
  if (answer.rfind("error: ", 0) == 0)
    throw std::runtime_error(fmt::format("{}: command '{}': {}", kProgram, line, answer.substr(7)));
  return answer;
}

} // namespace idem::kafka::client
