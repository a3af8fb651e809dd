// Hub::refuse over real sockets: while a server restarts, its proxy ports refuse connections as the server's
// own port would, and afterwards the same ports proxy again.
#include "rig.h"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

using namespace idem;
using namespace idem::test;

TEST_CASE("refuse: while a server restarts its proxy ports refuse connections, then the same ports proxy again") {
  Rig rig({});
  REQUIRE_FALSE(connectRefused(rig.ports.broker));
  rig.hub.refuse(proxy::Server::Valkey, true);
  CHECK(connectRefused(rig.ports.broker));
  CHECK_FALSE(connectRefused(rig.ports.pg)); // the other server's ports still listen
  rig.hub.refuse(proxy::Server::Valkey, false);
  REQUIRE_FALSE(connectRefused(rig.ports.broker));
  const int before = rig.hub.connections(1);
  RawClient client(rig.ports.broker);
  const std::string set = resp({"SET", "a", "1"});
  client.send(set);
  CHECK(client.readN(5) == "+OK\r\n"); // from the fake server, through the port opened again
  CHECK(rig.hub.connections(1) > before);
}

TEST_CASE("refuse: a refused port stays the proxy's: no other socket is bound to it meanwhile") {
  // Else an outgoing connection of any process may be handed the port as its own, and the listener could
  // not bind it again once the restart is over.
  Rig rig({});
  rig.hub.refuse(proxy::Server::Valkey, true);
  CHECK(connectRefused(rig.ports.broker));
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(rig.ports.broker));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  const int err = errno;
  ::close(fd);
  CHECK(bound == -1);
  CHECK(err == EADDRINUSE);
  rig.hub.refuse(proxy::Server::Valkey, false);
  CHECK_FALSE(connectRefused(rig.ports.broker));
}
