#pragma once
/// What a Redis/Valkey reply means for the step it ends.
#include "proxy/resp_value.h"
#include "proxy/tracker.h"

#include <vector>

namespace idem::proxy {

/// The shape of entries a stream-reading command's reply carries.
enum class ReadShape {
  None,      ///< not a read
  Streams,   ///< XREADGROUP, XREAD: [[stream, [entry…]]…] (RESP2) or {stream: [entry…]} (RESP3), or null
  Entries,   ///< XCLAIM: [entry…]
  AutoClaim, ///< XAUTOCLAIM: [next-id, [entry…], [deleted-id…]] (the last only on Redis 7+)
  Ids,       ///< XCLAIM … JUSTID: [id…]
  AutoClaimIds, ///< XAUTOCLAIM … JUSTID: [next-id, [id…], [deleted-id…]]
  Range,     ///< XRANGE, XREVRANGE: [entry…], read without a group (ReplyInfo::ranged)
  Script,    ///< EVAL, EVALSHA, FCALL: whatever the script returns; what looks like an entry id in it may be one
  Exec,      ///< EXEC: an array of the queued commands' replies (respExecReplyInfo)
};

/// The ReplyInfo of `reply` to a command whose read shape is `shape`: error flag, entries delivered
/// (an entry is [id, [field, value, …]]; a deleted entry's nil fields give no fields), empty_read for a
/// read that delivered nothing, and a short summary ("+OK", "(integer) 1", "(nil)", "2 entries" …).
ReplyInfo respReplyInfo(const RespValue& reply, ReadShape shape);

/// The ReplyInfo of EXEC's reply to the commands queued since MULTI, whose read shapes are `queued` in
/// order: each element read as its command's reply (what the reads delivered, what a script may have
/// handed over); the transaction as one step. An error (EXECABORT) or a null reply (a WATCHed key changed)
/// ran none of them.
/// `acks`, when given, says what each queued command acknowledges (XACK's ids): an entry a read delivers
/// after an acknowledgement of it earlier in the transaction is pending again (ReplyInfo::reheld).
ReplyInfo respExecReplyInfo(const RespValue& reply, const std::vector<ReadShape>& queued,
                            const std::vector<std::vector<std::string>>& acks = {});

} // namespace idem::proxy
