#pragma once
/// Test doubles for the hub + controller tests: a fake Valkey / PostgreSQL server on 127.0.0.1 (port
/// chosen at run time) that records every byte and command it receives, a raw TCP client, a sleeping
/// child process in its own process group (what the Controller SIGKILLs), and bounded waits.
#include "history/history.h"

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace idem::test {

using namespace std::chrono_literals;
using Ms = std::chrono::milliseconds;

/// The bound of every wait in these tests: a hang guard, never a timing assumption.
constexpr Ms kTimeout = 5000ms;

/// Polls `pred` every millisecond until it is true or `timeout` passes; returns its last value.
template <class Pred>
bool waitUntil(Pred pred, Ms timeout = kTimeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

/// A server that speaks just enough of one protocol: RESP (every multibulk command is answered, "+OK"
/// unless a reply function says otherwise) or PostgreSQL v3 (StartupMessage -> AuthenticationOk +
/// ReadyForQuery; each simple Query -> CommandComplete + ReadyForQuery('I')). Bytes it cannot parse
/// make that connection opaque: recorded, never answered. One thread, poll(2), any number of
/// connections.
class FakeServer {
public:
  enum class Proto { Resp, Pg };
  using ReplyFn = std::function<std::string(const std::vector<std::string>& command)>;

  explicit FakeServer(Proto proto, ReplyFn reply = {});
  ~FakeServer();
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  int port() const { return port_; }

  /// Every command received, in order (RESP: its arguments; PostgreSQL: {"Q", sql}).
  std::vector<std::vector<std::string>> commands() const;
  size_t count() const;
  /// Every byte received on connection `i` (0-based, in accept order), unchanged.
  std::string received(size_t i = 0) const;
  /// Every byte sent on connection `i`.
  std::string sent(size_t i = 0) const;
  int accepted() const;
  /// Connections whose peer (the proxy) closed or reset them.
  int closed() const;

  /// Waits until at least `n` commands arrived; false on timeout.
  bool waitCount(size_t n, Ms timeout = kTimeout) const;
  /// Waits until at least `n` connections were closed by the peer.
  bool waitClosed(int n, Ms timeout = kTimeout) const;
  /// Waits until connection `i` has received at least `n` bytes.
  bool waitBytes(size_t i, size_t n, Ms timeout = kTimeout) const;

  /// Replies are held (in order, per connection) until `n` commands in all have arrived; then all go
  /// out in one write per connection. Lets a test know that a pipeline was forwarded in full before
  /// any of its replies reached the proxy.
  void holdRepliesUntil(size_t n);

private:
  struct Conn {
    int fd = -1;
    std::string in;      // unparsed
    std::string pending; // replies held by holdRepliesUntil
    bool started = false; // PostgreSQL: startup done
    bool opaque = false;
    bool open = true;
  };
  void run();
  void onBytes(Conn& c, size_t index);
  void parseResp(Conn& c, size_t index, std::string& out);
  void parsePg(Conn& c, size_t index, std::string& out);
  void reply(Conn& c, size_t index, std::string bytes);
  void flushHeld();
  void writeAll(Conn& c, size_t index, const std::string& bytes);

  Proto proto_;
  ReplyFn replyFn_;
  int listenFd_ = -1;
  int wake_[2] = {-1, -1};
  int port_ = 0;
  std::thread thread_;
  std::vector<Conn> conns_; // server thread only

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<std::vector<std::string>> commands_;
  std::vector<std::string> received_, sent_;
  int closed_ = 0;
  size_t holdUntil_ = 0;
};

/// A plain blocking TCP client on 127.0.0.1 with bounded reads.
class RawClient {
public:
  explicit RawClient(int port);
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  void send(std::string_view bytes);
  /// Reads until `n` bytes in all arrived (returns them), or the peer closed / the timeout passed
  /// (returns what came).
  std::string readN(size_t n, Ms timeout = kTimeout);
  struct Result {
    std::string bytes;   ///< everything read until the end
    bool closed = false; ///< EOF or reset seen (false: the timeout passed first)
  };
  /// Reads until EOF / reset / timeout.
  Result readUntilClosed(Ms timeout = kTimeout);
  void close();

private:
  int fd_ = -1;
};

/// True when a TCP connect to 127.0.0.1:port is refused.
bool connectRefused(int port);

/// A child process in its own process group that sleeps until killed (at most 60 s, and dies with the
/// test process). Killed and reaped by the destructor if the test did not reap it.
class SleepingChild {
public:
  SleepingChild();
  ~SleepingChild();
  SleepingChild(const SleepingChild&) = delete;
  SleepingChild& operator=(const SleepingChild&) = delete;

  pid_t pid() const { return pid_; }
  /// Waits up to `timeout` for it to exit and reaps it: its wait status, or nullopt if still running.
  std::optional<int> waitExit(Ms timeout = kTimeout);
  /// True when it has not exited (checked without blocking; reaps it if it did).
  bool alive();

private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

/// The pid of a process that has exited and been reaped (and led its own process group): killpg on it
/// fails with ESRCH.
pid_t reapedPid();

/// Reading histories.
/// An op as its JSON shows it (history/history.h's mapping): its process and its value.
struct OpView {
  int64_t index = 0;
  std::string process;
  nlohmann::json value;
};
/// The ops of `h` of one type ("step", "fault", "note", "opaque", ...), in order.
std::vector<OpView> opsOf(const History& h, const std::string& type);
/// The step ops as "VERB#k outcome" lines, in history order.
std::vector<std::string> stepLines(const History& h);
/// The value of the one step op VERB#k (fails the test if there is not exactly one).
nlohmann::json stepOf(const History& h, const std::string& verb, int k);

/// RESP multibulk encoding of a command.
std::string resp(std::initializer_list<std::string_view> args);

/// PostgreSQL frontend messages.
namespace pg {
std::string i32(uint32_t v);
std::string startup();
std::string query(std::string_view sql);
std::string terminate();
} // namespace pg

} // namespace idem::test
