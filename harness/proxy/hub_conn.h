#pragma once
/// Private to the hub: one proxied connection, whose parts live in two files: hub_conn.cc (how it starts,
/// its decode loop, the bytes it moves each way, how it ends) and hub_decisions.cc (the StepListener's
/// decisions it carries out).
#include "proxy/hub_impl.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace idem::proxy::hub_detail {

/// One proxied connection: client <-> proxy <-> server. Holds the bytes of a step until the listener has
/// decided; forwards them in order. A held step (Decision::Hold) pauses its direction: nothing behind it
/// is decoded or forwarded until it is released.
struct Conn : std::enable_shared_from_this<Conn> {
  Hub::Impl& hub;
  int owner;
  int id;
  Server server;
  tcp::socket client;
  tcp::socket upstream;
  TrackerPtr tracker;
  std::string cin, sin;            // unconsumed input of each direction
  std::string heldReq, heldRep;    // bytes of the current step request / reply, withheld until decided
  struct Sent {
    StepToken token;
    uint64_t end = 0; // upstream byte offset just past its request
  };
  std::deque<Sent> inflight;       // requests sent upstream, awaiting replies (FIFO)
  std::set<int64_t> oneWay;        // decided requests the server never answers (StepInfo::oneWay)
  // Bytes queued for the server, and handed to the socket: Asio sends at once when a write starts (its
  // handler runs later), so a request is counted as possibly sent from the moment its bytes are handed on.
  uint64_t upQueued = 0, upHanded = 0;
  uint64_t cinOffset = 0, sinOffset = 0; // bytes of each direction consumed by the tracker so far
  std::deque<std::string> outClient, outUpstream;
  size_t waitingClient = 0, waitingUp = 0; // bytes queued for each side, not written yet
  bool clientReadPaused = false, upstreamReadPaused = false; // backpressure (readFrom)
  bool writingClient = false, writingUpstream = false;
  bool clientEof = false, upstreamEof = false;
  bool clientOpaque = false, serverOpaque = false; // undecodable: pass through unobserved
  bool dead = false;
  bool closeAfterAnswer = false; // an Answer that ends the session: close once the client has it
  /// A step held by a Hold decision: its token, its bytes, and its timer.
  struct Held {
    StepToken token;
    std::string bytes;
    std::unique_ptr<asio::steady_timer> timer;
    /// A server push held before the listener saw it as a reply: that reply, asked for on release.
    std::optional<ReplyInfo> push;
  };
  std::optional<Held> holdReq, holdRep;
  /// One-way requests held after they were handed on (a delay or a server action after an ACK). Apart from
  /// holdRep, which a push of the server may hold at the same time: each is released in its own time (the
  /// listener's onReleased) or cut with the connection. While any is held, what the server sends waits, as
  /// behind holdRep.
  std::map<int64_t, Held> holdSent;
  std::array<char, 65536> bufC{}, bufU{};

  /// `port`: the listener that accepted it (a broker's tracker may need it: Kafka's rewrites the broker
  /// addresses its answers carry to it).
  Conn(Hub::Impl& h, int o, int i, Server s, tcp::socket sock, int port);

  // hub_conn.cc

  void start();
  /// A connection refused at startup: answers SSL and GSS requests 'N' (as the tracker does), then the
  /// StartupMessage with `answer` (a FATAL ErrorResponse), and closes once the client has it. Nothing
  /// reaches the server.
  void refuseStartup(std::string answer);
  /// Reads what the client (or the server) sent, decodes it, and reads again; EOF or an error marks that
  /// side ended.
  void readFrom(bool fromClient);
  /// How finish() would end step `token` now (Withheld, Forwarded), nullopt when it is not in flight here.
  std::optional<CutKind> cutKindOf(int64_t token) const;
  void processClient();
  void processServer();
  /// The decode loop of one direction (ClientMsg: requests; ServerMsg: replies): takes whole messages off
  /// the front of its input and handles each (onMessage); stops when the direction is held or the
  /// connection stopped moving (the rest of the input is then dropped). Once a byte can't be decoded,
  /// everything from it on passes through unobserved.
  template <class Msg>
  void process();
  /// Sends the bytes held of the current request (or reply) on, outside any step.
  void passHeld(bool request);
  Decode decode(std::string_view bytes, ClientMsg& m) { return tracker->onClient(bytes, m); }
  Decode decode(std::string_view bytes, ServerMsg& m) { return tracker->onServer(bytes, m); }
  /// One decoded client message; false when the connection stopped moving (killed, dropped).
  bool onMessage(const ClientMsg& m, std::string bytes);
  /// One decoded server message; false when the connection stopped moving.
  bool onMessage(const ServerMsg& m, std::string bytes);
  /// Why bytes could not be decoded, with the first of them in hex.
  std::string undecodable(std::string_view rest) const;
  void sendUpstream(std::string bytes);
  void sendClient(std::string bytes);
  void writeUpstream() { writeTo(false); }
  void writeClient() { writeTo(true); }
  /// Writes the queued bytes for the client (or the server), one chunk after the other.
  void writeTo(bool toClient);
  /// A side closed: once what it sent has been written to the other side, close both.
  void maybeClose();
  /// Resets both sides (RST, not FIN: the client sees a connection error, the server ends the session).
  void drop();
  /// Closes both sockets; steps still in flight are reported cut.
  void finish();

  // hub_decisions.cc

  /// Carries out a decision on a complete request (its bytes in heldReq) or reply (in heldRep) of
  /// `token`. Returns false when the connection must stop processing (killed, dropped, or held: paused).
  bool decide(const Decision& d, const StepToken& token, bool request);
  /// An error answer in the broker's name that ends its connection (BrokerSide::errorEndsConnection).
  bool endsConnection(const Decision& d) const;
  /// Sends a decided request on to the server (awaiting its reply), or a decided reply to the client.
  void forward(bool request, const StepToken& token, std::string bytes);
  /// A one-way request was handed on: its step ends here, with an empty reply that the listener may still
  /// kill, drop or hold at (held in holdSent: what the server sends next then waits). What is held of
  /// another step's reply stays held.
  void sent(const StepToken& token);
  /// A server push (ServerMsg::Push), its bytes in heldRep: the listener sees it as a step's request, then
  /// as its reply; false when the connection stopped moving.
  bool onPush(const ServerMsg& m);
  /// The reply half of a server push.
  bool pushed(const StepToken& token, const ReplyInfo& reply);
  /// Registers a held step for Hub::release, and its timer when it releases itself.
  void arm(Held& h, std::chrono::milliseconds after);
  /// Lets a held step through and resumes its direction.
  void release(int64_t token);
};

} // namespace idem::proxy::hub_detail
