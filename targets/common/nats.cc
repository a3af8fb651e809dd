#include "nats.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iostream>
#include <stdexcept>

namespace idem::targets {
namespace {

std::string requireEnv(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0')
    throw std::runtime_error(std::string("missing environment variable ") + name);
  return v;
}

[[noreturn]] void failed(const std::string& what, natsStatus s) {
  const char* last = nats_GetLastError(nullptr);
  throw std::runtime_error("nats: " + what + ": " + natsStatus_GetText(s) + (last && *last ? std::string(": ") + last : ""));
}

Entry entryOf(natsMsg* m) {
  Entry e;
  jsMsgMetaData* meta = nullptr;
  if (natsMsg_GetMetaData(&meta, m) == NATS_OK) {
    e.id = std::to_string(meta->Sequence.Stream);
    jsMsgMetaData_Destroy(meta);
  }
  bool hasEventId = false;
  const char* data = natsMsg_GetData(m);
  const auto j = nlohmann::ordered_json::parse(data, data + natsMsg_GetDataLength(m), nullptr, false);
  if (j.is_object())
    for (const auto& [k, v] : j.items()) {
      e.fields.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
      hasEventId = hasEventId || k == "event_id";
    }
  const char* value = nullptr;
  if (!hasEventId && natsMsgHeader_Get(m, "event_id", &value) == NATS_OK && value)
    e.fields.emplace_back("event_id", value);
  return e;
}

} // namespace

NatsConfig natsConfigFromEnv() {
  NatsConfig c;
  c.databaseUrl = requireEnv("DATABASE_URL");
  c.url = requireEnv("NATS_URL");
  c.stream = requireEnv("STREAM");
  c.subject = requireEnv("SUBJECT");
  c.durable = requireEnv("DURABLE");
  c.consumer = requireEnv("CONSUMER");
  return c;
}

NatsConsumer::NatsConsumer(const NatsConfig& config) {
  natsOptions* o = nullptr;
  natsStatus s = natsOptions_Create(&o);
  if (s == NATS_OK) s = natsOptions_SetURL(o, config.url.c_str());
  if (s == NATS_OK) s = natsOptions_SetName(o, config.consumer.c_str());
  // A broken connection ends the process (the harness starts another): no reconnect of its own.
  if (s == NATS_OK) s = natsOptions_SetAllowReconnect(o, false);
  if (s == NATS_OK) s = natsConnection_Connect(&nc_, o);
  natsOptions_Destroy(o);
  if (s != NATS_OK) failed("connect", s);
  s = natsConnection_JetStream(&js_, nc_, nullptr);
  if (s != NATS_OK) failed("JetStream", s);
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = config.stream.c_str();
  so.Consumer = config.durable.c_str();
  jsErrCode jerr = static_cast<jsErrCode>(0);
  s = js_PullSubscribe(&sub_, js_, config.subject.c_str(), config.durable.c_str(), nullptr, &so, &jerr);
  if (s != NATS_OK) failed("pull subscribe to " + config.durable, s);
}

NatsConsumer::~NatsConsumer() {
  if (sub_) natsSubscription_Destroy(sub_);
  if (js_) jsCtx_Destroy(js_);
  if (nc_) natsConnection_Destroy(nc_);
}

std::string NatsConsumer::ack(const NatsMessage& m) {
  // A server answers an ACK at once; one it refused (a permissions violation) is never answered: give up
  // after 1 s rather than libnats's 5 s, and let AckWait deliver the message again.
  jsOptions o;
  jsOptions_Init(&o);
  o.Wait = 1000;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus s = natsMsg_AckSync(m.msg, &o, &jerr);
  return s == NATS_OK ? "" : natsStatus_GetText(s);
}

void NatsConsumer::run(const std::function<void(const NatsMessage&)>& handler) {
  while (!stopRequested()) {
    natsMsgList list{nullptr, 0};
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const natsStatus s = natsSubscription_Fetch(&list, sub_, 1, 100, &jerr);
    if (s == NATS_TIMEOUT) continue;
    if (s == NATS_CONNECTION_CLOSED || s == NATS_CONNECTION_DISCONNECTED || s == NATS_INVALID_SUBSCRIPTION)
      failed("fetch", s);
    if (s != NATS_OK) {
      // A durable made anew (409 Consumer Deleted), a server restarting: tell, and pull again.
      std::cerr << "nats: fetch: " << natsStatus_GetText(s) << std::endl;
      continue;
    }
    for (int i = 0; i < list.Count; ++i)
      handler(NatsMessage{entryOf(list.Msgs[i]), list.Msgs[i]});
    natsMsgList_Destroy(&list);
  }
}

} // namespace idem::targets
