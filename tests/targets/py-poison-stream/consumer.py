"""py-poison-stream (scenario tests/scenarios/wallet-poison-stream.json): py-dedup-table's loop and strategy;
a payment whose amount is not positive goes to the dead-letter stream $DEAD_LETTER_STREAM (XADD with its
event_id), then is acknowledged. Correct without faults; a kill between the XADD and the XACK writes a
second dead letter on the redelivery (poison:dead-lettered fails), as an XADD can't be made idempotent here."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py-dedup-table"))

import consumer as loop  # noqa: E402


class DeadLetterStream(loop.Consumer):
    def process(self, entry_id, fields):
        if fields and int(fields["amount"]) <= 0:
            self.kv.xadd(os.environ["DEAD_LETTER_STREAM"],
                         {"event_id": fields["event_id"], "reason": "amount is not positive"})
            self.kv.xack(self.stream, self.group, entry_id)
            return True
        return super().process(entry_id, fields)


if __name__ == "__main__":
    sys.exit(loop.main(DeadLetterStream, "py-poison-stream"))
