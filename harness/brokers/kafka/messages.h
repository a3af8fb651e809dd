#pragma once
/// Private to the tracker: what one request or response of a decoded API key means for steps — the
/// step's detail and committed offsets, the fetch positions a Fetch asks from, and a reply's summary,
/// error and delivered records. Pure functions of the bytes (and of what the connection learnt before:
/// topic names by id, the fetch session's positions).
#include "brokers/kafka/collector.h"
#include "brokers/kafka/delivery.h"
#include "proxy/tracker.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idem::kafka {

struct RequestFacts {
  std::string detail;
  std::vector<std::string> committed;             ///< OffsetCommit, TxnOffsetCommit: "topic-p@offset"
  std::optional<std::string> txnId;               ///< TxnOffsetCommit, EndTxn: the transactional id
  bool endCommits = false;                        ///< EndTxn: it commits (not aborts) the transaction
  std::map<TopicPartition, int64_t> fetchOffsets; ///< Fetch: the position asked from, per partition
  std::vector<TopicPartition> forgotten;          ///< Fetch: partitions taken out of the fetch session
  bool noResponse = false;                        ///< Produce with acks=0: the broker sends no response
  bool blocking = false;                          ///< Fetch with a max wait; JoinGroup, SyncGroup
  int64_t waitMs = 0;                             ///< Fetch: its max wait (StepInfo::waitMs)
  std::optional<std::string> group, member;       ///< group requests: the group and the member id sent
  std::optional<int64_t> generation;
};

/// Reads a request body (after the header) of API `key` at `version`. False when it does not decode.
bool readRequest(int16_t key, int16_t version, std::string_view body, TopicNames& names, RequestFacts& out);

struct ResponseFacts {
  proxy::ReplyInfo reply;
  std::vector<Delivery> deliveries; ///< Fetch: the records the client hands to its application
  std::string undecoded;            ///< Fetch: a batch that could not be decoded (the reply is then not judged)
  std::optional<std::string> member; ///< JoinGroup without error: the member id and generation it got
  std::optional<int64_t> generation;
};

/// Reads a response body (after the header) of API `key` at `version`. `positions`: for a Fetch, the
/// position of each partition the client fetches from (its request's and, for partitions an incremental
/// fetch left out, the session's). Metadata responses teach `names` the topic ids. False when the body
/// does not decode.
bool readResponse(int16_t key, int16_t version, std::string_view body,
                  const std::map<TopicPartition, int64_t>& positions, TopicNames& names, ResponseFacts& out);

} // namespace idem::kafka
