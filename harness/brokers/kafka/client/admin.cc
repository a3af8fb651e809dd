// KafkaAdmin: librdkafka's C API for producing and reading offsets; Boost.Asio for the raw requests
// librdkafka cannot send in another member's name (LeaveGroup, OffsetCommit).
#include "brokers/kafka/client/admin.h"

#include "brokers/kafka/api.h"
#include "brokers/kafka/errors.h"
#include "brokers/kafka/wire.h"

#include <librdkafka/rdkafka.h>

#include <boost/asio.hpp>
#include <fmt/format.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <tuple>

namespace idem::kafka::client {
namespace {

using Partitions = std::unique_ptr<rd_kafka_topic_partition_list_t, decltype(&rd_kafka_topic_partition_list_destroy)>;

rd_kafka_t* newHandle(rd_kafka_type_t type, const std::map<std::string, std::string>& settings,
                      void (*deliveryReport)(rd_kafka_t*, const rd_kafka_message_t*, void*) = nullptr) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  for (const auto& [k, v] : settings) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      throw std::runtime_error(fmt::format("librdkafka: {}={}: {}", k, v, err));
    }
  }
  if (deliveryReport) rd_kafka_conf_set_dr_msg_cb(conf, deliveryReport);
  // Not on idemproof's stderr: what fails reaches the caller as an error of its call (a broker stopped
  // under a live handle, as at the end of a run interrupted by a signal, would otherwise print a line per
  // thread and retry).
  rd_kafka_conf_set_log_cb(conf, [](const rd_kafka_t*, int, const char*, const char*) {});
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err); // takes conf on success
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    throw std::runtime_error(fmt::format("librdkafka: {}", err));
  }
  return rk;
}

/// What a delivery report fills in: the partition and offset, or the error.
struct Delivery {
  int32_t partition = -1;
  int64_t offset = -1;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
  bool done = false;
};

void onDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void*) {
  auto* d = static_cast<Delivery*>(m->_private);
  d->partition = m->partition;
  d->offset = m->offset;
  d->err = m->err;
  d->done = true;
}

int timeoutMs(std::chrono::milliseconds t) { return static_cast<int>(std::max<int64_t>(t.count(), 0)); }

/// A consumer of `group` that never subscribes: it asks for and sets the group's offsets without being a
/// member, so it causes no rebalance.
rd_kafka_t* groupHandle(const std::string& bootstrap, const std::string& group) {
  return newHandle(RD_KAFKA_CONSUMER, {{"bootstrap.servers", bootstrap},
                                       {"client.id", "idemproof"},
                                       {"group.id", group},
                                       {"enable.auto.commit", "false"},
                                       {"enable.auto.offset.store", "false"},
                                       {"log_level", "3"}});
}

Partitions partitionList(const std::string& topic, int count) {
  Partitions list(rd_kafka_topic_partition_list_new(count), &rd_kafka_topic_partition_list_destroy);
  for (int p = 0; p < count; ++p) rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), p);
  return list;
}

} // namespace

KafkaAdmin::KafkaAdmin(const std::string& bootstrap) : bootstrap_(bootstrap) {
  producer_ = newHandle(RD_KAFKA_PRODUCER, {{"bootstrap.servers", bootstrap_},
                                            {"client.id", "idemproof"},
                                            {"acks", "all"},
                                            {"linger.ms", "0"},
                                            {"message.timeout.ms", "10000"}, // within produce()'s wait
                                            {"log_level", "3"}},
                        &onDelivery);
}

KafkaAdmin::~KafkaAdmin() {
  for (auto& [group, rk] : consumers_) {
    // Never subscribed: nothing to leave; destroy without the close that would wait for a coordinator.
    rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
  }
  rd_kafka_flush(producer_, 1000);
  rd_kafka_destroy(producer_);
}

