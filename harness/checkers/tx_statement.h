#pragma once
/// What a PostgreSQL step does to its connection's transaction: one reading of BEGIN, COMMIT, ROLLBACK,
/// savepoints and two-phase commit, shared by the view (which statements a rollback undid) and the
/// anti-pattern classifiers (which COMMIT made a write durable).

#include "history/history.h"

#include <string>
#include <vector>

namespace idem::detail {

struct TxStatement {
  enum class Kind {
    Other,      ///< not a transaction statement, or not a PostgreSQL step
    Begin,      ///< BEGIN, START TRANSACTION
    Commit,     ///< COMMIT, END (answered ROLLBACK when the transaction had failed)
    Rollback,   ///< ROLLBACK, ABORT: not ROLLBACK TO a savepoint
    RollbackTo, ///< ROLLBACK [WORK | TRANSACTION] TO [SAVEPOINT] name: ends no transaction
    Savepoint,  ///< SAVEPOINT name
    Release,    ///< RELEASE [SAVEPOINT] name
    Prepare,    ///< PREPARE TRANSACTION 'gid': ends the transaction without committing it
    Prepared,   ///< COMMIT PREPARED, ROLLBACK PREPARED: settles an earlier prepared transaction
  };
  Kind kind = Kind::Other;
  std::string savepoint; ///< upper-cased, for Savepoint, Release and RollbackTo
};

/// The transaction statement a step starts with (its first statement: a simple query of several is read by
/// its first). Steps of other servers are Other.
TxStatement txStatement(const ops::Step& s);

/// A PostgreSQL step named by a statement after a leading BEGIN (START TRANSACTION) of its own: pgjdbc and
/// Npgsql send a transaction's BEGIN under the Sync of its first statement, one step named by that statement
/// (docs/steps.md). The step opens the transaction and does its first work.
bool opensWithBegin(const ops::Step& s);

/// A PostgreSQL step of several statements whose last is a COMMIT that committed ("BEGIN; INSERT …; COMMIT"
/// pipelined under one Sync, its summary ending "; COMMIT"): its writes are durable when its reply comes.
bool commitsWithin(const ops::Step& s);

/// The text of the statement that names a step: its detail after a leading BEGIN (opensWithBegin).
std::string namedStatementText(const ops::Step& s);

/// One statement, shown whole: a detail not cut short ("...") with no ';' before its end.
bool oneStatement(const ops::Step& s);

/// A COMMIT (one statement) that PostgreSQL answered ROLLBACK: its transaction had failed, and nothing of it
/// took effect.
bool failedCommit(const ops::Step& s);

/// Whether these steps of one process, in order, worked on two PostgreSQL connections at once: a step on one
/// while a transaction of another was open (a pool whose work overlaps). Which delivery a step was for can
/// then not be told from the order of the steps, and the order of a run is left to timing.
bool overlappingTransactions(const std::vector<const ops::Step*>& steps);

} // namespace idem::detail
