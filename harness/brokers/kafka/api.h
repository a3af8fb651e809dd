#pragma once
/// The Kafka API keys: their names, the step verb each one is (docs: harness/brokers/kafka/README.md),
/// whether it is a step at all, and the versions from which requests and responses are "flexible"
/// (compact strings and arrays, tagged fields; request header v2, response header v1). From Apache
/// Kafka's message specs (clients/src/main/resources/common/message/*.json, 3.9).
#include <cstdint>
#include <string>

namespace idem::kafka {

namespace api {
inline constexpr int16_t kProduce = 0, kFetch = 1, kListOffsets = 2, kMetadata = 3, kOffsetCommit = 8,
                         kOffsetFetch = 9, kFindCoordinator = 10, kJoinGroup = 11, kHeartbeat = 12,
                         kLeaveGroup = 13, kSyncGroup = 14, kSaslHandshake = 17, kApiVersions = 18,
                         kInitProducerId = 22, kAddPartitionsToTxn = 24, kAddOffsetsToTxn = 25, kEndTxn = 26,
                         kTxnOffsetCommit = 28, kSaslAuthenticate = 36, kShareFetch = 78;
} // namespace api

/// What the tracker does with requests of one API key.
enum class ApiRole {
  Step,    ///< a fault point: its request ends a step, its response ends the step's reply
  SetUp,   ///< connection or group set-up (ApiVersions, Metadata, FindCoordinator, SASL, and every API a
           ///< consumer does not drive its work with): forwarded at once, no fault point
  Opaque,  ///< delivers records in a way the tracker does not decode (ShareFetch): the connection is
           ///< passed through unobserved from there, so that no delivery goes unseen
};

struct ApiInfo {
  int16_t key = -1;
  const char* name = nullptr;  ///< "OffsetCommit"; null for a key not in the table
  const char* verb = nullptr;  ///< "COMMIT_OFFSET"
  ApiRole role = ApiRole::SetUp;
  int16_t maxVersion = -1;     ///< the highest version whose layout the tracker decodes (Step and the
                               ///< rewritten SetUp keys); -1: not decoded
  int16_t flexibleFrom = -1;   ///< first flexible version; -1: none
  bool blocking = false;       ///< the broker may hold the response (Fetch's max wait, a rebalance)
};

/// The entry of `key`; for a key not in the table: name null, verb "API_<key>", role SetUp.
ApiInfo apiInfo(int16_t key);

/// The step verb of `key` (a string the caller owns).
std::string apiVerb(int16_t key);

/// Whether version `version` of `key` is flexible.
inline bool isFlexible(const ApiInfo& a, int16_t version) {
  return a.flexibleFrom >= 0 && version >= a.flexibleFrom;
}

/// The request header version of a request (0: no client id — only ControlledShutdown v0, which no
/// consumer sends; 1: client id; 2: client id and tagged fields).
int requestHeaderVersion(const ApiInfo& a, int16_t version);
/// The response header version (1: tagged fields after the correlation id). ApiVersions responses always
/// use header v0, so that a client can read one whatever version it asked for.
int responseHeaderVersion(const ApiInfo& a, int16_t version);

} // namespace idem::kafka
