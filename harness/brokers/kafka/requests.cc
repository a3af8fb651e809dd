// The step detail of each decoded request, and what the tracker must remember of it.
#include "brokers/kafka/messages.h"

#include "brokers/kafka/api.h"
#include "brokers/kafka/delivery.h"
#include "proxy/abbrev.h"

namespace idem::kafka {
namespace {

/// "group g generation 3 member m" from what the request carries.
std::string groupPart(const Collector& c) {
  std::string out;
  if (c.txnId) out += " transactional id " + *c.txnId;
  if (c.group) out += " group " + *c.group;
  if (c.generation) out += " generation " + std::to_string(*c.generation);
  if (c.member) out += " member " + (c.member->empty() ? std::string("\"\"") : *c.member);
  return out;
}

std::string listOf(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts)
    out += (out.empty() ? "" : " ") + p;
  return out;
}

std::string listOffsetsTarget(int64_t ts) {
  return ts == -1 ? "latest" : ts == -2 ? "earliest" : "time " + std::to_string(ts);
}

} // namespace

bool readRequest(int16_t key, int16_t version, std::string_view body, TopicNames& names, RequestFacts& out) {
  const ApiInfo a = apiInfo(key);
  Collector c(names);
  if (!walk(body, requestSchema(key), version, isFlexible(a, version), c))
    return false;
  out = RequestFacts{};
  out.group = c.group;
  out.member = c.member;
  out.generation = c.generation;
  out.txnId = c.txnId;
  std::vector<std::string> parts;
  std::string head = std::string(a.name) + " v" + std::to_string(version) + groupPart(c);
  switch (key) {
  case api::kFetch:
    head += " max wait " + std::to_string(c.maxWait.value_or(0)) + " ms";
    out.blocking = c.maxWait.value_or(0) > 0;
    // librdkafka's mock cluster answers a Fetch at its max wait, not when a record arrives meanwhile.
    out.waitMs = c.maxWait.value_or(0);
    for (const auto& i : c.items) {
      if (i.forgotten) {
        out.forgotten.push_back(i.tp);
        parts.push_back("-" + c.display(i.tp));
      } else {
        out.fetchOffsets[i.tp] = i.offset.value_or(0);
        parts.push_back(positionId(c.display(i.tp.topic), i.tp.partition, i.offset.value_or(0)));
      }
    }
    break;
  case api::kOffsetCommit: case api::kTxnOffsetCommit:
    for (const auto& i : c.items) {
      out.committed.push_back(positionId(c.display(i.tp.topic), i.tp.partition, i.offset.value_or(-1)));
      parts.push_back(out.committed.back());
    }
    break;
  case api::kProduce:
    head += " acks " + std::to_string(c.acks.value_or(-1));
    out.noResponse = c.acks.value_or(-1) == 0;
    for (const auto& i : c.items) {
      const size_t n = i.records ? decodeRecords(*i.records).records.size() : 0;
      parts.push_back(c.display(i.tp) + " (" + std::to_string(n) + (n == 1 ? " record)" : " records)"));
    }
    break;
  case api::kListOffsets:
    for (const auto& i : c.items)
      parts.push_back(c.display(i.tp) + " " + listOffsetsTarget(i.timestamp.value_or(-1)));
    break;
  case api::kJoinGroup:
    out.blocking = true;
    head += " protocols";
    parts = c.protocols;
    break;
  case api::kSyncGroup:
    out.blocking = true;
    break;
  case api::kEndTxn:
    out.endCommits = c.committed.value_or(0) != 0;
    head += out.endCommits ? " commit" : " abort";
    break;
  default: // OffsetFetch, AddPartitionsToTxn: the partitions named; the rest: the group part
    for (const auto& i : c.items)
      parts.push_back(c.display(i.tp));
    break;
  }
  out.detail = proxy::abbreviate(parts.empty() ? head : head + ": " + listOf(parts));
  return true;
}

} // namespace idem::kafka
