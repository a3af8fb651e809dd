// The reply of each decoded response: its error, its summary and, for a Fetch, what it delivered.
#include "brokers/kafka/messages.h"

#include "brokers/kafka/api.h"
#include "brokers/kafka/errors.h"
#include "proxy/abbrev.h"

#include <algorithm>

namespace idem::kafka {
namespace {

/// ConsumerProtocolAssignment (classic encoding, versions 0-3 alike for what is read here): the
/// partitions a SyncGroup gave the member.
constexpr Field kAssignedTopic[] = {{Ty::String, 0, kAny, Role::Topic, -1, {}},
                                    {Ty::Int32Array, 0, kAny, Role::Partition, -1, {}}};
constexpr Field kAssignment[] = {{Ty::Array, 0, kAny, Role::Topics, -1, kAssignedTopic},
                                 {Ty::Bytes, 0, kAny, Role::None, -1, {}}};

/// "topic-0 topic-1", or nullopt when the bytes are not a consumer protocol assignment.
std::optional<std::string> assignedPartitions(std::string_view bytes, TopicNames& names) {
  if (bytes.size() < 2)
    return bytes.empty() ? std::optional<std::string>("nothing") : std::nullopt;
  Reader r(bytes);
  const int16_t version = r.int16();
  Collector c(names);
  if (version < 0 || !walk(r.rest(), kAssignment, version, false, c))
    return std::nullopt;
  std::string out;
  for (const auto& i : c.items)
    out += (out.empty() ? "" : " ") + c.display(i.tp);
  return out.empty() ? "nothing" : out;
}

std::string errorsText(const Collector& c) {
  std::string out;
  for (const auto& [where, code] : c.errors)
    out += (out.empty() ? "" : "; ") + (where.empty() ? "" : where + ": ") + errorName(code);
  return out;
}

std::string positions(const Collector& c) {
  std::string out;
  for (const auto& i : c.items)
    if (i.offset)
      out += (out.empty() ? "" : " ") + positionId(c.display(i.tp.topic), i.tp.partition, *i.offset);
  return out;
}

/// A Fetch: the deliverable records of every partition, in the response's order.
void deliveries(const Collector& c, const std::map<TopicPartition, int64_t>& pos, ResponseFacts& out) {
  for (const auto& i : c.items) {
    if (!i.records || i.error != 0)
      continue;
    const RecordSet set = decodeRecords(*i.records);
    if (!set.undecoded.empty() && out.undecoded.empty())
      out.undecoded = set.undecoded + " in " + c.display(i.tp);
    const auto at = pos.find(i.tp);
    for (Record& r : deliverable(set, at == pos.end() ? 0 : at->second, i.aborted))
      out.deliveries.push_back(Delivery{c.display(i.tp.topic), i.tp.partition, std::move(r)});
  }
}

std::string fetchSummary(const ResponseFacts& f) {
  const size_t n = f.deliveries.size();
  if (n == 0)
    return "no records";
  std::string out = std::to_string(n) + (n == 1 ? " record:" : " records:");
  for (const auto& d : f.deliveries)
    out += " " + positionId(d.topic, d.partition, d.record.offset);
  return out;
}

} // namespace

bool readResponse(int16_t key, int16_t version, std::string_view body,
                  const std::map<TopicPartition, int64_t>& pos, TopicNames& names, ResponseFacts& out) {
  const ApiInfo a = apiInfo(key);
  Collector c(names);
  if (!walk(body, responseSchema(key), version, isFlexible(a, version), c))
    return false;
  out = ResponseFacts{};
  proxy::ReplyInfo& r = out.reply;
  r.error = !c.errors.empty();
  // Errors a coordinator answers while its group's membership changes: every one of the answer's.
  r.transient = r.error && std::all_of(c.errors.begin(), c.errors.end(), [](const auto& e) {
    return e.second == 14 || e.second == 15 || e.second == 16 || e.second == 22 || e.second == 25 ||
           e.second == 27 || e.second == 82;
  }); // COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
      // REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID
  std::string summary;
  switch (key) {
  case api::kFetch:
    deliveries(c, pos, out);
    summary = fetchSummary(out);
    r.empty_read = out.deliveries.empty() && !r.error;
    for (const auto& d : out.deliveries)
      r.delivered.push_back(entryOf(d));
    break;
  case api::kJoinGroup:
    if (!r.error) {
      out.member = c.member;
      out.generation = c.generation;
    }
    summary = "generation " + std::to_string(c.generation.value_or(-1)) + ", member " + c.member.value_or("") +
              (c.leader && c.member && *c.leader == *c.member ? " (leader)" : "");
    break;
  case api::kSyncGroup:
    if (c.assignment)
      summary = "assigned " + assignedPartitions(*c.assignment, names).value_or(
                                  std::to_string(c.assignment->size()) + " bytes");
    break;
  case api::kOffsetFetch: case api::kListOffsets: case api::kProduce:
    summary = positions(c);
    break;
  case api::kInitProducerId:
    summary = "producer id " + std::to_string(c.producerId.value_or(-1));
    break;
  default:
    break;
  }
  if (r.error)
    summary = summary.empty() ? errorsText(c) : errorsText(c) + "; " + summary;
  r.summary = proxy::abbreviate(summary.empty() ? "ok" : summary);
  return true;
}

} // namespace idem::kafka
