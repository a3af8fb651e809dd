#include "fakes.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>

namespace idem::test {

namespace {

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

uint32_t be32(std::string_view s) {
  auto b = [&](size_t i) { return uint32_t(static_cast<unsigned char>(s[i])); };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

std::string pgMsg(char type, std::string_view body) { return type + pg::i32(uint32_t(body.size() + 4)) + std::string(body); }

/// Parses "<prefix><int>\r\n" at pos; 1 done, 0 need more, -1 invalid.
int respInt(const std::string& in, size_t& pos, char prefix, long long& n) {
  if (pos >= in.size()) return 0;
  if (in[pos] != prefix) return -1;
  size_t crlf = in.find("\r\n", pos + 1);
  if (crlf == std::string::npos) return in.size() - pos > 32 ? -1 : 0;
  std::string digits = in.substr(pos + 1, crlf - pos - 1);
  if (digits.empty() || digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return -1;
  n = std::stoll(digits);
  pos = crlf + 2;
  return 1;
}

} // namespace

// ---------------------------------------------------------------------------------------------------
// FakeServer

FakeServer::FakeServer(Proto proto, ReplyFn reply) : proto_(proto), replyFn_(std::move(reply)) {
  listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listenFd_ < 0) throw std::runtime_error("socket");
  int one = 1;
  ::setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = loopback(0);
  if (::bind(listenFd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listenFd_, 16) != 0)
    throw std::runtime_error(std::string("bind/listen: ") + std::strerror(errno));
  socklen_t len = sizeof a;
  ::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  if (::pipe2(wake_, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  thread_ = std::thread([this] { run(); });
}

FakeServer::~FakeServer() {
  char c = 'x';
  [[maybe_unused]] auto n = ::write(wake_[1], &c, 1);
  thread_.join();
  for (auto& c : conns_)
    if (c.fd >= 0) ::close(c.fd);
  ::close(listenFd_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void FakeServer::run() {
  for (;;) {
    std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listenFd_, POLLIN, 0}};
    std::vector<size_t> which;
    for (size_t i = 0; i < conns_.size(); ++i) {
      if (!conns_[i].open) continue;
      fds.push_back({conns_[i].fd, POLLIN, 0});
      which.push_back(i);
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents) return;
    for (size_t k = 0; k < which.size(); ++k) {
      if (!fds[k + 2].revents) continue;
      const size_t i = which[k];
      Conn& c = conns_[i];
      char buf[65536];
      ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        ::close(c.fd);
        c.fd = -1;
        c.open = false;
        std::lock_guard<std::mutex> lock(mu_);
        closed_++;
        cv_.notify_all();
        continue;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        received_[i].append(buf, size_t(n));
        cv_.notify_all();
      }
      c.in.append(buf, size_t(n));
      onBytes(c, i);
    }
    if (fds[1].revents & POLLIN) {
      int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        Conn c;
        c.fd = fd;
        conns_.push_back(std::move(c));
        std::lock_guard<std::mutex> lock(mu_);
        received_.emplace_back();
        sent_.emplace_back();
        cv_.notify_all();
      }
    }
  }
}

void FakeServer::onBytes(Conn& c, size_t index) {
  std::string out;
  if (!c.opaque) {
    if (proto_ == Proto::Resp) parseResp(c, index, out);
    else parsePg(c, index, out);
  }
  if (c.opaque) c.in.clear(); // recorded in received_; nothing more is parsed on this connection
  c.pending += out;
  flushHeld();
}

void FakeServer::parseResp(Conn& c, size_t index, std::string& out) {
  while (!c.in.empty()) {
    size_t pos = 0;
    long long n = 0;
    int r = respInt(c.in, pos, '*', n);
    if (r < 0) return void(c.opaque = true);
    if (r == 0) return;
    std::vector<std::string> args;
    for (long long i = 0; i < n; ++i) {
      long long len = 0;
      r = respInt(c.in, pos, '$', len);
      if (r < 0) return void(c.opaque = true);
      if (r == 0) return;
      if (c.in.size() < pos + size_t(len) + 2) return;
      if (c.in.compare(pos + size_t(len), 2, "\r\n") != 0) return void(c.opaque = true);
      args.push_back(c.in.substr(pos, size_t(len)));
      pos += size_t(len) + 2;
    }
    c.in.erase(0, pos);
    if (args.empty()) continue;
    {
      std::lock_guard<std::mutex> lock(mu_);
      commands_.push_back(args);
      cv_.notify_all();
    }
    out += replyFn_ ? replyFn_(args) : std::string("+OK\r\n");
  }
  (void)index;
}

void FakeServer::parsePg(Conn& c, size_t index, std::string& out) {
  for (;;) {
    if (!c.started) {
      if (c.in.size() < 8) return;
      const uint32_t len = be32(c.in), code = be32(std::string_view(c.in).substr(4));
      if (len < 8 || len > 10000) return void(c.opaque = true);
      if (c.in.size() < len) return;
      c.in.erase(0, len);
      if (code == 80877103) { // SSLRequest: no
        out += 'N';
      } else if (code == 196608) {
        c.started = true;
        out += pgMsg('R', pg::i32(0)) + pgMsg('Z', "I");
      } else {
        return void(c.opaque = true);
      }
      continue;
    }
    if (c.in.size() < 5) return;
    const char type = c.in[0];
    const uint32_t len = be32(std::string_view(c.in).substr(1));
    if (len < 4 || len > (1u << 24)) return void(c.opaque = true);
    if (c.in.size() < 1 + size_t(len)) return;
    std::string body = c.in.substr(5, len - 4);
    c.in.erase(0, 1 + size_t(len));
    if (type == 'X') continue;
    if (type != 'Q') return void(c.opaque = true);
    if (!body.empty() && body.back() == '\0') body.pop_back();
    std::vector<std::string> cmd{"Q", body};
    {
      std::lock_guard<std::mutex> lock(mu_);
      commands_.push_back(cmd);
      cv_.notify_all();
    }
    if (replyFn_) {
      out += replyFn_(cmd);
      continue;
    }
    std::string verb;
    for (char ch : body) {
      if (std::isspace(static_cast<unsigned char>(ch))) {
        if (verb.empty()) continue;
        break;
      }
      verb += char(std::toupper(static_cast<unsigned char>(ch)));
    }
    std::string tag = verb == "INSERT" ? "INSERT 0 1" : (verb == "UPDATE" || verb == "DELETE" || verb == "SELECT") ? verb + " 1" : verb;
    out += pgMsg('C', tag + '\0') + pgMsg('Z', "I");
  }
  (void)index;
}

void FakeServer::flushHeld() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (commands_.size() < holdUntil_) return;
  }
  for (size_t i = 0; i < conns_.size(); ++i) {
    Conn& c = conns_[i];
    if (c.pending.empty()) continue;
    if (c.open) writeAll(c, i, c.pending);
    c.pending.clear();
  }
}

