#pragma once
/// Builders of RESP commands and the runs of the RESP tracker for its tests (resp_tracker_test.cc,
/// resp_transactions_test.cc).
#include "proxy/errors.h"
#include "replay.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace idem::proxy::test {

/// A multibulk command, as a client sends it (proxy::respCommand).
inline std::string cmd(const std::vector<std::string>& args) { return respCommand(args); }

/// The tracker fed `client` then `server`, whole; every split of the two decodes alike.
inline Events run(const std::string& client, const std::string& server) {
  checkSplitInvariance(makeRespTracker, {Chunk{true, client}, Chunk{false, server}});
  return feedWhole(makeRespTracker, client, server);
}

/// One client message, decoded by a fresh tracker.
inline ClientMsg oneCommand(const std::string& bytes, Decode expect = Decode::Message) {
  ClientMsg m;
  REQUIRE(makeRespTracker()->onClient(bytes, m) == expect);
  return m;
}

/// The one reply to `command`.
inline ReplyInfo replyTo(const std::vector<std::string>& command, const std::string& reply) {
  const Events e = run(cmd(command), reply);
  REQUIRE(replies(e).size() == 1);
  REQUIRE(e.server_left == 0);
  return replies(e)[0];
}

} // namespace idem::proxy::test
