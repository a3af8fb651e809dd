#pragma once
/// Internal: the classifiers of anti-patterns, one file each. Each is a pure function of a failing run's
/// history (indexed) and one of its violations: it returns the anti-pattern whose steps it finds, or
/// nothing. They read the steps' verbs, their order per process and transaction, and what the trackers
/// decoded of them (tables, SET NX, acknowledged ids); none guesses: when the steps do not show the
/// mistake, nothing is named. The rows are those of docs/report.md ("Anti-patterns").
#include "checkers/checkers.h"
#include "checkers/history_view.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace idem::detail::patterns {

using Found = std::optional<Pattern>;

Found ackBeforeEffect(const HistoryView& h, const Violation& v);       ///< ack_before_effect.cc
Found ackAfterFailure(const HistoryView& h, const Violation& v);       ///< ack_after_failure.cc
Found effectWithoutDedup(const HistoryView& h, const Violation& v);    ///< effect_without_dedup.cc
Found dedupOutsideTransaction(const HistoryView& h, const Violation& v); ///< dedup_outside_transaction.cc
Found dedupOnBrokerId(const HistoryView& h, const Violation& v);       ///< dedup_on_broker_id.cc
Found checkThenAct(const HistoryView& h, const Violation& v);          ///< check_then_act.cc
Found unguardedVersion(const HistoryView& h, const Violation& v);      ///< unguarded_version.cc
Found retryAfterAmbiguousCommit(const HistoryView& h, const Violation& v); ///< retry_after_ambiguous_commit.cc
Found httpKeyOutsideTransaction(const HistoryView& h, const Violation& v); ///< http_key_outside_transaction.cc
Found httpNoRequestHash(const HistoryView& h, const Violation& v);     ///< http_no_request_hash.cc
Found httpCheckThenInsert(const HistoryView& h, const Violation& v);   ///< http_check_then_insert.cc
Found httpLeaseWithoutFence(const HistoryView& h, const Violation& v); ///< http_lease_without_fence.cc
Found httpAnswerBeforeCommit(const HistoryView& h, const Violation& v); ///< http_answer_before_commit.cc
Found httpSessionLockLeft(const HistoryView& h, const Violation& v);   ///< http_session_lock_left.cc (and http-unlock-on-other-connection)
Found httpKeyInMemory(const HistoryView& h, const Violation& v);       ///< http_key_in_memory.cc
Found revokedMemberWorks(const HistoryView& h, const Violation& v);    ///< revoked_member_works.cc
Found retentionShorterThanWindow(const HistoryView& h, const Violation& v); ///< retention_shorter_than_window.cc
Found pausedMemberWorks(const HistoryView& h, const Violation& v);     ///< paused_member_works.cc
Found poisonRetriedForever(const HistoryView& h, const Violation& v);  ///< poison_retried_forever.cc
Found poisonDropped(const HistoryView& h, const Violation& v);         ///< poison_dropped.cc
Found consumerDeletedWithPending(const HistoryView& h, const Violation& v); ///< consumer_deleted_with_pending.cc
Found sinkCallCommitOrder(const HistoryView& h, const Violation& v);   ///< sink_call_commit_order.cc
Found sinkKeyOnly(const HistoryView& h, const Violation& v);          ///< sink_key_only.cc
Found sinkKeyPerAttempt(const HistoryView& h, const Violation& v);    ///< sink_key_per_attempt.cc
Found sinkCallWithoutKey(const HistoryView& h, const Violation& v);   ///< sink_call_without_key.cc

/// The first classifier, in the order above from the most specific, that recognises the violation.
Found classify(const HistoryView& h, const Violation& v);

// Reading steps (steps.cc).

constexpr int64_t kNoOp = std::numeric_limits<int64_t>::max();

/// One step of a process, with its history index.
struct StepAt {
  int64_t op = 0;
  const ops::Step* step = nullptr;
  std::string name() const { return step->name(); } ///< "COMMIT#3"
};

/// The steps of `process` with index in (after, before), in order (connection set-up left out).
std::vector<StepAt> stepsOf(const HistoryView& h, const std::string& process, int64_t after = -1,
                            int64_t before = kNoOp);
