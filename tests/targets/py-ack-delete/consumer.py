"""py-ack-delete (wallet, test consumer): py-dedup-table's loop and transaction, then XACK and XDEL of the
entry in one MULTI/EXEC (redis-py's transaction pipeline), so that the stream keeps only what is not done.
Correct. Python, psycopg 3.1.7, redis-py 4.3.4, run with /usr/bin/python3.

What idemproof must conclude: pass, also when the broker forgets its acks (`forget`): the group is set back,
and the entries it deleted can never be delivered again — nothing is left to deliver, so the run settles.

Round trips: py-dedup-table's loop (XREADGROUP over its own pending list, then XAUTOCLAIM and XREADGROUP ...
BLOCK 100 ... > in a loop); per entry BEGIN, INSERT, [UPDATE], COMMIT, then MULTI, XACK, XDEL, EXEC.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py-dedup-table"))

import consumer as loop  # noqa: E402


class AckDelete(loop.Consumer):
    def process(self, entry_id, fields):
        if fields:
            if not loop.pause(loop.WORK_MS):
                return False
            self.apply(fields)
        p = self.kv.pipeline(transaction=True)
        p.xack(self.stream, self.group, entry_id)
        p.xdel(self.stream, entry_id)
        p.execute()
        return True


if __name__ == "__main__":
    sys.exit(loop.main(AckDelete, "py-ack-delete"))
