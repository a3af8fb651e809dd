#pragma once
/// The NATS protocol tracker (proxy::Tracker) for JetStream pull consumers: frames the text protocol in
/// both directions (control lines, and the payloads PUB, HPUB, MSG and HMSG carry after them) and names
/// a consumer's steps (README.md here):
///   FETCH  a pull request (a publish to $JS.API.CONSUMER.MSG.NEXT.<stream>.<durable>); its reply is the
///          first message the server sends to the request's inbox: a delivery, or a status (404, 408: a
///          read that delivered nothing); each later message of a pull for a batch (nats.js consume(), a
///          libnats Fetch of 10) is a FETCH step of its own that the server pushes
///          (proxy::ServerMsg::Kind::Push), and the consumer waits on the open pull between them;
///   ACK, NAK, WPI, TERM  a publish to a delivery's $JS.ACK subject; ACK and TERM acknowledge its entry;
///   PUB    any other publish of the consumer (it produces).
/// A publish gets no reply in NATS: every step but FETCH is one-way (proxy::StepInfo::oneWay). Set-up
/// (CONNECT, SUB, UNSUB, PING, PONG, JetStream API requests and their answers, INFO) is no step.
/// An entry is named by its stream sequence ("17"), as the $JS.ACK subject of its delivery carries it.
#include "proxy/tracker.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace idem::nats {

/// A control line longer than this, or a payload larger, is not framed: the direction passes through
/// unobserved from it on.
inline constexpr size_t kMaxControlLine = 64 << 10;
inline constexpr size_t kMaxPayload = 64 << 20;

proxy::TrackerPtr makeTracker();

/// The error code of an `error` fault at a NATS step (plan/faults/error.cc): the server refuses the
/// publish (a pull request, an acknowledgement, a publish of the consumer's) as it does one its
/// permissions deny. The message is dropped and the connection stays open.
inline constexpr const char* kPermissionsViolation = "PERMISSIONS_VIOLATION";

/// The server's answer to `request` (a whole PUB or HPUB) failing with `code`:
/// `-ERR 'Permissions Violation for Publish to "SUBJECT"'`; to a message of a batch it pushes (a whole MSG
/// or HMSG), `-ERR 'Permissions Violation for Subscription to "SUBJECT"'` in its place. nullopt for
/// another code or request.
std::optional<std::string> errorAnswer(std::string_view request, const std::string& code);

/// What a $JS.ACK subject says of a delivery: its stream, its durable and its stream sequence. nullopt for
/// any other subject. Both layouts: $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
/// and $JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>[.<token>].
struct AckSubject {
  std::string stream, consumer;
  uint64_t delivered = 0;
  uint64_t streamSeq = 0;
};
std::optional<AckSubject> parseAckSubject(std::string_view subject);

} // namespace idem::nats
