#include "brokers/nats/client/nats_broker.h"
#include "brokers/nats/client/embedded.h"

#include "brokers/nats/tracker.h"

#include "core/error.h"

#include <nats/nats.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <stdexcept>
#include <vector>

namespace idem::nats::client {

namespace {

constexpr int64_t kNsPerMs = 1000000;

[[noreturn]] void failed(const std::string& what, natsStatus s, jsErrCode jerr = static_cast<jsErrCode>(0)) {
  const char* last = nats_GetLastError(nullptr);
  throw std::runtime_error(fmt::format("NATS {}: {}{}{}", what, natsStatus_GetText(s),
                                       jerr ? fmt::format(" (JetStream error {})", static_cast<int>(jerr)) : "",
                                       last && *last ? fmt::format(": {}", last) : ""));
}

/// The durable's redelivery times after AckWait (JetStream's BackOff): the first redelivery after AckWait,
/// as a claim would come, then 250 ms and 1 s at least. A killed consumer's messages come back as fast as
/// before, but a live consumer that works through a batch longer than AckWait no longer gets its messages
/// again and again meanwhile (each delivery more makes the final values harder to tell apart). Empty when
/// AckWait is 1 s or more (every time would be AckWait's).
std::vector<int64_t> backOffMs(int ackWaitMs) {
  if (ackWaitMs >= 1000) return {};
  return {ackWaitMs, std::max(ackWaitMs, 250), 1000};
}

/// A process-wide counter for Nats-Msg-Id: fresh for every publish of the harness.
std::atomic<uint64_t> publishes{0};

} // namespace

/// The harness's own connection to the server (never through the proxies) and its JetStream context.
class Admin {
public:
  /// The credentials go as options, decoded: libnats takes a URL's user part as it is written.
  explicit Admin(const NatsEndpoint& at) {
    natsOptions* o = nullptr;
    natsStatus s = natsOptions_Create(&o);
    const std::string url = fmt::format("nats://{}:{}", at.host, at.port);
    if (s == NATS_OK) s = natsOptions_SetURL(o, url.c_str());
    if (s == NATS_OK && !at.token.empty()) s = natsOptions_SetToken(o, at.token.c_str());
    if (s == NATS_OK && !at.user.empty()) s = natsOptions_SetUserInfo(o, at.user.c_str(), at.password.c_str());
    if (s == NATS_OK) s = natsOptions_SetAllowReconnect(o, false);
    if (s == NATS_OK) s = natsOptions_SetTimeout(o, 5000);
    if (s == NATS_OK) s = natsConnection_Connect(&nc_, o);
    natsOptions_Destroy(o);
    if (s != NATS_OK) failed("connect", s);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = 5000;
    s = natsConnection_JetStream(&js_, nc_, &jo);
    if (s != NATS_OK) failed("JetStream context", s);
  }
  ~Admin() {
    if (js_) jsCtx_Destroy(js_);
    if (nc_) natsConnection_Destroy(nc_);
  }
  Admin(const Admin&) = delete;
  Admin& operator=(const Admin&) = delete;

  jsCtx* js() const { return js_; }