/// A step that acknowledged entries, whatever the broker: its `acked` names them (an XACK names the ids in
/// its request; an offset commit every record below the position it commits, so an entry is acknowledged
/// again by each later commit).
bool isAck(const ops::Step& s);
/// The entries the ack step `at` acknowledged first: those no earlier step acknowledged (it took effect
/// when it reached the server); all its entries when none is new. An offset commit's own records.
std::vector<std::string> newlyAcked(const HistoryView& h, const StepAt& at);
/// The verb of the run's acknowledging steps ("XACK", "COMMIT_OFFSET"): the first ack step's. With none
/// in the run, "XACK" when every delivery came from Valkey, else "".
std::string ackVerbOf(const HistoryView& h);
/// The acknowledgement in the words of a fix text, from the verb that acknowledges (ackVerbOf): the fixes
/// say "then XACK" to a Valkey consumer and "then commit its offset" to one that commits offsets.
struct AckWords {
  std::string then;      ///< after "COMMIT; then": "XACK", "commit its offset"
  std::string thenEntry; ///< after "COMMIT first, then": "XACK the entry", "commit its offset"
  std::string noun;      ///< after "between COMMIT and": "XACK", "the offset commit"
};
AckWords ackWords(const std::string& verb);
/// The record of op `index` as a step, or nullptr.
const ops::Step* stepAt(const HistoryView& h, int64_t index);
/// A PostgreSQL statement that writes: INSERT, UPDATE, DELETE, MERGE.
bool isWrite(const ops::Step& s);
/// Whether two PostgreSQL statements name a table in common (their decoded `tables`).
bool shareTable(const ops::Step& a, const ops::Step& b);
/// A PostgreSQL COMMIT (or END).
bool isCommit(const ops::Step& s);
/// A COMMIT that took effect: it reached the server, and the server did not answer it with an error or
/// with "ROLLBACK" (the answer to a COMMIT of a transaction a failed statement aborted).
bool committed(const ops::Step& s);
/// BEGIN or START TRANSACTION.
bool isBegin(const ops::Step& s);
/// COMMIT, END, ROLLBACK, ABORT or a two-phase step (PREPARE TRANSACTION, COMMIT or ROLLBACK PREPARED): not a
/// ROLLBACK TO SAVEPOINT, which ends no transaction (checkers/tx_statement.h).
bool endsTransaction(const ops::Step& s);
/// A fault that fails the transaction under it while its process lives on: a dropped connection, an error
/// answered instead of a step (the transaction aborts), a restarted server (every connection drops).
bool failsTransaction(const Fault& f);
/// `s` upper-cased (ASCII): how the classifiers compare verbs and statements.
std::string patternUpper(std::string s);
/// A statement whose text has `word` (case-insensitive): "ON CONFLICT".
bool says(const ops::Step& s, const std::string& word);
/// How a step was recognised as a dedup mark: Named when its table's name says that it records processed
/// events (whatever its shape), Shape when its shape alone does (the command or statement itself).
enum class Mark { None, Shape, Named };
/// The tables the run shows a unique key on: an INSERT into them was refused as a duplicate key
/// (isDuplicateKey). The steps carry no parameters, so which column the key is on is not seen.
std::set<std::string> keyedTables(const HistoryView& h);
/// A dedup mark, by its shape: SET … NX (or SETNX) in Valkey; in PostgreSQL an INSERT … ON CONFLICT … DO
/// NOTHING (a repeat inserts no row, and the consumer skips on that), or an INSERT into a table of `keyed`
/// (a repeat is refused), whatever the table is called. Else, as a fallback for a text cut before its ON
/// CONFLICT or a key the run never showed, by its name: an INSERT into a table whose name has processed,
/// seen, dedup, inbox or idempot in it. Any other INSERT (an effect, or ON CONFLICT … DO UPDATE) is none.
Mark markOf(const ops::Step& s, const std::set<std::string>& keyed);
bool isMark(const ops::Step& s, const std::set<std::string>& keyed);
/// A PostgreSQL statement refused as a duplicate key (unique_violation; the message of an English server).
bool isDuplicateKey(const ops::Step& s);
/// An INSERT that inserted no row ("INSERT 0 0": ON CONFLICT … DO NOTHING found the row).
bool insertedNone(const ops::Step& s);
/// Where a write took effect in PostgreSQL: the COMMIT that ended its transaction (the first COMMIT on its
/// connection after it, when a BEGIN on that connection came before it in the same transaction), or the
/// write itself (autocommit). nullopt when its transaction never committed before `before`: it was rolled
/// back, its COMMIT was answered "ROLLBACK", or a ROLLBACK TO a savepoint set before the write undid it (a
/// ROLLBACK TO SAVEPOINT ends no transaction; RELEASE merges a savepoint into the one around it).
std::optional<StepAt> commitOf(const HistoryView& h, const std::string& process, int64_t write, int64_t before = kNoOp);
/// The write that applied delivery `d`: a read hands entries over in a batch, worked through in order, and
/// the i-th entry of a read is the one the process's i-th unit of work after it (before its next read: a
/// transaction that wrote, or a write in autocommit) applied, its first write; or, when the batch is one
/// transaction with a write per entry, the i-th write. Only a write that took effect (commitOf). nullopt
/// when there is none, or when the order cannot tell: more units than entries, or a process that read
/// again before it had a unit of work for each entry of its last read (a client that reads ahead).
std::optional<StepAt> writeFor(const HistoryView& h, const DeliveryRec& d);
/// Whether a COMMIT of `process` took effect (committed) between ops `after` and `before`.
bool committedBetween(const HistoryView& h, const std::string& process, int64_t after, int64_t before);
/// Whether `process` worked on two PostgreSQL connections at once between ops `after` and `before`: a step
/// on one while a transaction of another was open (a pool whose work overlaps). Which of its deliveries a
/// step was for can then not be told from the order of its steps.
bool overlappingTransactions(const HistoryView& h, const std::string& process, int64_t after, int64_t before);
/// The kill of `process` after op `after` (nullptr when none).
const KillRec* killOf(const HistoryView& h, const std::string& process, int64_t after);
/// The event id of event n ("" when it was never sent).
std::string eventIdOf(const HistoryView& h, int n);
/// The value of the scenario's version field of event n, or "".
std::string versionOf(const HistoryView& h, int n);

Pattern make(std::string id, std::string name, std::vector<int64_t> ops, std::string explanation, std::string fix);

} // namespace idem::detail::patterns
