#include "brokers/rabbitmq/client/admin.h"

#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <fmt/format.h>

#include <stdexcept>

namespace idem::rabbitmq::client {

namespace {

std::string describe(const amqp_rpc_reply_t& r) {
  switch (r.reply_type) {
  case AMQP_RESPONSE_NORMAL: return "ok";
  case AMQP_RESPONSE_NONE: return "no reply";
  case AMQP_RESPONSE_LIBRARY_EXCEPTION: return amqp_error_string2(r.library_error);
  case AMQP_RESPONSE_SERVER_EXCEPTION:
    if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD || r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
      // Both methods start with reply_code and reply_text.
      auto* m = static_cast<amqp_channel_close_t*>(r.reply.decoded);
      return fmt::format("{} {}", m->reply_code,
                         std::string(static_cast<const char*>(m->reply_text.bytes), m->reply_text.len));
    }
    return fmt::format("server method {:#x}", r.reply.id);
  }
  return "unknown";
}

} // namespace

AmqpAdmin::AmqpAdmin(const std::string& host, int port, const std::string& user, const std::string& password,
                     const std::string& vhost)
    : where_(fmt::format("RabbitMQ at {}:{} vhost {}", host, port, vhost)) {
  conn_ = amqp_new_connection();
  amqp_socket_t* s = amqp_tcp_socket_new(conn_);
  timeval tv{10, 0};
  if (!s || amqp_socket_open_noblock(s, host.c_str(), port, &tv) != AMQP_STATUS_OK) {
    amqp_destroy_connection(conn_);
    conn_ = nullptr;
    throw std::runtime_error(where_ + ": cannot connect");
  }
  auto r = amqp_login(conn_, vhost.c_str(), 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, user.c_str(), password.c_str());
  if (r.reply_type != AMQP_RESPONSE_NORMAL) {
    amqp_destroy_connection(conn_);
    conn_ = nullptr;
    throw std::runtime_error(where_ + ": login: " + describe(r));
  }
  amqp_channel_open(conn_, 1);
  check("channel.open");
}

AmqpAdmin::~AmqpAdmin() {
  if (!conn_) return;
  amqp_connection_close(conn_, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(conn_);
}

void AmqpAdmin::check(const char* what) {
  auto r = amqp_get_rpc_reply(conn_);
  if (r.reply_type != AMQP_RESPONSE_NORMAL) throw std::runtime_error(fmt::format("{}: {}: {}", where_, what, describe(r)));
}

void AmqpAdmin::declareQueue(const std::string& name) {
  amqp_queue_declare(conn_, 1, amqp_cstring_bytes(name.c_str()), 0, 1, 0, 0, amqp_empty_table);
  check("queue.declare");
}

void AmqpAdmin::deleteQueue(const std::string& name) {
  amqp_queue_delete(conn_, 1, amqp_cstring_bytes(name.c_str()), 0, 0);
  check("queue.delete");
}

AmqpAdmin::Counts AmqpAdmin::counts(const std::string& name) {
  auto* ok = amqp_queue_declare(conn_, 1, amqp_cstring_bytes(name.c_str()), 1, 0, 0, 0, amqp_empty_table);
  check("queue.declare passive");
  return ok ? Counts{ok->message_count, ok->consumer_count} : Counts{};
}

void AmqpAdmin::publish(const std::string& queue, const std::string& body, const std::string& messageId,
                        const std::string& eventId) {
  amqp_basic_properties_t props{};
  props._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG;
  props.content_type = amqp_cstring_bytes("application/json");
  props.delivery_mode = 2; // persistent: kept across a restart of the node
  props.message_id = amqp_cstring_bytes(messageId.c_str());
  amqp_table_entry_t header;
  if (!eventId.empty()) {
    header.key = amqp_cstring_bytes("event_id");
    header.value.kind = AMQP_FIELD_KIND_UTF8;
    header.value.value.bytes = amqp_cstring_bytes(eventId.c_str());
    props._flags |= AMQP_BASIC_HEADERS_FLAG;
    props.headers.num_entries = 1;
    props.headers.entries = &header;
  }
  amqp_bytes_t b{body.size(), const_cast<char*>(body.data())};
  const int rc = amqp_basic_publish(conn_, 1, amqp_empty_bytes, amqp_cstring_bytes(queue.c_str()), 0, 0, &props, b);
  if (rc != AMQP_STATUS_OK) throw std::runtime_error(fmt::format("{}: basic.publish: {}", where_, amqp_error_string2(rc)));
}

std::vector<std::pair<std::string, std::string>> AmqpAdmin::drain(const std::string& queue) {
  return take(queue, true);
}

std::vector<std::string> AmqpAdmin::peek(const std::string& queue) {
  std::vector<std::string> ids;
  for (auto& [id, body] : take(queue, false)) ids.push_back(std::move(id));
  amqp_basic_recover(conn_, 1, 1);
  check("basic.recover");
  return ids;
}

std::vector<std::pair<std::string, std::string>> AmqpAdmin::take(const std::string& queue, bool settle) {
  std::vector<std::pair<std::string, std::string>> out;
  for (;;) {
    auto r = amqp_basic_get(conn_, 1, amqp_cstring_bytes(queue.c_str()), settle ? 1 : 0);
    if (r.reply_type != AMQP_RESPONSE_NORMAL)
      throw std::runtime_error(fmt::format("{}: basic.get {}: {}", where_, queue, describe(r)));
    if (r.reply.id != AMQP_BASIC_GET_OK_METHOD) return out; // get-empty
    amqp_message_t m;
    auto read = amqp_read_message(conn_, 1, &m, 0);
    if (read.reply_type != AMQP_RESPONSE_NORMAL)
      throw std::runtime_error(fmt::format("{}: reading a message of {}: {}", where_, queue, describe(read)));
    std::string id;
    if (m.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG)
      id.assign(static_cast<const char*>(m.properties.message_id.bytes), m.properties.message_id.len);
    out.emplace_back(std::move(id), std::string(static_cast<const char*>(m.body.bytes), m.body.len));
    amqp_destroy_message(&m);
  }
}

} // namespace idem::rabbitmq::client
