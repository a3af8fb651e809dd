"""py-sink-keyed (payments, test consumer): a payment consumer that charges at the payment provider
($SINK_URL, idemproof's sink) with python's urllib and books the payment with psycopg, on py-dedup-table's
stream loop. Per entry: POST /charges with the body {"event_id", "wallet", "amount"}, then in one
transaction the processed_events row (ON CONFLICT DO NOTHING) and, only when it is new, the wallet's debit
and the payments row; XACK after COMMIT.

SINK_MODE (environment):
  keyed              (default) the call carries `Idempotency-Key: <event_id>` and is retried, with the same
                     key, on a 5xx, a timeout or a connection error (up to 5 tries): correct against a
                     provider that honours keys; charged twice against one that ignores them
  call-then-commit   no key and no retry: a kill after the call and before the COMMIT charges twice once the
                     event is redelivered (py-sink-call-then-commit)
Any other error is printed and exits 1.
"""
import json
import os
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py-dedup-table"))

import consumer as loop  # noqa: E402

MODE = os.environ.get("SINK_MODE") or "keyed"
TIMEOUT_S = 2.0
TRIES = 5


class Transient(Exception):
    pass


def charge(fields):
    body = json.dumps({"event_id": fields["event_id"], "wallet": fields["wallet"],
                       "amount": int(fields["amount"])}).encode()
    headers = {"Content-Type": "application/json"}
    if MODE == "keyed":
        headers["Idempotency-Key"] = fields["event_id"]
    tries = TRIES if MODE == "keyed" else 1
    for attempt in range(1, tries + 1):
        req = urllib.request.Request(os.environ["SINK_URL"] + "/charges", data=body, headers=headers,
                                     method="POST")
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
                resp.read()
                return
        except urllib.error.HTTPError as e:
            if e.code < 500 or attempt == tries:
                raise
        except (urllib.error.URLError, OSError) as e:  # refused, reset, timed out
            if attempt == tries:
                raise Transient(f"charge failed {tries} times: {e}")
        time.sleep(0.05 * attempt)


class SinkConsumer(loop.Consumer):
    def apply(self, fields):
        charge(fields)
        with self.db.transaction():
            cur = self.db.execute(
                "INSERT INTO processed_events(event_id) VALUES (%s) ON CONFLICT DO NOTHING",
                (fields["event_id"],))
            if cur.rowcount == 1:
                self.db.execute("UPDATE wallets SET balance_halala = balance_halala - %s WHERE id = %s",
                                (int(fields["amount"]), fields["wallet"]))
                self.db.execute("INSERT INTO payments(event_id, wallet, amount_halala) VALUES (%s, %s, %s)",
                                (fields["event_id"], fields["wallet"], int(fields["amount"])))


if __name__ == "__main__":
    sys.exit(loop.main(SinkConsumer, "py-sink-" + MODE))
