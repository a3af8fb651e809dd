// supervisor/parked.h: the parsers on /proc text as the kernel writes it, and the whole probe on real
// processes: one blocked reading a socket to a port it was given, one sleeping on a timer, one blocked on
// a socket to another port.
#include "supervisor/parked.h"

#include "core/child.h"

#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <thread>

using namespace idem;

TEST_CASE("parked: /proc/<tid>/syscall lines", "[parked]") {
  auto c = parseSyscallLine("0 0x3 0x7f74e7923000 0x20000 0x7f74e79b4b60 0xffffffff 0x0 0x7ffe530a8a78 0x7f74e7a9d2ad\n");
  REQUIRE(c);
  CHECK(c->nr == 0);
  REQUIRE(c->args.size() == 6);
  CHECK(c->args[0] == 3);
  CHECK(c->args[2] == 0x20000);
  CHECK_FALSE(parseSyscallLine("running\n"));
  CHECK_FALSE(parseSyscallLine("-1 0x7ffe530a8a78 0x7f74e7a9d2ad\n")); // blocked outside a system call
  CHECK_FALSE(parseSyscallLine(""));
  CHECK_FALSE(parseSyscallLine("7 0x1"));                                // cut short
  CHECK_FALSE(parseSyscallLine("x 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8"));
}

TEST_CASE("parked: /proc/net/tcp and tcp6 rows to loopback peers", "[parked]") {
  const std::string tcp =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 587 1 0 100 0 0 10 0\n"
      "   1: 0100007F:C934 0100007F:8FF5 01 00000000:00000000 00:00000000 00000000     0        0 4242 1 0 20 4 30 10 -1\n"
      "   2: 0A00020F:C934 08080808:0050 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0 20 4 30 10 -1\n";
  const std::string tcp6 =
      "  sl  local_address                         remote_address                        st tx_queue rx_queue tr "
      "tm->when retrnsmt   uid  timeout inode\n"
      "   0: 0000000000000000FFFF00000100007F:D2F0 0000000000000000FFFF00000100007F:1F90 01 00000000:00000000 "
      "00:00000000 00000000     0        0 5151 1 0 20 4 30 10 -1\n";
  auto peers = loopbackPeers(tcp + tcp6);
  CHECK(peers.size() == 2);
  CHECK(peers.at(4242) == 0x8FF5);
  CHECK(peers.at(5151) == 0x1F90);
  CHECK(peers.count(4343) == 0); // not loopback
  CHECK(peers.count(587) == 0);  // a listener: no peer
}

TEST_CASE("parked: fd links", "[parked]") {
  CHECK(socketInode("socket:[12345]") == 12345u);
  CHECK_FALSE(socketInode("pipe:[12345]"));
  CHECK_FALSE(socketInode("/dev/null"));
  CHECK_FALSE(socketInode("socket:[x]"));
}

namespace {

/// A listener on 127.0.0.1 that accepts and never writes.
struct Listener {
  int fd = -1;
  int port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    REQUIRE(::listen(fd, 8) == 0);
  }
  ~Listener() { ::close(fd); }
};

Child python(const std::string& code) {
  ChildSpec spec;
  spec.argv = {"python3", "-c", code};
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  spec.what = "parked test";
  return Child::spawn(spec);
}

/// Polls `parked` for a while: a process needs a moment to reach its blocking call.
bool becomesParked(pid_t pid, const std::set<int>& ports) {
  for (int i = 0; i < 200; ++i) {
    if (parked(pid, ports)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

} // namespace

TEST_CASE("parked: a process blocked reading a socket to a given port is parked, not to another port, nor asleep",
          "[parked]") {
  Listener l;
  const std::string reader = "import socket\ns = socket.create_connection(('127.0.0.1', " + std::to_string(l.port) +
                             "))\ns.recv(1)\n";
  Child c = python(reader);
  CHECK(becomesParked(c.pid(), {l.port}));
  CHECK_FALSE(parked(c.pid(), {l.port + 1})); // its socket goes elsewhere
  Child sleeper = python("import time\ntime.sleep(30)\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK_FALSE(becomesParked(sleeper.pid(), {l.port})); // a timer: it acts by itself
  // Two threads: one reads the socket, the other sleeps on a timer.
  Child threads = python("import socket, threading, time\nthreading.Thread(target=time.sleep, args=(30,)).start()\n" + reader);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK_FALSE(becomesParked(threads.pid(), {l.port}));
  CHECK_FALSE(parked(-1, {l.port}));
}
