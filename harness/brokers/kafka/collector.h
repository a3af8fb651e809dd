#pragma once
/// Private to the tracker: a Visitor that gathers what a request or response says into one bag — the
/// group-level values and, per partition, its offset, error, records and aborted transactions — whatever
/// the API key, since the layouts of schema.cc give every field its role.
#include "brokers/kafka/records.h"
#include "brokers/kafka/walk.h"

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace idem::kafka {

struct TopicPartition {
  std::string topic;
  int32_t partition = 0;
  friend auto operator<=>(const TopicPartition&, const TopicPartition&) = default;
};

/// Topic ids (16 raw bytes) to names, learnt from Metadata responses: Fetch v13+ names topics by id.
using TopicNames = std::map<std::string, std::string>;

/// The name of a topic id: from `names`, else its hex.
std::string topicOfId(const TopicNames& names, std::string_view id);

/// A topic as messages key it: its name, or for one named by id (Fetch v13+) '\x01' and the 16 raw bytes
/// (no topic name holds that byte), so that a Fetch's positions and its answer's records meet whether or
/// not the name was learnt in between.
std::string topicKeyOfId(std::string_view id);
/// How a topic key reads in details, summaries and entry ids: the name (learnt, for an id), else the
/// id's hex.
std::string displayTopic(const TopicNames& names, const std::string& key);

/// One partition as a message lists it.
struct PartitionItem {
  TopicPartition tp; ///< tp.topic: a topic key
  std::optional<int64_t> offset;    ///< committed, fetch, listed or base offset
  std::optional<int64_t> timestamp; ///< ListOffsets request: -1 latest, -2 earliest
  int16_t error = 0;
  std::optional<std::string_view> records;
  bool hasRecords = false;
  std::vector<AbortedTxn> aborted;
  bool forgotten = false;           ///< Fetch: in the forgotten-topics list of an incremental fetch
};

struct Node {
  int32_t id = -1;
  std::string host;
  int32_t port = 0;
};

class Collector final : public Visitor {
public:
  explicit Collector(TopicNames& names) : names_(names) {}

  std::vector<PartitionItem> items;
  std::vector<std::pair<std::string, int16_t>> errors; ///< every non-zero error code, with where ("" top level)
  std::optional<std::string> group, member, leader, txnId;
  std::optional<int64_t> generation, maxWait, acks, producerId, committed;
  std::vector<std::string> protocols;
  std::optional<std::string_view> assignment;
  std::vector<Node> nodes;     ///< brokers and coordinators listed
  std::map<int16_t, int16_t> maxVersions; ///< ApiVersions: each key's highest version

  void enter(Role array) override;
  void leave(Role array) override;
  void value(Role role, int64_t v) override;
  void text(Role role, std::optional<std::string_view> v) override;

  /// displayTopic() with what the connection knows.
  std::string display(const std::string& key) const { return displayTopic(names_, key); }
  /// "topic-3" as displayed.
  std::string display(const TopicPartition& tp) const { return display(tp.topic) + "-" + std::to_string(tp.partition); }

private:
  PartitionItem& item();
  TopicNames& names_;
  std::string topic_;
  std::string topicId_;  ///< raw, for Metadata's id -> name
  std::string name_;     ///< the current topic's name as the message gives it (Metadata)
  bool inPartition_ = false, inForgotten_ = false, inNode_ = false;
  int16_t apiKey_ = -1;
  int16_t topError_ = 0;
};

} // namespace idem::kafka