std::vector<std::string> KafkaAdmin::produce(const std::string& topic, const std::vector<Record>& recs) {
  partitionsOf(topic, std::chrono::seconds(10)); // a topic that does not exist is an error, never created
  std::vector<Delivery> deliveries(recs.size());
  for (size_t i = 0; i < recs.size(); ++i) {
    const Record& r = recs[i];
    rd_kafka_headers_t* headers = rd_kafka_headers_new(r.headers.size());
    for (const auto& [k, v] : r.headers) rd_kafka_header_add(headers, k.data(), k.size(), v.data(), v.size());
    rd_kafka_resp_err_t err;
    while (true) {
      err = rd_kafka_producev(producer_, RD_KAFKA_V_TOPIC(topic.c_str()),
                              RD_KAFKA_V_KEY(r.key.data(), r.key.size()),
                              RD_KAFKA_V_VALUE(const_cast<char*>(r.value.data()), r.value.size()),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(headers),
                              RD_KAFKA_V_OPAQUE(&deliveries[i]), RD_KAFKA_V_END);
      if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) break;
      rd_kafka_poll(producer_, 10); // room in the local queue as earlier records are acknowledged
    }
    if (err) {
      rd_kafka_headers_destroy(headers); // producev takes them on success only
      rd_kafka_flush(producer_, 10000);  // the earlier records' reports point into `deliveries`
      throw std::runtime_error(fmt::format("Kafka topic {}: producing record {} of {}: {}", topic, i + 1,
                                           recs.size(), rd_kafka_err2str(err)));
    }
  }
  if (rd_kafka_flush(producer_, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    // The reports of what is still in flight would write into `deliveries`: purge them (they report
    // __PURGE_QUEUE now) before it goes.
    rd_kafka_purge(producer_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_flush(producer_, 1000);
    throw std::runtime_error(fmt::format("Kafka topic {}: {} records not acknowledged within 10 s", topic,
                                         rd_kafka_outq_len(producer_)));
  }
  std::vector<std::string> ids;
  ids.reserve(recs.size());
  for (size_t i = 0; i < deliveries.size(); ++i) {
    const Delivery& d = deliveries[i];
    if (!d.done || d.err)
      throw std::runtime_error(fmt::format("Kafka topic {}: record {} of {} (key '{}'): {}", topic, i + 1, recs.size(),
                                           recs[i].key, d.done ? rd_kafka_err2str(d.err) : "no delivery report"));
    ids.push_back(fmt::format("{}-{}@{}", topic, d.partition, d.offset));
  }
  return ids;
}

void KafkaAdmin::forget(const std::string& topic, const std::string& group) {
  rd_kafka_t* rk = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    partitions_.erase(topic);
    auto it = consumers_.find(group);
    if (it == consumers_.end()) return;
    rk = it->second;
    consumers_.erase(it);
  }
  rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE); // never subscribed: nothing to leave
}

rd_kafka_t* KafkaAdmin::consumerOf(const std::string& group) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = consumers_.find(group);
  if (it != consumers_.end()) return it->second;
  rd_kafka_t* rk = groupHandle(bootstrap_, group);
  consumers_.emplace(group, rk);
  return rk;
}

int KafkaAdmin::partitionsOf(const std::string& topic, std::chrono::milliseconds timeout) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = partitions_.find(topic); it != partitions_.end()) return it->second;
  }
  // Every topic's metadata, not the topic's: Metadata below v4 (the mock's highest is 2) cannot ask the
  // broker not to create a topic it names, and the mock then creates it with 4 partitions.
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t err = rd_kafka_metadata(producer_, 1, nullptr, &md, timeoutMs(timeout));
  if (err) throw std::runtime_error(fmt::format("Kafka topic {}: metadata: {}", topic, rd_kafka_err2str(err)));
  std::unique_ptr<const rd_kafka_metadata_t, decltype(&rd_kafka_metadata_destroy)> hold(md, &rd_kafka_metadata_destroy);
  const rd_kafka_metadata_topic_t* found = nullptr;
  for (int i = 0; i < md->topic_cnt; ++i)
    if (topic == md->topics[i].topic) found = &md->topics[i];
  if (!found) throw std::runtime_error(fmt::format("Kafka topic {}: no such topic", topic));
  if (found->err) throw std::runtime_error(fmt::format("Kafka topic {}: metadata: {}", topic, rd_kafka_err2str(found->err)));
  const int count = found->partition_cnt;
  std::lock_guard<std::mutex> lock(mu_);
  partitions_[topic] = count;
  return count;
}

