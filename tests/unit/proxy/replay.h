#pragma once
/// Shared code of the protocol tracker tests: recorded captures, one printable line per message, and
/// feeding a tracker the way the proxy does (unconsumed bytes stay pending) — whole, split at an offset,
/// in pieces, in the recorded order.
#include "proxy/tracker.h"

#include <algorithm>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace idem::proxy::test {

/// One chunk of a capture, in the order the recording relay saw it.
struct Chunk {
  bool client = true; ///< client->server
  std::string bytes;
};

/// Reads IDEM_SOURCE_DIR/tests/captures/`rel` (records: 'C'|'S', uint32 big-endian length, bytes).
std::vector<Chunk> loadCapture(const std::string& rel);
/// All bytes of one direction of a capture, in order.
std::string joinDirection(const std::vector<Chunk>& chunks, bool client);

/// Everything the tracker reported, per direction.
struct Events {
  std::vector<ClientMsg> client;
  std::vector<ServerMsg> server;
  bool client_invalid = false; ///< the client direction ended in Invalid
  bool server_invalid = false;
  size_t client_left = 0;      ///< bytes left unconsumed (NeedMoreData) at the end
  size_t server_left = 0;
  /// One line per message, e.g. "C RequestEnd 37 INSERT | INSERT INTO …" or "S ReplyEnd 6 ok UPDATE 1".
  std::vector<std::string> lines(bool client) const;
};

/// A line describing one message (every field that matters).
std::string describe(const ClientMsg& m);
/// A line describing one message (every field that matters).
std::string describe(const ServerMsg& m);

/// Keeps the unconsumed bytes of each direction and drains complete messages as bytes arrive; checks
/// that every reported size is > 0 and within the buffer. After Invalid a direction is fed no more.
class Feeder {
public:
  explicit Feeder(TrackerPtr tracker) : tracker_(std::move(tracker)) {}
  void client(std::string_view bytes);
  void server(std::string_view bytes);
  /// The events so far, with the bytes left pending.
  Events events() const;

private:
  TrackerPtr tracker_;
  std::string client_pending_, server_pending_;
  Events events_;
};

using Factory = std::function<TrackerPtr()>;

/// The client bytes whole, then the server bytes whole (all requests pipelined before any reply).
Events feedWhole(const Factory& make, std::string_view client, std::string_view server);
/// Client bytes in two chunks split at `client_at`, then server bytes split at `server_at`.
Events feedSplit(const Factory& make, std::string_view client, size_t client_at, std::string_view server,
                 size_t server_at);
/// Client bytes in pieces of `piece` bytes, then the server bytes likewise.
Events feedPieces(const Factory& make, std::string_view client, std::string_view server, size_t piece);
/// The capture's chunks in the recorded order, each cut into pieces of `piece` bytes (0: whole).
Events feedSession(const Factory& make, const std::vector<Chunk>& chunks, size_t piece = 0);

/// REQUIREs that every split offset of each direction, byte-by-byte feeding, the recorded
/// interleaving (whole and byte by byte) all give the events of feedWhole(); and that every truncation
/// of each direction gives a prefix of them and no crash.
void checkSplitInvariance(const Factory& make, const std::vector<Chunk>& chunks);

/// The steps the client side requested, in order.
std::vector<StepInfo> steps(const Events& e);
/// The verbs of the steps the client side requested, in order.
std::vector<std::string> verbs(const Events& e);
/// The replies that ended steps, in order.
std::vector<ReplyInfo> replies(const Events& e);

/// Byte counts of one direction's messages: all of them, the Stream ones (forwarded at once), the largest
/// of the others (what the proxy must keep at once) and the largest of all.
struct Sizes {
  size_t total = 0, streamed = 0, largestHeld = 0, largest = 0;
};
template <class Msg>
Sizes sizesOf(const std::vector<Msg>& messages) {
  Sizes s;
  for (const auto& m : messages) {
    s.total += m.size;
    s.largest = std::max(s.largest, m.size);
    if (m.kind == Msg::Kind::Stream) s.streamed += m.size;
    else s.largestHeld = std::max(s.largestHeld, m.size);
  }
  return s;
}

/// A whole recorded session fed in one piece per direction.
Events wholeOf(const Factory& make, const std::vector<Chunk>& chunks);
/// Each reply as "error: ", "empty: " (an empty read) and its summary.
std::vector<std::string> summaries(const Events& e);
/// The entry ids a reply delivered.
std::vector<std::string> deliveredIds(const ReplyInfo& r);
/// Every step ends exactly once (by a reply, or skipped before one; a one-way step by being sent), and every
/// byte was decoded.
void requireBalanced(const Events& e);

} // namespace idem::proxy::test
