#include "brokers/kafka/api.h"

#include <array>
#include <cctype>

namespace idem::kafka {
namespace {

struct Row {
  const char* name;
  int16_t flexibleFrom;
};

/// Every API key of Kafka 3.9 by number, with the first flexible version of its request and response
/// (the two agree for every key).
constexpr std::array<Row, 88> kNames = {{
    {"Produce", 9}, {"Fetch", 12}, {"ListOffsets", 6}, {"Metadata", 9}, {"LeaderAndIsr", 4},
    {"StopReplica", 2}, {"UpdateMetadata", 6}, {"ControlledShutdown", 3}, {"OffsetCommit", 8},
    {"OffsetFetch", 6}, {"FindCoordinator", 3}, {"JoinGroup", 6}, {"Heartbeat", 4}, {"LeaveGroup", 4},
    {"SyncGroup", 4}, {"DescribeGroups", 5}, {"ListGroups", 3}, {"SaslHandshake", -1}, {"ApiVersions", 3},
    {"CreateTopics", 5}, {"DeleteTopics", 4}, {"DeleteRecords", 2}, {"InitProducerId", 2},
    {"OffsetForLeaderEpoch", 4}, {"AddPartitionsToTxn", 3}, {"AddOffsetsToTxn", 3}, {"EndTxn", 3},
    {"WriteTxnMarkers", 1}, {"TxnOffsetCommit", 3}, {"DescribeAcls", 2}, {"CreateAcls", 2}, {"DeleteAcls", 2},
    {"DescribeConfigs", 4}, {"AlterConfigs", 2}, {"AlterReplicaLogDirs", 2}, {"DescribeLogDirs", 2},
    {"SaslAuthenticate", 2}, {"CreatePartitions", 2}, {"CreateDelegationToken", 2},
    {"RenewDelegationToken", 2}, {"ExpireDelegationToken", 2}, {"DescribeDelegationToken", 2},
    {"DeleteGroups", 2}, {"ElectLeaders", 2}, {"IncrementalAlterConfigs", 1},
    {"AlterPartitionReassignments", 0}, {"ListPartitionReassignments", 0}, {"OffsetDelete", -1},
    {"DescribeClientQuotas", 1}, {"AlterClientQuotas", 1}, {"DescribeUserScramCredentials", 0},
    {"AlterUserScramCredentials", 0}, {"Vote", 0}, {"BeginQuorumEpoch", 1}, {"EndQuorumEpoch", 1},
    {"DescribeQuorum", 0}, {"AlterPartition", 0}, {"UpdateFeatures", 0}, {"Envelope", 0}, {"FetchSnapshot", 0},
    {"DescribeCluster", 0}, {"DescribeProducers", 0}, {"BrokerRegistration", 0}, {"BrokerHeartbeat", 0},
    {"UnregisterBroker", 0}, {"DescribeTransactions", 0}, {"ListTransactions", 0}, {"AllocateProducerIds", 0},
    {"ConsumerGroupHeartbeat", 0}, {"ConsumerGroupDescribe", 0}, {"ControllerRegistration", 0},
    {"GetTelemetrySubscriptions", 0}, {"PushTelemetry", 0}, {"AssignReplicasToDirs", 0},
    {"ListClientMetricsResources", 0}, {"DescribeTopicPartitions", 0}, {"ShareGroupHeartbeat", 0},
    {"ShareGroupDescribe", 0}, {"ShareFetch", 0}, {"ShareAcknowledge", 0}, {"AddRaftVoter", 0},
    {"RemoveRaftVoter", 0}, {"UpdateRaftVoter", 0}, {"InitializeShareGroupState", 0},
    {"ReadShareGroupState", 0}, {"WriteShareGroupState", 0}, {"DeleteShareGroupState", 0},
    {"ReadShareGroupStateSummary", 0},
}};

/// The keys the tracker decodes: their verb (when it is not the name in upper snake case), role, the
/// highest version it decodes, and whether the broker may hold the response.
struct Decoded {
  int16_t key;
  const char* verb;
  ApiRole role;
  int16_t maxVersion;
  bool blocking;
};

constexpr Decoded kDecoded[] = {
    {api::kProduce, "PRODUCE", ApiRole::Step, 11, false},
    {api::kFetch, "FETCH", ApiRole::Step, 17, true},
    {api::kListOffsets, "LIST_OFFSETS", ApiRole::Step, 10, false},
    {api::kMetadata, "METADATA", ApiRole::SetUp, 12, false},
    {api::kOffsetCommit, "COMMIT_OFFSET", ApiRole::Step, 9, false},
    {api::kOffsetFetch, "OFFSET_FETCH", ApiRole::Step, 9, false},
    {api::kFindCoordinator, "FIND_COORDINATOR", ApiRole::SetUp, 6, false},
    {api::kJoinGroup, "JOIN_GROUP", ApiRole::Step, 9, true},
    {api::kHeartbeat, "HEARTBEAT", ApiRole::Step, 4, false},
    {api::kLeaveGroup, "LEAVE_GROUP", ApiRole::Step, 5, false},
    {api::kSyncGroup, "SYNC_GROUP", ApiRole::Step, 5, true},
    {api::kApiVersions, "API_VERSIONS", ApiRole::SetUp, 4, false},
    {api::kInitProducerId, "INIT_PRODUCER_ID", ApiRole::Step, 5, false},
    {api::kAddPartitionsToTxn, "ADD_PARTITIONS_TO_TXN", ApiRole::Step, 5, false},
    {api::kAddOffsetsToTxn, "ADD_OFFSETS_TO_TXN", ApiRole::Step, 4, false},
    {api::kEndTxn, "END_TXN", ApiRole::Step, 5, false},
    {api::kTxnOffsetCommit, "TXN_OFFSET_COMMIT", ApiRole::Step, 4, false},
    {api::kShareFetch, "SHARE_FETCH", ApiRole::Opaque, -1, true},
};

/// "OffsetCommit" -> "OFFSET_COMMIT".
std::string upperSnake(const char* name) {
  std::string out;
  for (const char* p = name; *p; ++p) {
    if (p != name && std::isupper(static_cast<unsigned char>(*p)))
      out += '_';
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(*p)));
  }
  return out;
}

} // namespace

ApiInfo apiInfo(int16_t key) {
  ApiInfo a;
  a.key = key;
  if (key < 0 || static_cast<size_t>(key) >= kNames.size())
    return a;
  a.name = kNames[static_cast<size_t>(key)].name;
  a.flexibleFrom = kNames[static_cast<size_t>(key)].flexibleFrom;
  for (const Decoded& d : kDecoded) {
    if (d.key != key)
      continue;
    a.verb = d.verb;
    a.role = d.role;
    a.maxVersion = d.maxVersion;
    a.blocking = d.blocking;
  }
  return a;
}

std::string apiVerb(int16_t key) {
  const ApiInfo a = apiInfo(key);
  if (a.verb)
    return a.verb;
  return a.name ? upperSnake(a.name) : "API_" + std::to_string(key);
}

int requestHeaderVersion(const ApiInfo& a, int16_t version) {
  if (a.key == 7 && version == 0)
    return 0;
  return isFlexible(a, version) ? 2 : 1;
}

int responseHeaderVersion(const ApiInfo& a, int16_t version) {
  if (a.key == api::kApiVersions)
    return 0;
  return isFlexible(a, version) ? 1 : 0;
}

} // namespace idem::kafka
