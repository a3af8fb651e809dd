#include "amqp_consumer.h"

#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace idem::targets {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) throw std::runtime_error(std::string("environment variable ") + name + " is not set");
  return v;
}

std::string text(amqp_bytes_t b) { return std::string(static_cast<const char*>(b.bytes), b.len); }

void check(amqp_rpc_reply_t r, const std::string& what) {
  if (r.reply_type == AMQP_RESPONSE_NORMAL) return;
  if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION)
    throw std::runtime_error(what + ": " + amqp_error_string2(r.library_error));
  if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
      (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD || r.reply.id == AMQP_CONNECTION_CLOSE_METHOD)) {
    auto* m = static_cast<amqp_channel_close_t*>(r.reply.decoded); // both begin with code and text
    throw std::runtime_error(what + ": " + std::to_string(m->reply_code) + " " + text(m->reply_text));
  }
  throw std::runtime_error(what + ": failed");
}

Entry entryOf(const amqp_envelope_t& e) {
  Entry out;
  const auto& p = e.message.properties;
  if (p._flags & AMQP_BASIC_MESSAGE_ID_FLAG) out.id = text(p.message_id);
  bool hasEventId = false;
  const auto j = nlohmann::ordered_json::parse(text(e.message.body), nullptr, false);
  if (j.is_object())
    for (const auto& [k, v] : j.items()) {
      out.fields.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
      hasEventId = hasEventId || k == "event_id";
    }
  if (!hasEventId && (p._flags & AMQP_BASIC_HEADERS_FLAG))
    for (int i = 0; i < p.headers.num_entries; ++i) {
      const auto& h = p.headers.entries[i];
      if (text(h.key) == "event_id" && (h.value.kind == AMQP_FIELD_KIND_UTF8 || h.value.kind == AMQP_FIELD_KIND_BYTES))
        out.fields.emplace_back("event_id", text(h.value.value.bytes));
    }
  return out;
}

} // namespace

AmqpConfig amqpConfigFromEnv() {
  return {env("DATABASE_URL"), env("AMQP_URL"), env("QUEUE"), env("CONSUMER")};
}

AmqpConsumer::AmqpConsumer(const AmqpConfig& config) {
  std::vector<char> url(config.url.begin(), config.url.end());
  url.push_back('\0');
  amqp_connection_info info;
  amqp_default_connection_info(&info);
  if (amqp_parse_url(url.data(), &info) != AMQP_STATUS_OK) throw std::runtime_error("AMQP_URL: not an amqp:// URL");
  conn_ = amqp_new_connection();
  amqp_socket_t* s = amqp_tcp_socket_new(conn_);
  if (!s || amqp_socket_open(s, info.host, info.port) != AMQP_STATUS_OK)
    throw std::runtime_error(std::string("cannot connect to ") + info.host + ":" + std::to_string(info.port));
  check(amqp_login(conn_, info.vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, info.user, info.password), "login");
  amqp_channel_open(conn_, 1);
  check(amqp_get_rpc_reply(conn_), "channel.open");
  amqp_basic_qos(conn_, 1, 0, 1, 0);
  check(amqp_get_rpc_reply(conn_), "basic.qos");
  amqp_basic_consume(conn_, 1, amqp_cstring_bytes(config.queue.c_str()), amqp_cstring_bytes(config.consumer.c_str()), 0,
                     0, 0, amqp_empty_table);
  check(amqp_get_rpc_reply(conn_), "basic.consume " + config.queue);
}

AmqpConsumer::~AmqpConsumer() {
  if (!conn_) return;
  amqp_channel_close(conn_, 1, AMQP_REPLY_SUCCESS);
  amqp_connection_close(conn_, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(conn_);
}

std::optional<AmqpMessage> AmqpConsumer::next(int timeoutMs) {
  amqp_maybe_release_buffers(conn_);
  amqp_envelope_t e;
  timeval tv{timeoutMs / 1000, (timeoutMs % 1000) * 1000};
  auto r = amqp_consume_message(conn_, &e, &tv, 0);
  if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && r.library_error == AMQP_STATUS_TIMEOUT) return std::nullopt;
  check(r, "waiting for a delivery");
  AmqpMessage m{entryOf(e), e.delivery_tag, e.redelivered != 0};
  amqp_destroy_envelope(&e);
  return m;
}

void AmqpConsumer::ack(const AmqpMessage& m) {
  if (amqp_basic_ack(conn_, 1, m.deliveryTag, 0) != AMQP_STATUS_OK)
    throw std::runtime_error("basic.ack of " + m.entry.id + ": the connection failed");
}

void runAmqpConsumer(AmqpConsumer& consumer, const AmqpHandler& handler) {
  while (!stopRequested())
    if (auto m = consumer.next(100)) handler(*m);
}

} // namespace idem::targets
