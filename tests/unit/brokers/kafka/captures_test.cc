// The Kafka tracker on sessions recorded from real clients against idemproof-kafka-server
// (tests/captures/README.md): librdkafka and kafkajs. Each connection a client opened is one capture; the
// tests find a connection by what it did, since a client's connection order is its own.
#include "replay.h"

#include "brokers/kafka/tracker.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

using namespace idem::proxy;
using namespace idem::proxy::test;
using Strings = std::vector<std::string>;

namespace {

TrackerPtr fresh() { return idem::kafka::makeTracker(); }

struct Connection {
  std::string file;
  std::vector<Chunk> chunks;
  Events events;
};

/// Every capture of a client, decoded whole, in file-name order.
std::vector<Connection> connections(const std::string& client) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(std::string(IDEM_SOURCE_DIR) + "/tests/captures/" + client))
    files.push_back(client + "/" + e.path().filename().string());
  std::sort(files.begin(), files.end());
  std::vector<Connection> out;
  for (const auto& f : files) {
    auto chunks = loadCapture(f);
    Events e = wholeOf(fresh, chunks);
    out.push_back(Connection{f, std::move(chunks), std::move(e)});
  }
  return out;
}

/// The connection whose steps include `verb` (exactly one must).
const Connection& with(const std::vector<Connection>& all, const std::string& verb) {
  const Connection* found = nullptr;
  for (const auto& c : all) {
    const auto v = verbs(c.events);
    if (std::find(v.begin(), v.end(), verb) != v.end()) {
      INFO(verb << " in " << c.file << " and another");
      REQUIRE(found == nullptr);
      found = &c;
    }
  }
  INFO("no connection with " << verb);
  REQUIRE(found != nullptr);
  return *found;
}

Strings only(const Strings& verbs, const std::string& verb) {
  Strings out;
  for (const auto& v : verbs)
    if (v == verb) out.push_back(v);
  return out;
}

/// The four records every recorded client produced and read: ids and fields.
void checkDelivered(const ReplyInfo& r) {
  Strings ids = deliveredIds(r);
  std::sort(ids.begin(), ids.end());
  CHECK(ids == Strings{"payments-0@0", "payments-0@1", "payments-1@0", "payments-2@0"});
  for (const auto& e : r.delivered) {
    INFO(e.id);
    REQUIRE(e.fields.size() == 4);
    CHECK(e.fields[0].first == "n");
    CHECK(e.fields[1] == std::make_pair(std::string("event_id"), "e-" + e.fields[0].second));
    CHECK(e.fields[3] == std::make_pair(std::string("amount"), std::string("5000")));
  }
  // The fourth came gzip-compressed to partition 1.
  const auto gz = std::find_if(r.delivered.begin(), r.delivered.end(), [](const EntryView& e) { return e.id == "payments-1@0"; });
  REQUIRE(gz != r.delivered.end());
  CHECK(gz->fields[2].second == "w2");
}

/// Every connection decodes every byte, answers its steps in order (a client that closes may leave its
/// last long poll unanswered), and decodes alike however it is split.
void checkAll(const std::vector<Connection>& all) {
  for (const auto& c : all) {
    INFO(c.file);
    const Events& e = c.events;
    CHECK(!e.client_invalid);
    CHECK(!e.server_invalid);
    CHECK(e.client_left == 0);
    CHECK(e.server_left == 0);
    const size_t asked = verbs(e).size(), answered = replies(e).size();
    CHECK(answered <= asked);
    CHECK(asked - answered <= 1);
    checkSplitInvariance(fresh, c.chunks);
  }
}

} // namespace

