"""py-poison-forever (scenario wallet-poison): py-dedup-table's loop and strategy, with the error handling
threads report for a message a consumer can never apply: every failure is logged and the entry left
unacknowledged, "to retry it later". The payment with a negative amount fails its check every time, so its
own XAUTOCLAIM takes it again every CLAIM_IDLE_MS, without end; nothing is dead-lettered. As
targets/poison-retry-forever: fails poison:bounded."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py-dedup-table"))

import consumer as loop  # noqa: E402


class RetryForever(loop.Consumer):
    def process(self, entry_id, fields):
        if fields:
            try:
                if int(fields["amount"]) <= 0:
                    raise ValueError(f"amount {fields['amount']} is not positive")
                self.apply(fields)
            except ValueError as e:
                print(f"py-poison-forever: entry {entry_id} failed ({e}), left for a retry", file=sys.stderr,
                      flush=True)
                return True  # on to the next entry; this one stays pending
        self.kv.xack(self.stream, self.group, entry_id)
        return True


if __name__ == "__main__":
    sys.exit(loop.main(RetryForever, "py-poison-forever"))
