#pragma once
/// The Kafka protocol tracker (proxy::Tracker): frames length-prefixed requests and responses, matches
/// each response to its request by correlation id (a broker answers a connection's requests in order;
/// a Produce with acks=0 gets no response), and decodes the API keys a consumer drives its work with —
/// each request of them a step named by its verb (FETCH, COMMIT_OFFSET, …; api.h) — while set-up
/// requests (ApiVersions, Metadata, FindCoordinator, SASL, admin) pass as no step. See README.md here.
#include "brokers/kafka/answers.h"
#include "brokers/kafka/rewrite.h"
#include "proxy/tracker.h"

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace idem::kafka {

/// A request or response larger than this is not framed: the connection passes through unobserved
/// from it on (the proxy holds at most 32 MiB for one step).
inline constexpr size_t kMaxFrame = 64 << 20;

/// The assignments of the leaders' SyncGroup requests, shared by the trackers of one broker's connections:
/// per group, generation and member, the assignment bytes the leader gave the member.
struct SyncAssignments {
  std::mutex mu;
  std::map<std::tuple<std::string, int32_t, std::string>, std::string> byMember;
};

/// The offsets each transaction committed for its group (TxnOffsetCommit), shared by the trackers of one
/// broker's connections: they take effect when the transaction commits (EndTxn), and librdkafka sends
/// the two on different connections (the group's coordinator, the transaction's).
struct TxnOffsets {
  std::mutex mu;
  std::map<std::string, std::vector<std::string>> byTxn; ///< transactional id -> "topic-p@offset"
};

struct TrackerOptions {
  /// Set: Metadata and FindCoordinator responses (and NodeEndpoints of flexible Fetch and Produce
  /// responses) are forwarded with the broker addresses it gives (ServerMsg::replacement).
  AddressFor addressFor;
  /// ApiVersions responses are forwarded with each decoded key's highest version capped at what the
  /// tracker decodes.
  bool capVersions = true;
  /// A SyncGroup answered INVALID_REQUEST is forwarded as a real coordinator answers it: with the member's
  /// assignment, taken from the leader's SyncGroup of that generation (`syncAssignments`, shared by the
  /// broker's connections); as REBALANCE_IN_PROGRESS when no leader's request gave one. librdkafka's mock
  /// cluster (the embedded broker) moves its group to Stable once the leader's SyncGroup carries every
  /// member's assignment, and refuses a follower's SyncGroup that comes after it as invalid. Followers
  /// slower than the leader (kafkajs; sarama, whose leader and follower sync at once) got the refusal and
  /// crashed, or rejoined and lost the race again, every generation.
  bool lateSyncRejoins = false;
  std::shared_ptr<SyncAssignments> syncAssignments;
  /// Above 0: a Fetch asking a longer max wait is forwarded with this one (ClientMsg::replacement), and its
  /// step waits this long. librdkafka's mock cluster answers a Fetch that finds no record at its max wait,
  /// even when a record arrives meanwhile, where a real broker answers at once: at kafkajs's default of
  /// 5 s, every record produced during a poll waited up to 5 s. An earlier empty answer is one a broker
  /// may give; the client polls again.
  int32_t fetchWaitCapMs = 0;
  /// Where a TxnOffsetCommit's positions wait for their transaction's EndTxn; unset, the tracker's own.
  std::shared_ptr<TxnOffsets> txnOffsets;
};

proxy::TrackerPtr makeTracker(TrackerOptions options = {});

/// The group membership a Kafka tracker's connection showed so far (its client's group requests and
/// JoinGroup answers): what the proxy needs to send LeaveGroup for a member it killed. nullopt before the
/// connection named a group and a member, or for a tracker that makeTracker() did not make.
std::optional<Membership> membershipOf(const proxy::Tracker& tracker);

/// Whether the tracker's connection sent a JoinGroup request (forwarded to the coordinator: its member
/// exists there once the coordinator read it).
bool askedToJoin(const proxy::Tracker& tracker);

} // namespace idem::kafka