TEST_CASE("librdkafka capture: produce, a group consumer's fetches and commits, a transaction") {
  const auto all = connections("librdkafka");
  REQUIRE(all.size() >= 5);
  checkAll(all);

  const Connection& fetcher = with(all, "FETCH");
  const auto fv = verbs(fetcher.events);
  CHECK(only(fv, "LIST_OFFSETS").size() == 3); // no committed offsets yet: it asks where each partition begins
  const auto fst = steps(fetcher.events);
  const auto fre = replies(fetcher.events);
  const size_t first = std::find(fv.begin(), fv.end(), "FETCH") - fv.begin();
  CHECK(fst[first].blocking);
  CHECK(fst[first].detail == "Fetch v11 max wait 100 ms: payments-0@0 payments-1@0 payments-2@0");
  checkDelivered(fre[first]);
  for (size_t i = first + 1; i < fre.size(); ++i) { // then long polls that find nothing new
    INFO("step " << i);
    CHECK(fre[i].empty_read);
  }

  const Connection& group = with(all, "JOIN_GROUP");
  const auto gv = verbs(group.events);
  CHECK(only(gv, "COMMIT_OFFSET").size() == 4); // one synchronous commit per record
  CHECK(gv.back() == "LEAVE_GROUP");
  Strings acked;
  for (const auto& s : steps(group.events))
    if (s.verb == "COMMIT_OFFSET") acked.insert(acked.end(), s.acked.begin(), s.acked.end());
  std::sort(acked.begin(), acked.end());
  CHECK(acked == Strings{"payments-0@1", "payments-0@2", "payments-1@1", "payments-2@1"});
  const auto gre = replies(group.events);
  CHECK(gre[0].summary.find("(leader)") != std::string::npos); // JoinGroup: the only member leads
  CHECK(gre[1].summary == "assigned payments-0 payments-1 payments-2");

  const Connection& txn = with(all, "END_TXN");
  CHECK(verbs(txn.events) == Strings{"INIT_PRODUCER_ID", "ADD_OFFSETS_TO_TXN", "ADD_PARTITIONS_TO_TXN", "END_TXN"});
  CHECK(steps(txn.events)[3].detail == "EndTxn v1 transactional id txn-rec commit");
  // The transaction's offsets (TxnOffsetCommit, on the group coordinator's connection) acknowledge at its
  // EndTxn commit (on the transaction coordinator's): not before, and not on a connection alone.
  const Connection& txnCommit = with(all, "TXN_OFFSET_COMMIT");
  const Strings positions{"payments-0@2", "payments-1@1", "payments-2@1"};
  bool sent = false;
  for (const auto& s : steps(txnCommit.events)) {
    if (s.verb != "TXN_OFFSET_COMMIT") continue;
    CHECK(s.detail.find("payments-0@2") != std::string::npos);
    CHECK(s.acked.empty());
    sent = true;
  }
  CHECK(sent);
  CHECK(steps(txn.events)[3].acked.empty());
  // The two connections' trackers sharing the broker's TxnOffsets, fed in the order librdkafka sent them:
  // the transaction begun, its offsets sent, then its EndTxn.
  idem::kafka::TrackerOptions shared;
  shared.txnOffsets = std::make_shared<idem::kafka::TxnOffsets>();
  auto withShared = [&] { return idem::kafka::makeTracker(shared); };
  auto feed = [](Feeder& f, const Chunk& c) { c.client ? f.client(c.bytes) : f.server(c.bytes); };
  Feeder ending(withShared());
  size_t k = 0;
  for (; k < txn.chunks.size() && !(txn.chunks[k].client && steps(ending.events()).size() == 3); ++k)
    feed(ending, txn.chunks[k]); // up to the END_TXN request
  Feeder offsets(withShared());
  for (const auto& c : txnCommit.chunks) feed(offsets, c);
  CHECK(shared.txnOffsets->byTxn["txn-rec"] == positions); // waiting for the transaction
  for (; k < txn.chunks.size(); ++k) feed(ending, txn.chunks[k]);
  REQUIRE(steps(ending.events()).size() == 4);
  CHECK(steps(ending.events())[3].acked == positions);
  CHECK(shared.txnOffsets->byTxn.empty());
  // Aborted instead, or its producer replaced first (InitProducerId of the same id): nothing acknowledged.
  shared.txnOffsets->byTxn["txn-rec"] = positions;
  const Events again = wholeOf(withShared, txn.chunks); // its InitProducerId comes first
  CHECK(steps(again)[3].acked.empty());
}

TEST_CASE("kafkajs capture: produce, one fetch of the four records, a commit per record") {
  const auto all = connections("kafkajs");
  REQUIRE(all.size() >= 3);
  checkAll(all);
  const Connection& fetcher = with(all, "FETCH");
  checkDelivered(replies(fetcher.events)[0]);
  const Connection& group = with(all, "JOIN_GROUP");
  const auto gv = verbs(group.events);
  CHECK(only(gv, "COMMIT_OFFSET").size() == 4);
  CHECK(gv.back() == "LEAVE_GROUP");
  for (const auto& s : steps(group.events))
    if (s.verb == "COMMIT_OFFSET") CHECK(s.detail.rfind("OffsetCommit v5 group g-js generation 2 member ", 0) == 0);
  const Connection& producer = with(all, "PRODUCE");
  CHECK(replies(producer.events)[0].summary == "payments-0@0 payments-2@0"); // the base offset of each batch
}