void FakeServer::writeAll(Conn& c, size_t index, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::send(c.fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      break; // the peer is gone; its EOF is seen by the next poll
    }
    off += size_t(n);
  }
  std::lock_guard<std::mutex> lock(mu_);
  sent_[index].append(bytes, 0, off);
  cv_.notify_all();
}

void FakeServer::holdRepliesUntil(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  holdUntil_ = n;
}

std::vector<std::vector<std::string>> FakeServer::commands() const {
  std::lock_guard<std::mutex> lock(mu_);
  return commands_;
}
size_t FakeServer::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return commands_.size();
}
std::string FakeServer::received(size_t i) const {
  std::lock_guard<std::mutex> lock(mu_);
  return i < received_.size() ? received_[i] : std::string();
}
std::string FakeServer::sent(size_t i) const {
  std::lock_guard<std::mutex> lock(mu_);
  return i < sent_.size() ? sent_[i] : std::string();
}
int FakeServer::accepted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return int(received_.size());
}
int FakeServer::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}
bool FakeServer::waitCount(size_t n, Ms timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return commands_.size() >= n; });
}
bool FakeServer::waitClosed(int n, Ms timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return closed_ >= n; });
}
bool FakeServer::waitBytes(size_t i, size_t n, Ms timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return i < received_.size() && received_[i].size() >= n; });
}

// ---------------------------------------------------------------------------------------------------
// RawClient

