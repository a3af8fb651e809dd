#pragma once
/// What a statement does with PostgreSQL's advisory locks, read from the functions its text names (case
/// insensitive): what an error fault may answer in its place (faults/error.cc defaultError) and what a
/// server's steps show of its key locks (checkers/patterns/http_session_lock_left.cc).
#include <string_view>

namespace idem {

struct AdvisoryLockCall {
  bool waits = false;      ///< a blocking take: pg_advisory_lock, pg_advisory_xact_lock (and _shared)
  bool tries = false;      ///< a take that waits on nothing: pg_try_advisory_lock, pg_try_advisory_xact_lock, …
  bool session = false;    ///< a session-level take (pg_advisory_lock, pg_try_advisory_lock, _shared): held until
                           ///< unlocked or the session ends, whatever becomes of the transaction
  bool unlocks = false;    ///< pg_advisory_unlock, pg_advisory_unlock_shared, pg_advisory_unlock_all
  bool unlocksAll = false; ///< pg_advisory_unlock_all
};

AdvisoryLockCall advisoryLockCall(std::string_view sql);

} // namespace idem
