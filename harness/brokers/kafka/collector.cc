#include "brokers/kafka/collector.h"

#include "brokers/kafka/errors.h"

namespace idem::kafka {

std::string topicOfId(const TopicNames& names, std::string_view id) {
  const auto it = names.find(std::string(id));
  if (it != names.end())
    return it->second;
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : id) {
    hex += digits[c >> 4];
    hex += digits[c & 15];
  }
  return hex;
}

std::string topicKeyOfId(std::string_view id) { return '\x01' + std::string(id); }

std::string displayTopic(const TopicNames& names, const std::string& key) {
  if (key.size() == 17 && key[0] == '\x01')
    return topicOfId(names, std::string_view(key).substr(1));
  return key;
}

void Collector::enter(Role array) {
  switch (array) {
  case Role::Topics:
    topic_.clear();
    topicId_.clear();
    name_.clear();
    break;
  case Role::Partitions:
    inPartition_ = true;
    items.push_back(PartitionItem{{topic_, 0}, {}, {}, 0, {}, false, {}, inForgotten_});
    break;
  case Role::Forgotten:
    inForgotten_ = true;
    topic_.clear();
    break;
  case Role::Brokers: case Role::Coordinators:
    inNode_ = true;
    nodes.emplace_back();
    break;
  default:
    break;
  }
}

void Collector::leave(Role array) {
  switch (array) {
  case Role::Partitions: inPartition_ = false; break;
  case Role::Forgotten: inForgotten_ = false; break;
  case Role::Brokers: case Role::Coordinators: inNode_ = false; break;
  default: break;
  }
}

PartitionItem& Collector::item() {
  if (items.empty())
    items.emplace_back();
  return items.back();
}

void Collector::value(Role role, int64_t v) {
  switch (role) {
  case Role::Partition:
    if (inPartition_) {
      item().tp.partition = static_cast<int32_t>(v);
    } else { // an element of an int32 array of partition indexes
      items.push_back(PartitionItem{{topic_, static_cast<int32_t>(v)}, {}, {}, 0, {}, false, {}, inForgotten_});
    }
    break;
  case Role::Offset:
    if (inPartition_) item().offset = v;
    break;
  case Role::HighWatermark: break;
  case Role::Timestamp: if (inPartition_) item().timestamp = v; break;
  case Role::ErrorCode:
    if (v == 0) break;
    if (inPartition_) {
      item().error = static_cast<int16_t>(v);
      errors.emplace_back(display(item().tp), static_cast<int16_t>(v));
    } else {
      errors.emplace_back("", static_cast<int16_t>(v));
    }
    break;
  case Role::NodeId: if (inNode_) nodes.back().id = static_cast<int32_t>(v); else nodes.push_back(Node{static_cast<int32_t>(v), "", 0}); break;
  case Role::Port: if (!nodes.empty()) nodes.back().port = static_cast<int32_t>(v); break;
  case Role::Generation: generation = v; break;
  case Role::MaxWait: maxWait = v; break;
  case Role::Acks: acks = v; break;
  case Role::ProducerId: producerId = v; break;
  case Role::Committed: committed = v; break;
  case Role::ApiKey: apiKey_ = static_cast<int16_t>(v); break;
  case Role::MaxVersion: maxVersions[apiKey_] = static_cast<int16_t>(v); break;
  case Role::AbortedProducer: item().aborted.push_back(AbortedTxn{v, 0}); break;
  case Role::AbortedFirstOffset: if (!item().aborted.empty()) item().aborted.back().firstOffset = v; break;
  default: break;
  }
}

void Collector::text(Role role, std::optional<std::string_view> v) {
  const std::string s(v.value_or(""));
  switch (role) {
  case Role::Topic:
    topic_ = name_ = s;
    break;
  case Role::TopicId:
    topicId_ = s;
    if (!name_.empty()) // Metadata: the name, then its id
      names_[topicId_] = name_;
    else
      topic_ = topicKeyOfId(s);
    break;
  case Role::Records:
    item().records = v;
    item().hasRecords = v.has_value();
    break;
  case Role::Host: if (!nodes.empty()) nodes.back().host = s; break;
  case Role::Group: group = s; break;
  case Role::Member: if (!member) member = s; break;
  case Role::Leader: leader = s; break;
  case Role::TxnId: if (v) txnId = s; break;
  case Role::ProtocolName: if (v) protocols.push_back(s); break;
  case Role::Assignment: assignment = v; break;
  default: break;
  }
}

} // namespace idem::kafka