RawClient::RawClient(int port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd_ >= 0);
  sockaddr_in a = loopback(port);
  REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

RawClient::~RawClient() { close(); }

void RawClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void RawClient::send(std::string_view bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    INFO("send: " << std::strerror(errno));
    REQUIRE(n > 0);
    off += size_t(n);
  }
}

std::string RawClient::readN(size_t n, Ms timeout) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (out.size() < n) {
    auto left = std::chrono::duration_cast<Ms>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, int(left)) <= 0) continue;
    char buf[4096];
    ssize_t r = ::recv(fd_, buf, std::min(sizeof buf, n - out.size()), 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    out.append(buf, size_t(r));
  }
  return out;
}

RawClient::Result RawClient::readUntilClosed(Ms timeout) {
  Result res;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<Ms>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return res;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, int(left)) <= 0) continue;
    char buf[4096];
    ssize_t r = ::recv(fd_, buf, sizeof buf, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      res.closed = true;
      return res;
    }
    res.bytes.append(buf, size_t(r));
  }
}

bool connectRefused(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = loopback(port);
  bool refused = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno == ECONNREFUSED;
  ::close(fd);
  return refused;
}

// ---------------------------------------------------------------------------------------------------
// Child processes

SleepingChild::SleepingChild() {
  pid_ = ::fork();
  REQUIRE(pid_ >= 0);
  if (pid_ == 0) {
    // Async-signal-safe calls only: the parent may have threads.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::alarm(60);
    for (;;) ::pause();
  }
  ::setpgid(pid_, pid_); // also from here, so the group exists before anyone signals it
}

SleepingChild::~SleepingChild() {
  if (reaped_ || pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int st = 0;
  while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
}

std::optional<int> SleepingChild::waitExit(Ms timeout) {
  if (reaped_) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      return st;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(1ms);
  }
}

bool SleepingChild::alive() {
  if (reaped_) return false;
  int st = 0;
  if (::waitpid(pid_, &st, WNOHANG) == pid_) {
    reaped_ = true;
    return false;
  }
  return true;
}

pid_t reapedPid() {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setpgid(0, 0);
    ::_exit(0);
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  REQUIRE(::killpg(pid, 0) != 0);
  REQUIRE(errno == ESRCH);
  return pid;
}

// ---------------------------------------------------------------------------------------------------
// History and protocol functions

std::vector<OpView> opsOf(const History& h, const std::string& type) {
  std::vector<OpView> out;
  for (auto& op : h.ops())
    if (op.type() == type) out.push_back({op.index, op.process, nlohmann::json(op)["value"]});
  return out;
}

std::vector<std::string> stepLines(const History& h) {
  std::vector<std::string> out;
  for (auto& op : opsOf(h, "step"))
    out.push_back(op.value.value("verb", "?") + "#" + std::to_string(op.value.value("k", 0)) + " " +
                  op.value.value("outcome", "?"));
  return out;
}

nlohmann::json stepOf(const History& h, const std::string& verb, int k) {
  std::vector<nlohmann::json> found;
  for (auto& op : opsOf(h, "step"))
    if (op.value.value("verb", "") == verb && op.value.value("k", 0) == k) found.push_back(op.value);
  INFO(verb << "#" << k << " in " << h.toJson().dump());
  REQUIRE(found.size() == 1);
  return found.front();
}

std::string resp(std::initializer_list<std::string_view> args) {
  std::string out;
  out.append("*").append(std::to_string(args.size())).append("\r\n");
  for (auto a : args) out.append("$").append(std::to_string(a.size())).append("\r\n").append(a).append("\r\n");
  return out;
}

namespace pg {
std::string i32(uint32_t v) {
  return {char(v >> 24), char((v >> 16) & 0xff), char((v >> 8) & 0xff), char(v & 0xff)};
}
std::string startup() {
  std::string body = i32(196608) + std::string("user") + '\0' + "postgres" + '\0' + '\0';
  return i32(uint32_t(body.size() + 4)) + body;
}
std::string query(std::string_view sql) { return pgMsg('Q', std::string(sql) + '\0'); }
std::string terminate() { return pgMsg('X', ""); }
} // namespace pg

} // namespace idem::test