  /// The durable's state; throws when it cannot be read.
  std::unique_ptr<jsConsumerInfo, void (*)(jsConsumerInfo*)> consumer(const std::string& stream, const std::string& durable) {
    jsConsumerInfo* ci = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    natsStatus s = js_GetConsumerInfo(&ci, js_, stream.c_str(), durable.c_str(), nullptr, &jerr);
    if (s != NATS_OK) failed(fmt::format("consumer info of {} on {}", durable, stream), s, jerr);
    return {ci, jsConsumerInfo_Destroy};
  }

private:
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
};

NatsBroker::NatsBroker(int ackWaitMs) : ackWaitMs_(std::max(1, ackWaitMs)) {
  server_ = std::make_unique<EmbeddedNats>();
  at_.port = server_->port();
  at_.token = server_->secret();
  admin_ = std::make_unique<Admin>(at_);
}

NatsBroker::NatsBroker(const NatsEndpoint& at, const std::string& tag, int ackWaitMs)
    : at_(at), tag_(tag), ackWaitMs_(std::max(1, ackWaitMs)) {
  try {
    admin_ = std::make_unique<Admin>(at_);
  } catch (const std::runtime_error& e) {
    throw UsageError(fmt::format("--nats-url: {}:{}: {}", at_.host, at_.port, e.what()));
  }
  // A stream goes with its durable.
  onSignal_ = std::make_unique<brokers::OnUserBroker>("NATS stream of " + tag, [at](const std::string& stream) {
    Admin admin(at);
    jsErrCode jerr = static_cast<jsErrCode>(0);
    js_DeleteStream(admin.js(), stream.c_str(), nullptr, &jerr);
  });
}

NatsBroker::~NatsBroker() {
  if (!tag_.empty()) {
    onSignal_.reset();
    if (admin_ && run_ > 0) {
      jsErrCode jerr = static_cast<jsErrCode>(0);
      js_DeleteStream(admin_->js(), stream_.c_str(), nullptr, &jerr);
    }
  }
  admin_.reset();
  server_.reset();
}

proxy::Upstream NatsBroker::upstream() const { return {at_.host, at_.port}; }

proxy::TrackerPtr NatsBroker::tracker(int) { return makeTracker(); }

void NatsBroker::createConsumer() {
  jsConsumerConfig cc;
  jsConsumerConfig_Init(&cc);
  cc.Durable = durable_.c_str();
  cc.AckPolicy = js_AckExplicit;
  cc.DeliverPolicy = js_DeliverAll;
  cc.AckWait = int64_t(ackWaitMs_) * kNsPerMs;
  std::vector<int64_t> backOff;
  for (int64_t ms : backOffMs(ackWaitMs_)) backOff.push_back(ms * kNsPerMs);
  if (!backOff.empty()) {
    cc.BackOff = backOff.data();
    cc.BackOffLen = static_cast<int>(backOff.size());
    cc.MaxDeliver = int64_t(1) << 30; // JetStream wants a bound past the BackOff's length: none a run reaches
  }
  jsConsumerInfo* ci = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_AddConsumer(&ci, admin_->js(), stream_.c_str(), &cc, nullptr, &jerr);
  if (s != NATS_OK) failed(fmt::format("add consumer {} on {}", durable_, stream_), s, jerr);
  jsConsumerInfo_Destroy(ci);
}

void NatsBroker::reset() {
  // A new stream and durable per run: nothing of the last run is delivered again. An embedded server is
  // this workspace's alone: short names, which entry ids (stream sequences) need not carry; on the user's,
  // the workspace's tag keeps them apart from every other's.
  if (run_ > 0) {
    jsErrCode jerr = static_cast<jsErrCode>(0);
    js_DeleteStream(admin_->js(), stream_.c_str(), nullptr, &jerr); // its store would pile up run after run
  }
  ++run_;
  const std::string prefix = tag_.empty() ? "" : fmt::format("idemproof_{}_", tag_);
  stream_ = fmt::format("{}events_{}", prefix, run_);
  subject_ = tag_.empty() ? fmt::format("events.{}", run_) : fmt::format("idemproof.{}.events.{}", tag_, run_);
  durable_ = fmt::format("{}consumers_{}", prefix, run_);
  if (onSignal_) onSignal_->set(stream_);
  lastSeq_ = 0;
  jsStreamConfig sc;
  jsStreamConfig_Init(&sc);
  const char* subjects[] = {subject_.c_str()};
  sc.Name = stream_.c_str();
  sc.Subjects = subjects;
  sc.SubjectsLen = 1;
  sc.Storage = js_FileStorage; // kept across a restart of the server
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_AddStream(&si, admin_->js(), &sc, nullptr, &jerr);
  if (s != NATS_OK) failed(fmt::format("add stream {}", stream_), s, jerr);
  jsStreamInfo_Destroy(si);
  createConsumer();
}

std::vector<std::string> NatsBroker::publish(const std::vector<brokers::Message>& messages) {
  std::vector<std::string> ids;
  for (const auto& m : messages) {
    nlohmann::json value = nlohmann::json::object();
    for (const auto& [k, v] : m.fields) value[k] = v;
    const std::string body = value.dump();
    natsMsg* msg = nullptr;
    natsStatus s = natsMsg_Create(&msg, subject_.c_str(), nullptr, body.data(), static_cast<int>(body.size()));
    const std::string msgId = fmt::format("idemproof-{}-{}", ::getpid(), ++publishes);
    if (s == NATS_OK) s = natsMsgHeader_Set(msg, "Nats-Msg-Id", msgId.c_str());
    if (s == NATS_OK && !m.eventId.empty()) s = natsMsgHeader_Set(msg, "event_id", m.eventId.c_str());
    jsPubAck* pa = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    if (s == NATS_OK) s = js_PublishMsg(&pa, admin_->js(), msg, nullptr, &jerr);
    natsMsg_Destroy(msg);
    if (s != NATS_OK) failed(fmt::format("publish to {}", subject_), s, jerr);
    lastSeq_ = pa->Sequence;
    ids.push_back(std::to_string(pa->Sequence));
    jsPubAck_Destroy(pa);
  }
  return ids;
}

namespace {

std::string positionOf(const jsConsumerInfo& ci) {
  return fmt::format("ack floor {}, delivered {}", ci.AckFloor.Stream, ci.Delivered.Stream);
}

} // namespace

brokers::Progress NatsBroker::progress() {
  auto ci = admin_->consumer(stream_, durable_);
  brokers::Progress p;
  p.pending = static_cast<int64_t>(ci->NumPending) + ci->NumAckPending;
  p.delivered = ci->NumPending == 0 && ci->Delivered.Stream >= lastSeq_;
  p.position = positionOf(*ci);
  return p;
}

void NatsBroker::forget() {
  // A lost ack floor: the durable again, from the start, so that every acknowledged message comes again.
  // JetStream has no call that moves a durable's ack floor back: it is deleted and made anew (its waiting
  // pull requests end with 409 Consumer Deleted; the next ones reach the new one by the same name).
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_DeleteConsumer(admin_->js(), stream_.c_str(), durable_.c_str(), nullptr, &jerr);
  if (s != NATS_OK) failed(fmt::format("delete consumer {} on {}", durable_, stream_), s, jerr);
  createConsumer();
}

brokers::Leftover NatsBroker::leftover() {
  brokers::Leftover l;
  auto ci = admin_->consumer(stream_, durable_);
  l.position = positionOf(*ci);
  // Consumer info counts what awaits an ack, and does not list it: those between the ack floor and the
  // last delivered sequence (exact when acks came in order, the usual case of one message per pull).
  for (uint64_t q = ci->AckFloor.Stream + 1; q <= ci->Delivered.Stream; ++q) l.pending.push_back({std::to_string(q), durable_, 0, 1});
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_GetStreamInfo(&si, admin_->js(), stream_.c_str(), nullptr, &jerr);
  if (s != NATS_OK) failed(fmt::format("stream info of {}", stream_), s, jerr);
  if (si->State.Msgs > 0)
    for (uint64_t q = si->State.FirstSeq; q <= si->State.LastSeq; ++q) {
      l.stream.push_back(std::to_string(q));
      if (q > ci->Delivered.Stream) l.undelivered.push_back(std::to_string(q));
    }
  jsStreamInfo_Destroy(si);
  return l;
}

std::map<std::string, std::string> NatsBroker::connectionEnv(int proxyPort) const {
  // The credentials in the URL's user part (libnats reads them there); apart as well for clients that take
  // them apart (nats.js: connect({servers, token}) or connect({servers, user, pass})).
  std::map<std::string, std::string> env{{"NATS_URL", at_.url("127.0.0.1", proxyPort)}};
  if (!at_.token.empty()) env["NATS_TOKEN"] = at_.token;
  if (!at_.user.empty()) env["NATS_USER"] = at_.user, env["NATS_PASSWORD"] = at_.password;
  return env;
}

std::map<std::string, std::string> NatsBroker::consumerEnv() const {
  return {{"STREAM", stream_}, {"SUBJECT", subject_}, {"DURABLE", durable_}, {"GROUP", durable_}};
}

std::optional<std::string> NatsBroker::errorAnswer(std::string_view request, const std::string& code) const {
  return nats::errorAnswer(request, code);
}

std::string NatsBroker::defaultError(const std::string&) const { return kPermissionsViolation; }

void NatsBroker::reconnect() { admin_ = std::make_unique<Admin>(at_); }

bool NatsBroker::restart() {
  // The user's server is not idemproof's to restart (Session refuses restart faults with --nats-url).
  if (!server_) throw UsageError("--nats-url: a restart fault needs the embedded nats-server");
  // Every connection closes; it comes back on the same port with its store: the stream, its messages,
  // the durable and its ack floor. The proxies refuse connections meanwhile, as its port does.
  admin_.reset();
  server_->restartInPlace();
  admin_ = std::make_unique<Admin>(at_);
  return true;
}

} // namespace idem::nats::client
