// Hub::refuse over real sockets: while a server restarts, its proxy ports refuse connections as the server's
// own port would, and afterwards the same ports proxy again.
#include "rig.h"

#include <catch2/catch.hpp>

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
