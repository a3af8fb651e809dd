// Transcribed from Apache Kafka's message specs (3.9). Field names are the specs' own, in comments where
// the role does not say it; fields a consumer's tracker never reads keep Role::None.
#include "brokers/kafka/schema.h"

#include "brokers/kafka/api.h"

namespace idem::kafka {
namespace {

using enum Ty;
using R = Role;

constexpr Field f(Ty t, int from = 0, int to = kAny, Role r = R::None) {
  return Field{t, static_cast<int8_t>(from), static_cast<int8_t>(to), r, -1, {}};
}
constexpr Field arr(std::span<const Field> sub, int from = 0, int to = kAny, Role r = R::None) {
  return Field{Array, static_cast<int8_t>(from), static_cast<int8_t>(to), r, -1, sub};
}
/// A tagged field: present only in flexible versions from `from`, found by `tag`.
constexpr Field tagged(int tag, Field x) {
  x.tag = static_cast<int8_t>(tag);
  return x;
}
constexpr Field strct(std::span<const Field> sub, int from = 0, int to = kAny) {
  return Field{Struct, static_cast<int8_t>(from), static_cast<int8_t>(to), R::None, -1, sub};
}

// --- shared pieces
constexpr Field kLeaderIdAndEpoch[] = {f(Int32), f(Int32)};
constexpr Field kNodeEndpoints[] = {f(Int32, 0, kAny, R::NodeId), f(String, 0, kAny, R::Host),
                                    f(Int32, 0, kAny, R::Port), f(String) /* Rack */};

// --- Produce (0)
constexpr Field kProduceReqPartition[] = {f(Int32, 0, kAny, R::Partition), f(Records, 0, kAny, R::Records)};
constexpr Field kProduceReqTopic[] = {f(String, 0, kAny, R::Topic), arr(kProduceReqPartition, 0, kAny, R::Partitions)};
constexpr Field kProduceReq[] = {f(String, 3, kAny, R::TxnId), f(Int16, 0, kAny, R::Acks), f(Int32) /* TimeoutMs */,
                                 arr(kProduceReqTopic, 0, kAny, R::Topics)};
constexpr Field kRecordError[] = {f(Int32), f(String)};
constexpr Field kProduceRespPartition[] = {
    f(Int32, 0, kAny, R::Partition), f(Int16, 0, kAny, R::ErrorCode), f(Int64, 0, kAny, R::Offset),
    f(Int64, 2) /* LogAppendTimeMs */, f(Int64, 5) /* LogStartOffset */, arr(kRecordError, 8),
    f(String, 8) /* ErrorMessage */, tagged(0, strct(kLeaderIdAndEpoch, 10))};
constexpr Field kProduceRespTopic[] = {f(String, 0, kAny, R::Topic), arr(kProduceRespPartition, 0, kAny, R::Partitions)};
constexpr Field kProduceResp[] = {arr(kProduceRespTopic, 0, kAny, R::Topics), f(Int32, 1) /* ThrottleTimeMs */,
                                  tagged(0, arr(kNodeEndpoints, 10, kAny, R::Brokers))};

// --- Fetch (1)
constexpr Field kReplicaState[] = {f(Int32), f(Int64)};
constexpr Field kFetchReqPartition[] = {
    f(Int32, 0, kAny, R::Partition), f(Int32, 9) /* CurrentLeaderEpoch */, f(Int64, 0, kAny, R::Offset),
    f(Int32, 12) /* LastFetchedEpoch */, f(Int64, 5) /* LogStartOffset */, f(Int32) /* PartitionMaxBytes */,
    tagged(0, f(Uuid, 17)) /* ReplicaDirectoryId */};
constexpr Field kFetchReqTopic[] = {f(String, 0, 12, R::Topic), f(Uuid, 13, kAny, R::TopicId),
                                    arr(kFetchReqPartition, 0, kAny, R::Partitions)};
constexpr Field kForgotten[] = {f(String, 7, 12, R::Topic), f(Uuid, 13, kAny, R::TopicId),
                                f(Int32Array, 7, kAny, R::Partition)};
constexpr Field kFetchReq[] = {
    tagged(0, f(String, 12)) /* ClusterId */, f(Int32, 0, 14) /* ReplicaId */, tagged(1, strct(kReplicaState, 15)),
    f(Int32, 0, kAny, R::MaxWait), f(Int32) /* MinBytes */, f(Int32, 3) /* MaxBytes */, f(Int8, 4) /* IsolationLevel */,
    f(Int32, 7) /* SessionId */, f(Int32, 7) /* SessionEpoch */, arr(kFetchReqTopic, 0, kAny, R::Topics),
    arr(kForgotten, 7, kAny, R::Forgotten), f(String, 11) /* RackId */};
constexpr Field kEpochEndOffset[] = {f(Int32), f(Int64)};
constexpr Field kSnapshotId[] = {f(Int64), f(Int32)};
constexpr Field kAbortedTxn[] = {f(Int64, 4, kAny, R::AbortedProducer), f(Int64, 4, kAny, R::AbortedFirstOffset)};
constexpr Field kFetchRespPartition[] = {
    f(Int32, 0, kAny, R::Partition), f(Int16, 0, kAny, R::ErrorCode), f(Int64, 0, kAny, R::HighWatermark),
    f(Int64, 4) /* LastStableOffset */, f(Int64, 5) /* LogStartOffset */,
    tagged(0, strct(kEpochEndOffset, 12)) /* DivergingEpoch */, tagged(1, strct(kLeaderIdAndEpoch, 12)),
    tagged(2, strct(kSnapshotId, 12)), arr(kAbortedTxn, 4, kAny, R::Aborted), f(Int32, 11) /* PreferredReadReplica */,
    f(Records, 0, kAny, R::Records)};
constexpr Field kFetchRespTopic[] = {f(String, 0, 12, R::Topic), f(Uuid, 13, kAny, R::TopicId),
                                     arr(kFetchRespPartition, 0, kAny, R::Partitions)};
constexpr Field kFetchResp[] = {f(Int32, 1) /* ThrottleTimeMs */, f(Int16, 7, kAny, R::ErrorCode),
                                f(Int32, 7) /* SessionId */, arr(kFetchRespTopic, 0, kAny, R::Topics),
                                tagged(0, arr(kNodeEndpoints, 16, kAny, R::Brokers))};

// --- ListOffsets (2)
constexpr Field kListOffsetsReqPartition[] = {f(Int32, 0, kAny, R::Partition), f(Int32, 4) /* CurrentLeaderEpoch */,
                                              f(Int64, 0, kAny, R::Timestamp), f(Int32, 0, 0) /* MaxNumOffsets */};
constexpr Field kListOffsetsReqTopic[] = {f(String, 0, kAny, R::Topic),
                                          arr(kListOffsetsReqPartition, 0, kAny, R::Partitions)};
constexpr Field kListOffsetsReq[] = {f(Int32) /* ReplicaId */, f(Int8, 2) /* IsolationLevel */,
                                     arr(kListOffsetsReqTopic, 0, kAny, R::Topics), f(Int32, 10) /* TimeoutMs */};
constexpr Field kListOffsetsRespPartition[] = {
    f(Int32, 0, kAny, R::Partition), f(Int16, 0, kAny, R::ErrorCode), f(Int64Array, 0, 0, R::Offset),
    f(Int64, 1) /* Timestamp */, f(Int64, 1, kAny, R::Offset), f(Int32, 4) /* LeaderEpoch */};
constexpr Field kListOffsetsRespTopic[] = {f(String, 0, kAny, R::Topic),
                                           arr(kListOffsetsRespPartition, 0, kAny, R::Partitions)};
constexpr Field kListOffsetsResp[] = {f(Int32, 2) /* ThrottleTimeMs */, arr(kListOffsetsRespTopic, 0, kAny, R::Topics)};

// --- Metadata (3): the response only (the request is set-up, forwarded undecoded)
constexpr Field kMetadataBroker[] = {f(Int32, 0, kAny, R::NodeId), f(String, 0, kAny, R::Host),
                                     f(Int32, 0, kAny, R::Port), f(String, 1) /* Rack */};
constexpr Field kMetadataPartition[] = {
    f(Int16) /* ErrorCode */, f(Int32, 0, kAny, R::Partition), f(Int32) /* LeaderId */, f(Int32, 7) /* LeaderEpoch */,
    f(Int32Array) /* ReplicaNodes */, f(Int32Array) /* IsrNodes */, f(Int32Array, 5) /* OfflineReplicas */};
constexpr Field kMetadataTopic[] = {f(Int16, 0, kAny, R::ErrorCode), f(String, 0, kAny, R::Topic),
                                    f(Uuid, 10, kAny, R::TopicId), f(Bool, 1) /* IsInternal */,
                                    arr(kMetadataPartition, 0, kAny, R::Partitions),
                                    f(Int32, 8) /* TopicAuthorizedOperations */};
constexpr Field kMetadataResp[] = {f(Int32, 3) /* ThrottleTimeMs */, arr(kMetadataBroker, 0, kAny, R::Brokers),
                                   f(String, 2) /* ClusterId */, f(Int32, 1) /* ControllerId */,
                                   arr(kMetadataTopic, 0, kAny, R::Topics), f(Int32, 8, 10) /* ClusterAuthorizedOperations */};

// --- OffsetCommit (8)
constexpr Field kOffsetCommitReqPartition[] = {
    f(Int32, 0, kAny, R::Partition), f(Int64, 0, kAny, R::Offset), f(Int32, 6) /* CommittedLeaderEpoch */,
    f(Int64, 1, 1) /* CommitTimestamp */, f(String) /* CommittedMetadata */};
constexpr Field kOffsetCommitReqTopic[] = {f(String, 0, kAny, R::Topic),
                                           arr(kOffsetCommitReqPartition, 0, kAny, R::Partitions)};
constexpr Field kOffsetCommitReq[] = {
    f(String, 0, kAny, R::Group), f(Int32, 1, kAny, R::Generation), f(String, 1, kAny, R::Member),
    f(String, 7) /* GroupInstanceId */, f(Int64, 2, 4) /* RetentionTimeMs */, arr(kOffsetCommitReqTopic, 0, kAny, R::Topics)};
constexpr Field kPartitionError[] = {f(Int32, 0, kAny, R::Partition), f(Int16, 0, kAny, R::ErrorCode)};
constexpr Field kOffsetCommitRespTopic[] = {f(String, 0, kAny, R::Topic), arr(kPartitionError, 0, kAny, R::Partitions)};
constexpr Field kOffsetCommitResp[] = {f(Int32, 3) /* ThrottleTimeMs */, arr(kOffsetCommitRespTopic, 0, kAny, R::Topics)};

// --- OffsetFetch (9)
constexpr Field kOffsetFetchReqTopic[] = {f(String, 0, kAny, R::Topic), f(Int32Array, 0, kAny, R::Partition)};
constexpr Field kOffsetFetchReqGroup[] = {f(String, 8, kAny, R::Group), f(String, 9, kAny, R::Member),
                                          f(Int32, 9, kAny, R::Generation), arr(kOffsetFetchReqTopic, 8, kAny, R::Topics)};
constexpr Field kOffsetFetchReq[] = {f(String, 0, 7, R::Group), arr(kOffsetFetchReqTopic, 0, 7, R::Topics),
                                     arr(kOffsetFetchReqGroup, 8, kAny, R::Groups), f(Bool, 7) /* RequireStable */};
constexpr Field kOffsetFetchRespPartition[] = {
    f(Int32, 0, kAny, R::Partition), f(Int64, 0, kAny, R::Offset), f(Int32, 5, kAny) /* CommittedLeaderEpoch */,
    f(String) /* Metadata */, f(Int16, 0, kAny, R::ErrorCode)};
constexpr Field kOffsetFetchRespTopic[] = {f(String, 0, kAny, R::Topic),
                                           arr(kOffsetFetchRespPartition, 0, kAny, R::Partitions)};
constexpr Field kOffsetFetchRespGroup[] = {f(String, 8, kAny, R::Group), arr(kOffsetFetchRespTopic, 8, kAny, R::Topics),
                                           f(Int16, 8, kAny, R::ErrorCode)};
constexpr Field kOffsetFetchResp[] = {f(Int32, 3) /* ThrottleTimeMs */, arr(kOffsetFetchRespTopic, 0, 7, R::Topics),
                                      f(Int16, 2, 7, R::ErrorCode), arr(kOffsetFetchRespGroup, 8, kAny, R::Groups)};

// --- FindCoordinator (10): the response only
constexpr Field kCoordinator[] = {f(String) /* Key */, f(Int32, 0, kAny, R::NodeId), f(String, 0, kAny, R::Host),
                                  f(Int32, 0, kAny, R::Port), f(Int16, 0, kAny, R::ErrorCode), f(String) /* ErrorMessage */};
constexpr Field kFindCoordinatorResp[] = {
    f(Int32, 1) /* ThrottleTimeMs */, f(Int16, 0, 3, R::ErrorCode), f(String, 1, 3) /* ErrorMessage */,
    f(Int32, 0, 3, R::NodeId), f(String, 0, 3, R::Host), f(Int32, 0, 3, R::Port),
    arr(kCoordinator, 4, kAny, R::Coordinators)};

// --- JoinGroup (11)
constexpr Field kJoinProtocol[] = {f(String, 0, kAny, R::ProtocolName), f(Bytes) /* Metadata */};
constexpr Field kJoinGroupReq[] = {
    f(String, 0, kAny, R::Group), f(Int32) /* SessionTimeoutMs */, f(Int32, 1) /* RebalanceTimeoutMs */,
    f(String, 0, kAny, R::Member), f(String, 5) /* GroupInstanceId */, f(String) /* ProtocolType */,
    arr(kJoinProtocol), f(String, 8) /* Reason */};
constexpr Field kJoinMember[] = {f(String) /* MemberId */, f(String, 5) /* GroupInstanceId */, f(Bytes) /* Metadata */};
constexpr Field kJoinGroupResp[] = {
    f(Int32, 2) /* ThrottleTimeMs */, f(Int16, 0, kAny, R::ErrorCode), f(Int32, 0, kAny, R::Generation),
    f(String, 7) /* ProtocolType */, f(String, 0, kAny, R::ProtocolName), f(String, 0, kAny, R::Leader),
    f(Bool, 9) /* SkipAssignment */, f(String, 0, kAny, R::Member), arr(kJoinMember, 0, kAny, R::Members)};

// --- Heartbeat (12)
constexpr Field kHeartbeatReq[] = {f(String, 0, kAny, R::Group), f(Int32, 0, kAny, R::Generation),
                                   f(String, 0, kAny, R::Member), f(String, 3) /* GroupInstanceId */};
constexpr Field kErrorOnly[] = {f(Int32, 1) /* ThrottleTimeMs */, f(Int16, 0, kAny, R::ErrorCode)};

// --- LeaveGroup (13)
constexpr Field kLeaveMember[] = {f(String, 3, kAny, R::Member), f(String, 3) /* GroupInstanceId */,
                                  f(String, 5) /* Reason */};
constexpr Field kLeaveGroupReq[] = {f(String, 0, kAny, R::Group), f(String, 0, 2, R::Member),
                                    arr(kLeaveMember, 3, kAny, R::Members)};
constexpr Field kLeaveMemberResp[] = {f(String, 3) /* MemberId */, f(String, 3) /* GroupInstanceId */,
                                      f(Int16, 3, kAny, R::ErrorCode)};
constexpr Field kLeaveGroupResp[] = {f(Int32, 1) /* ThrottleTimeMs */, f(Int16, 0, kAny, R::ErrorCode),
                                     arr(kLeaveMemberResp, 3, kAny, R::Members)};

// --- SyncGroup (14)
constexpr Field kSyncAssignment[] = {f(String) /* MemberId */, f(Bytes) /* Assignment */};
constexpr Field kSyncGroupReq[] = {
    f(String, 0, kAny, R::Group), f(Int32, 0, kAny, R::Generation), f(String, 0, kAny, R::Member),
    f(String, 3) /* GroupInstanceId */, f(String, 5) /* ProtocolType */, f(String, 5, kAny, R::ProtocolName),
    arr(kSyncAssignment, 0, kAny, R::Members)};
constexpr Field kSyncGroupResp[] = {f(Int32, 1) /* ThrottleTimeMs */, f(Int16, 0, kAny, R::ErrorCode),
                                    f(String, 5) /* ProtocolType */, f(String, 5, kAny, R::ProtocolName),
                                    f(Bytes, 0, kAny, R::Assignment)};

// --- ApiVersions (18): the response only
constexpr Field kApiVersion[] = {f(Int16, 0, kAny, R::ApiKey), f(Int16) /* MinVersion */, f(Int16, 0, kAny, R::MaxVersion)};
constexpr Field kFeature[] = {f(String), f(Int16), f(Int16)};
constexpr Field kApiVersionsResp[] = {
    f(Int16, 0, kAny, R::ErrorCode), arr(kApiVersion, 0, kAny, R::ApiKeys), f(Int32, 1) /* ThrottleTimeMs */,
    tagged(0, arr(kFeature, 3)) /* SupportedFeatures */, tagged(1, f(Int64, 3)) /* FinalizedFeaturesEpoch */,
    tagged(2, arr(kFeature, 3)) /* FinalizedFeatures */, tagged(3, f(Bool, 3)) /* ZkMigrationReady */};

// --- InitProducerId (22)
constexpr Field kInitProducerIdReq[] = {f(String, 0, kAny, R::TxnId), f(Int32) /* TransactionTimeoutMs */,
                                        f(Int64, 3, kAny, R::ProducerId), f(Int16, 3) /* ProducerEpoch */};
constexpr Field kInitProducerIdResp[] = {f(Int32) /* ThrottleTimeMs */, f(Int16, 0, kAny, R::ErrorCode),
                                         f(Int64, 0, kAny, R::ProducerId), f(Int16) /* ProducerEpoch */};

// --- AddPartitionsToTxn (24)
constexpr Field kTxnTopic[] = {f(String, 0, kAny, R::Topic), f(Int32Array, 0, kAny, R::Partition)};
constexpr Field kTxnTransaction[] = {f(String, 4, kAny, R::TxnId), f(Int64, 4, kAny, R::ProducerId),
                                     f(Int16, 4) /* ProducerEpoch */, f(Bool, 4) /* VerifyOnly */,
                                     arr(kTxnTopic, 4, kAny, R::Topics)};
constexpr Field kAddPartitionsToTxnReq[] = {
    arr(kTxnTransaction, 4, kAny, R::Groups), f(String, 0, 3, R::TxnId), f(Int64, 0, 3, R::ProducerId),
    f(Int16, 0, 3) /* ProducerEpoch */, arr(kTxnTopic, 0, 3, R::Topics)};
constexpr Field kTxnTopicResult[] = {f(String, 0, kAny, R::Topic), arr(kPartitionError, 0, kAny, R::Partitions)};
constexpr Field kTxnResult[] = {f(String, 4) /* TransactionalId */, arr(kTxnTopicResult, 4, kAny, R::Topics)};
constexpr Field kAddPartitionsToTxnResp[] = {f(Int32) /* ThrottleTimeMs */, f(Int16, 4, kAny, R::ErrorCode),
                                             arr(kTxnResult, 4, kAny, R::Groups), arr(kTxnTopicResult, 0, 3, R::Topics)};

// --- AddOffsetsToTxn (25)
constexpr Field kAddOffsetsToTxnReq[] = {f(String, 0, kAny, R::TxnId), f(Int64, 0, kAny, R::ProducerId),
                                         f(Int16) /* ProducerEpoch */, f(String, 0, kAny, R::Group)};
constexpr Field kTxnErrorOnly[] = {f(Int32) /* ThrottleTimeMs */, f(Int16, 0, kAny, R::ErrorCode)};

// --- EndTxn (26)
constexpr Field kEndTxnReq[] = {f(String, 0, kAny, R::TxnId), f(Int64, 0, kAny, R::ProducerId),
                                f(Int16) /* ProducerEpoch */, f(Bool, 0, kAny, R::Committed)};
constexpr Field kEndTxnResp[] = {f(Int32) /* ThrottleTimeMs */, f(Int16, 0, kAny, R::ErrorCode),
                                 f(Int64, 5) /* ProducerId */, f(Int16, 5) /* ProducerEpoch */};

// --- TxnOffsetCommit (28)
constexpr Field kTxnCommitPartition[] = {f(Int32, 0, kAny, R::Partition), f(Int64, 0, kAny, R::Offset),
                                         f(Int32, 2) /* CommittedLeaderEpoch */, f(String) /* CommittedMetadata */};
constexpr Field kTxnCommitTopic[] = {f(String, 0, kAny, R::Topic), arr(kTxnCommitPartition, 0, kAny, R::Partitions)};
constexpr Field kTxnOffsetCommitReq[] = {
    f(String, 0, kAny, R::TxnId), f(String, 0, kAny, R::Group), f(Int64, 0, kAny, R::ProducerId),
    f(Int16) /* ProducerEpoch */, f(Int32, 3, kAny, R::Generation), f(String, 3, kAny, R::Member),
    f(String, 3) /* GroupInstanceId */, arr(kTxnCommitTopic, 0, kAny, R::Topics)};
constexpr Field kTxnOffsetCommitResp[] = {f(Int32) /* ThrottleTimeMs */, arr(kOffsetCommitRespTopic, 0, kAny, R::Topics)};

struct Entry {
  int16_t key;
  std::span<const Field> request, response;
};

constexpr Entry kSchemas[] = {
    {api::kProduce, kProduceReq, kProduceResp},
    {api::kFetch, kFetchReq, kFetchResp},
    {api::kListOffsets, kListOffsetsReq, kListOffsetsResp},
    {api::kMetadata, {}, kMetadataResp},
    {api::kOffsetCommit, kOffsetCommitReq, kOffsetCommitResp},
    {api::kOffsetFetch, kOffsetFetchReq, kOffsetFetchResp},
    {api::kFindCoordinator, {}, kFindCoordinatorResp},
    {api::kJoinGroup, kJoinGroupReq, kJoinGroupResp},
    {api::kHeartbeat, kHeartbeatReq, kErrorOnly},
    {api::kLeaveGroup, kLeaveGroupReq, kLeaveGroupResp},
    {api::kSyncGroup, kSyncGroupReq, kSyncGroupResp},
    {api::kApiVersions, {}, kApiVersionsResp},
    {api::kInitProducerId, kInitProducerIdReq, kInitProducerIdResp},
    {api::kAddPartitionsToTxn, kAddPartitionsToTxnReq, kAddPartitionsToTxnResp},
    {api::kAddOffsetsToTxn, kAddOffsetsToTxnReq, kTxnErrorOnly},
    {api::kEndTxn, kEndTxnReq, kEndTxnResp},
    {api::kTxnOffsetCommit, kTxnOffsetCommitReq, kTxnOffsetCommitResp},
};

const Entry* find(int16_t key) {
  for (const Entry& e : kSchemas)
    if (e.key == key)
      return &e;
  return nullptr;
}

} // namespace

std::span<const Field> requestSchema(int16_t key) {
  const Entry* e = find(key);
  return e ? e->request : std::span<const Field>{};
}

std::span<const Field> responseSchema(int16_t key) {
  const Entry* e = find(key);
  return e ? e->response : std::span<const Field>{};
}

} // namespace idem::kafka