std::vector<PartitionProgress> KafkaAdmin::progress(const std::string& topic, const std::string& group,
                                                    std::chrono::milliseconds timeout) {
  const int count = partitionsOf(topic, timeout);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto left = [&] {
    return timeoutMs(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
  };
  // The log ends: one ListOffsets for every partition (offsets_for_times with the "latest" timestamp, -1),
  // where rd_kafka_query_watermark_offsets would ask the low and high marks of one partition per call.
  Partitions ends = partitionList(topic, count);
  Partitions committed = partitionList(topic, count);
  auto ask = [&](rd_kafka_t* producer, rd_kafka_t* consumer) {
    for (int i = 0; i < count; ++i) ends->elems[i].offset = RD_KAFKA_OFFSET_END;
    rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(producer, ends.get(), left());
    if (err) return std::make_pair(err, "log end offsets");
    return std::make_pair(rd_kafka_committed(consumer, committed.get(), left()), "committed offsets");
  };
  auto [err, what] = ask(producer_, consumerOf(group));
  if (err == RD_KAFKA_RESP_ERR__TIMED_OUT) {
    // Once, at the end of a rebalance run on a loaded machine, the log ends went unanswered for 5 s: asked
    // again, for as long, on connections of their own.
    std::unique_ptr<rd_kafka_t, decltype(&rd_kafka_destroy)> producer(
        newHandle(RD_KAFKA_PRODUCER, {{"bootstrap.servers", bootstrap_}, {"client.id", "idemproof"}, {"log_level", "3"}}),
        &rd_kafka_destroy);
    rd_kafka_t* consumer = groupHandle(bootstrap_, group);
    deadline = std::chrono::steady_clock::now() + timeout;
    std::tie(err, what) = ask(producer.get(), consumer);
    rd_kafka_destroy_flags(consumer, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE); // never subscribed
  }
  if (err)
    throw std::runtime_error(fmt::format("Kafka group {} on topic {}: {}: {}", group, topic, what, rd_kafka_err2str(err)));
  std::vector<PartitionProgress> out(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    const auto& e = ends->elems[i];
    const auto& c = committed->elems[i];
    if (e.err) throw std::runtime_error(fmt::format("Kafka topic {}-{}: log end: {}", topic, i, rd_kafka_err2str(e.err)));
    if (c.err)
      throw std::runtime_error(fmt::format("Kafka group {} on {}-{}: committed offset: {}", group, topic, i,
                                           rd_kafka_err2str(c.err)));
    out[static_cast<size_t>(i)] = {e.partition, e.offset, c.offset < 0 ? -1 : c.offset};
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> KafkaAdmin::records(const std::string& topic,
                                                                   std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto left = [&] {
    return timeoutMs(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
  };
  const int count = partitionsOf(topic, timeout);
  Partitions ends = partitionList(topic, count);
  for (int i = 0; i < count; ++i) ends->elems[i].offset = RD_KAFKA_OFFSET_END;
  rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(producer_, ends.get(), left());
  if (err) throw std::runtime_error(fmt::format("Kafka topic {}: log end offsets: {}", topic, rd_kafka_err2str(err)));
  std::vector<std::vector<std::pair<std::string, std::string>>> byPartition(static_cast<size_t>(count));
  std::map<int, int64_t> next, end; // partition -> the next offset to read, its log end
  for (int i = 0; i < count; ++i)
    if (ends->elems[i].offset > 0) next[i] = 0, end[i] = ends->elems[i].offset;
  if (!next.empty()) {
    std::unique_ptr<rd_kafka_t, decltype(&rd_kafka_destroy)> c(
        newHandle(RD_KAFKA_CONSUMER, {{"bootstrap.servers", bootstrap_},
                                      {"client.id", "idemproof"},
                                      {"group.id", "idemproof-dead-letters"},
                                      {"enable.auto.commit", "false"},
                                      {"enable.auto.offset.store", "false"},
                                      {"log_level", "3"}}),
        &rd_kafka_destroy);
    Partitions from = partitionList(topic, count);
    for (int i = 0; i < count; ++i) from->elems[i].offset = RD_KAFKA_OFFSET_BEGINNING;
    if ((err = rd_kafka_assign(c.get(), from.get())))
      throw std::runtime_error(fmt::format("Kafka topic {}: assign: {}", topic, rd_kafka_err2str(err)));
    while (!next.empty()) {
      if (left() <= 0) throw std::runtime_error(fmt::format("Kafka topic {}: its records not read in time", topic));
      rd_kafka_message_t* m = rd_kafka_consumer_poll(c.get(), std::min(left(), 100));
      if (!m) continue;
      std::unique_ptr<rd_kafka_message_t, decltype(&rd_kafka_message_destroy)> hold(m, &rd_kafka_message_destroy);
      if (m->err) continue; // a partition's EOF, a transient error: the offsets decide
      auto it = next.find(m->partition);
      if (it == next.end() || m->offset < it->second) continue;
      byPartition[static_cast<size_t>(m->partition)].emplace_back(
          fmt::format("{}-{}@{}", topic, m->partition, m->offset),
          std::string(static_cast<const char*>(m->payload), m->len));
      it->second = m->offset + 1;
      if (it->second >= end[m->partition]) next.erase(it);
    }
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& p : byPartition)
    for (auto& r : p) out.push_back(std::move(r));
  return out;
}

void KafkaAdmin::commit(const std::string& topic, const std::string& group, const std::map<int, int64_t>& offsets) {
  rd_kafka_t* consumer = consumerOf(group);
  Partitions list(rd_kafka_topic_partition_list_new(static_cast<int>(offsets.size())),
                  &rd_kafka_topic_partition_list_destroy);
  for (const auto& [p, offset] : offsets) rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), p)->offset = offset;
  rd_kafka_resp_err_t err = rd_kafka_commit(consumer, list.get(), 0);
  if (!err) {
    for (int i = 0; i < list->cnt && !err; ++i) err = list->elems[i].err;
  }
  if (err)
    throw std::runtime_error(fmt::format("Kafka group {} on topic {}: commit: {}", group, topic, rd_kafka_err2str(err)));
}

std::string KafkaAdmin::roundTrip(const std::string& hostPort, const std::string& frame, int32_t correlation,
                                  std::chrono::milliseconds timeout, const std::string& what) {
  namespace asio = boost::asio;
  const auto colon = hostPort.rfind(':');
  if (colon == std::string::npos || colon == 0)
    throw std::invalid_argument(fmt::format("{}: '{}' is not host:port", what, hostPort));
  const std::string host = hostPort.substr(0, colon), port = hostPort.substr(colon + 1);

  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  asio::ip::tcp::socket socket(io);
  std::string head(4, '\0'), body;
  std::optional<boost::system::error_code> failed;
  std::string step = "resolve";
  bool done = false;
  auto check = [&](const boost::system::error_code& ec, const char* next) {
    if (ec) failed = ec;
    else step = next;
    return !ec;
  };
  resolver.async_resolve(host, port, [&](const boost::system::error_code& ec, asio::ip::tcp::resolver::results_type r) {
    if (!check(ec, "connect")) return;
    asio::async_connect(socket, r, [&](const boost::system::error_code& ec, const asio::ip::tcp::endpoint&) {
      if (!check(ec, "send")) return;
      asio::async_write(socket, asio::buffer(frame), [&](const boost::system::error_code& ec, size_t) {
        if (!check(ec, "read")) return;
        asio::async_read(socket, asio::buffer(head), [&](const boost::system::error_code& ec, size_t) {
          if (!check(ec, "read")) return;
          const int32_t len = Reader(head).int32();
          if (len < 4 || len > (1 << 20)) {
            failed = asio::error::message_size;
            return;
          }
          body.resize(static_cast<size_t>(len));
          asio::async_read(socket, asio::buffer(body), [&](const boost::system::error_code& ec, size_t) {
            if (check(ec, "read")) done = true;
          });
        });
      });
    });
  });
  io.run_for(timeout);
  if (failed) throw std::runtime_error(fmt::format("{} to {}: {}: {}", what, hostPort, step, failed->message()));
  if (!done)
    throw std::runtime_error(fmt::format("{} to {}: no answer within {} ms ({})", what, hostPort, timeout.count(), step));
  Reader r(body);
  const int32_t got = r.int32();
  if (got != correlation)
    throw std::runtime_error(fmt::format("{} to {}: the answer's correlation id is {}, not {}", what, hostPort, got,
                                         correlation));
  return body.substr(4);
}

int16_t KafkaAdmin::leaveGroup(const std::string& hostPort, const Membership& m, std::chrono::milliseconds timeout) {
  constexpr int32_t kCorrelation = 0x1dE0;
  const std::string what = fmt::format("LeaveGroup of member {} of group {}", m.member, m.group);
  const std::string body = roundTrip(hostPort, leaveGroupRequest(m, kCorrelation), kCorrelation, timeout, what);
  // Flexible versions (4+) add tagged fields to the response header; from version 1 on, the body starts
  // with throttle_time_ms; then the error code.
  Reader r(body);
  if (m.leaveVersion >= 4) r.skipTags();
  if (m.leaveVersion >= 1) r.int32();
  const int16_t code = r.int16();
  if (r.failed()) throw std::runtime_error(fmt::format("{} to {}: a response of {} bytes", what, hostPort, body.size()));
  return code;
}

bool KafkaAdmin::commitAs(const std::string& hostPort, const Membership& m, const std::string& topic,
                          const std::map<int, int64_t>& offsets, std::chrono::milliseconds timeout) {
  constexpr int32_t kCorrelation = 0x1dE1;
  constexpr int16_t kVersion = 2; // classic; every broker and the mock (≤ 7) take it
  const std::string what = fmt::format("OffsetCommit of group {} as member {}", m.group, m.member);
  Writer w;
  w.int16(api::kOffsetCommit);
  w.int16(kVersion);
  w.int32(kCorrelation);
  w.string(std::string_view(m.clientId), false);
  w.string(std::string_view(m.group), false);
  w.int32(m.generation);
  w.string(std::string_view(m.member), false);
  w.int64(-1); // retention_time_ms: the broker's default
  w.arrayCount(1, false);
  w.string(std::string_view(topic), false);
  w.arrayCount(offsets.size(), false);
  for (const auto& [p, offset] : offsets) {
    w.int32(p);
    w.int64(offset);
    w.string(std::string_view(""), false); // metadata
  }
  const std::string body = roundTrip(hostPort, framed(w.out), kCorrelation, timeout, what);
  Reader r(body);
  std::vector<std::string> errors;
  size_t answered = 0, rebalancing = 0;
  for (size_t t = r.arrayCount(false).value_or(0); t > 0 && !r.failed(); --t) {
    const std::string name(r.string(false).value_or(""));
    for (size_t n = r.arrayCount(false).value_or(0); n > 0 && !r.failed(); --n) {
      const int32_t p = r.int32();
      const int16_t code = r.int16();
      ++answered;
      if (code == kRebalanceInProgress) ++rebalancing;
      if (code != 0 && !r.failed()) errors.push_back(fmt::format("{}-{}: {}", name, p, errorName(code)));
    }
  }
  if (r.failed() || answered != offsets.size())
    throw std::runtime_error(fmt::format("{} to {}: a response that does not answer every partition", what, hostPort));
  if (answered > 0 && rebalancing == answered) return false;
  if (!errors.empty()) {
    std::string all;
    for (const auto& e : errors) all += (all.empty() ? "" : ", ") + e;
    throw std::runtime_error(fmt::format("{} to {}: {}", what, hostPort, all));
  }
  return true;
}

} // namespace idem::kafka::client
