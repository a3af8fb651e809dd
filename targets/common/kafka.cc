#include "kafka.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <stdexcept>

namespace idem::targets {
namespace {

std::string requireEnv(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0')
    throw std::runtime_error(std::string("missing environment variable ") + name);
  return v;
}

void set(rd_kafka_conf_t* conf, const std::string& key, const std::string& value) {
  char err[512];
  if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK)
    throw std::runtime_error("kafka: " + key + "=" + value + ": " + err);
}

struct PartitionListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* l) const { rd_kafka_topic_partition_list_destroy(l); }
};
using PartitionList = std::unique_ptr<rd_kafka_topic_partition_list_t, PartitionListDeleter>;

/// The entry a record is: its position, its JSON value's fields, the event_id header.
Entry entryOf(const rd_kafka_message_t* m, const std::string& topic) {
  Entry e;
  e.id = topic + "-" + std::to_string(m->partition) + "@" + std::to_string(m->offset);
  bool hasEventId = false;
  if (m->payload) {
    const auto j = nlohmann::ordered_json::parse(static_cast<const char*>(m->payload),
                                                 static_cast<const char*>(m->payload) + m->len, nullptr, false);
    if (j.is_object())
      for (const auto& [k, v] : j.items()) {
        e.fields.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
        hasEventId = hasEventId || k == "event_id";
      }
  }
  rd_kafka_headers_t* headers = nullptr;
  const void* value = nullptr;
  size_t size = 0;
  if (!hasEventId && rd_kafka_message_headers(m, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR &&
      rd_kafka_header_get_last(headers, "event_id", &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR && value)
    e.fields.emplace_back("event_id", std::string(static_cast<const char*>(value), size));
  return e;
}

} // namespace

KafkaConfig kafkaConfigFromEnv() {
  KafkaConfig c;
  c.databaseUrl = requireEnv("DATABASE_URL");
  c.bootstrap = requireEnv("KAFKA_BOOTSTRAP");
  c.topic = requireEnv("TOPIC");
  c.group = requireEnv("GROUP");
  c.consumer = requireEnv("CONSUMER");
  return c;
}

KafkaConsumer::KafkaConsumer(const KafkaConfig& config, const std::map<std::string, std::string>& settings) {
  std::map<std::string, std::string> all = {
      {"bootstrap.servers", config.bootstrap}, {"group.id", config.group}, {"client.id", config.consumer},
      {"auto.offset.reset", "earliest"},       {"session.timeout.ms", "6000"}, {"heartbeat.interval.ms", "2000"},
      {"fetch.wait.max.ms", "100"},            {"log_level", "4"}};
  for (const auto& [k, v] : settings)
    all[k] = v;
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  try {
    for (const auto& [k, v] : all)
      set(conf, k, v);
  } catch (...) {
    rd_kafka_conf_destroy(conf);
    throw;
  }
  char err[512];
  rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err); // owns conf from here, also on failure
  if (!rk_)
    throw std::runtime_error(std::string("kafka: ") + err);
  rd_kafka_poll_set_consumer(rk_);
  PartitionList topics(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_list_add(topics.get(), config.topic.c_str(), RD_KAFKA_PARTITION_UA);
  if (rd_kafka_resp_err_t e = rd_kafka_subscribe(rk_, topics.get())) {
    rd_kafka_destroy(rk_);
    throw std::runtime_error(std::string("kafka: subscribe: ") + rd_kafka_err2str(e));
  }
}

KafkaConsumer::~KafkaConsumer() {
  rd_kafka_consumer_close(rk_);
  rd_kafka_destroy(rk_);
}

std::optional<KafkaRecord> KafkaConsumer::poll(int timeoutMs) {
  rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, timeoutMs);
  if (!m)
    return std::nullopt;
  std::unique_ptr<rd_kafka_message_t, void (*)(rd_kafka_message_t*)> guard(m, rd_kafka_message_destroy);
  if (m->err) {
    char reason[512];
    if (rd_kafka_fatal_error(rk_, reason, sizeof reason))
      throw std::runtime_error(std::string("kafka: fatal: ") + reason);
    std::cerr << "kafka: " << rd_kafka_message_errstr(m) << std::endl;
    return std::nullopt;
  }
  KafkaRecord r;
  r.topic = rd_kafka_topic_name(m->rkt);
  r.partition = m->partition;
  r.offset = m->offset;
  r.entry = entryOf(m, r.topic);
  return r;
}

std::string KafkaConsumer::commit(const std::vector<Position>& positions) {
  PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(positions.size())));
  for (const auto& p : positions)
    rd_kafka_topic_partition_list_add(list.get(), p.topic.c_str(), p.partition)->offset = p.next;
  rd_kafka_resp_err_t e = rd_kafka_commit(rk_, list.get(), 0);
  for (int i = 0; !e && i < list->cnt; ++i)
    e = list->elems[i].err;
  return e ? rd_kafka_err2str(e) : "";
}

std::vector<std::pair<std::string, int32_t>> KafkaConsumer::assignment() {
  rd_kafka_topic_partition_list_t* raw = nullptr;
  std::vector<std::pair<std::string, int32_t>> out;
  if (rd_kafka_assignment(rk_, &raw) || !raw)
    return out;
  PartitionList list(raw);
  for (int i = 0; i < list->cnt; ++i)
    out.emplace_back(list->elems[i].topic, list->elems[i].partition);
  return out;
}

void runKafkaConsumer(KafkaConsumer& consumer, const KafkaHandler& handler) {
  while (!stopRequested())
    if (auto r = consumer.poll(100))
      handler(*r);
}

} // namespace idem::targets
