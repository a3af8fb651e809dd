// The listeners of a port, as /proc/net/tcp prints them and as the kernel's sock_diag answers.
#include "core/ports.h"
#include "proc_util.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <string>

using namespace idem;

TEST_CASE("listeningInodes reads the listeners of a port from /proc/net/tcp and tcp6", "[tempdir]") {
  // Recorded on Linux 6.1: an IPv4 listener on 0.0.0.0:2024 (07E8), a connection from 127.0.0.1:20485 (5005),
  // a listener on 127.0.0.1:20485, and an IPv6 one on [::]:23456 (5BA0).
  const std::string tcp =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1164 1 "
      "000000009df12b32 100 0 0 10 0\n"
      "   1: 0100007F:5005 0100007F:9F7A 06 00000000:00000000 03:000010AC 00000000     0        0 0 3 "
      "00000000ff4c2cc4\n"
      "   2: 0100007F:5005 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5550 1 "
      "000000009df12b32 100 0 0 10 0\n";
  const std::string tcp6 =
      "  sl  local_address                         remote_address                        st tx_queue rx_queue tr "
      "tm->when retrnsmt   uid  timeout inode\n"
      "   0: 00000000000000000000000000000000:5BA0 00000000000000000000000000000000:0000 0A 00000000:00000000 "
      "00:00000000 00000000     0        0 6068831 1 000000002cefc7f1 100 0 0 10 0\n";
  CHECK(listeningInodes(tcp, 2024) == std::set<unsigned long>{1164});
  CHECK(listeningInodes(tcp, 20485) == std::set<unsigned long>{5550}); // not the connection in TIME_WAIT (06)
  CHECK(listeningInodes(tcp, 23456).empty());
  CHECK(listeningInodes(tcp6, 23456) == std::set<unsigned long>{6068831});
  CHECK(listeningInodes("", 2024).empty());
  CHECK(listeningInodes(tcp.substr(0, 150), 2024).empty()); // a cut line is no listener
}

namespace {

/// A netlink message of type `type` whose payload is `payload`, padded as netlink aligns.
std::string netlinkMessage(uint16_t type, const std::string& payload) {
  nlmsghdr h{};
  h.nlmsg_len = static_cast<uint32_t>(NLMSG_LENGTH(payload.size()));
  h.nlmsg_type = type;
  std::string out(reinterpret_cast<const char*>(&h), sizeof h);
  out += payload;
  out.resize(NLMSG_ALIGN(out.size()), '\0');
  return out;
}

/// An inet_diag answer for a socket in `state` on local port `port` with inode `inode`.
std::string diagSocket(uint8_t state, int port, uint32_t inode) {
  inet_diag_msg m{};
  m.idiag_family = AF_INET;
  m.idiag_state = state;
  m.id.idiag_sport = htons(static_cast<uint16_t>(port));
  m.idiag_inode = inode;
  return netlinkMessage(SOCK_DIAG_BY_FAMILY, std::string(reinterpret_cast<const char*>(&m), sizeof m));
}

} // namespace

TEST_CASE("readDiagListeners reads the listeners of a port from a sock_diag dump", "[tempdir]") {
  const std::string two = diagSocket(TCP_LISTEN, 2024, 1164) + diagSocket(TCP_LISTEN, 2025, 1165) +
                          diagSocket(TCP_ESTABLISHED, 2024, 1166);
  DiagListeners got;
  readDiagListeners(two, 2024, got);
  CHECK(got.inodes == std::set<unsigned long>{1164}); // not another port's, nor a connection's
  CHECK_FALSE(got.done);
  CHECK_FALSE(got.failed);
  readDiagListeners(diagSocket(TCP_LISTEN, 2024, 1170) + netlinkMessage(NLMSG_DONE, std::string(4, '\0')), 2024, got);
  CHECK(got.inodes == std::set<unsigned long>{1164, 1170}); // a dump spread over datagrams
  CHECK(got.done);
  CHECK_FALSE(got.failed);
  const size_t one = diagSocket(TCP_LISTEN, 2024, 1164).size();
  for (size_t cut = 1; cut < two.size(); ++cut) { // a datagram cut anywhere is no answer
    if (cut % one == 0) continue; // a cut between two whole messages is two messages
    DiagListeners part;
    readDiagListeners(std::string_view(two).substr(0, cut), 2024, part);
    INFO(cut);
    CHECK(part.failed);
  }
  DiagListeners error;
  readDiagListeners(netlinkMessage(NLMSG_ERROR, std::string(sizeof(nlmsgerr), '\0')), 2024, error);
  CHECK(error.failed);
}

TEST_CASE("listeningInodes asks the kernel for a port's listeners, as /proc/net/tcp lists them", "[tempdir]") {
  auto lease = freeListenPort();
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(lease.port()));
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  struct stat st{};
  REQUIRE(::fstat(fd, &st) == 0);
  const std::set<unsigned long> own{static_cast<unsigned long>(st.st_ino)};
  auto bound = listeningInodes(lease.port());
  REQUIRE(bound); // sock_diag answers here
  CHECK(bound->empty()); // bound, not listening yet
  REQUIRE(::listen(fd, 1) == 0);
  CHECK(listeningInodes(lease.port()) == own);
  CHECK(listeningInodes(idem::testing::slurp("/proc/net/tcp"), lease.port()) == own);
  ::close(fd);
  CHECK(listeningInodes(lease.port())->empty());
}
