"""py-resilient (wallet, test consumer): py-dedup-table's loop and strategy, plus the error handling of a
production consumer in Python (psycopg 3.1.7, redis-py 4.3.4, run with /usr/bin/python3):

- a broken PostgreSQL connection (psycopg.OperationalError: a reset, 57P01 admin_shutdown, a server
  restart) -> it reconnects (up to 40 attempts, 50 ms apart) and runs the entry's transaction again;
- 40001 serialization_failure or 40P01 deadlock_detected -> it runs the transaction again. Before that,
  still inside the failed transaction, it asks the server (SELECT 1) and prints what the server says:
  "server: in failed transaction (25P02)" when the server itself holds the transaction aborted, as a real
  40001 leaves it; and once the transaction is over (after psycopg's ROLLBACK, or a failed COMMIT) it asks
  again and prints "server idle" (or "server still in a failed transaction");
- a Valkey connection error or a transient error reply (LOADING, BUSY, ...) on XACK -> it tries the XACK
  again (redis-py reconnects by itself on the next command). Errors on the reads end the process (exit 1):
  the harness restarts it; unless RECONNECT_AFTER_MS (environment) is set: then a broken Valkey connection
  on a read is waited out that long, as a client's reconnect delay, and the loop reads again.

DEDUP (environment, default 1): 1 inserts the event_id into processed_messages in the same transaction as
the credit (correct under every fault); 0 credits with no dedup at all, so a rerun after an ambiguous
commit (a connection lost after COMMIT took effect) applies the payment twice.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py-dedup-table"))

import consumer as loop  # noqa: E402
import psycopg  # noqa: E402
import redis  # noqa: E402

ATTEMPTS = 40


def say(text):
    print(f"py-resilient: {text}", file=sys.stderr, flush=True)


class Resilient(loop.Consumer):
    def __init__(self):
        self.dedup = os.environ.get("DEDUP", "1") != "0"
        super().__init__()

    def reconnect(self):
        try:
            self.db.close()
        except Exception:
            pass
        last = None
        for _ in range(ATTEMPTS):
            try:
                self.db = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True, prepare_threshold=None)
                return
            except psycopg.OperationalError as e:
                last = e
                if not loop.pause(50):
                    break
        raise last or RuntimeError("stopped while reconnecting")

    def apply(self, fields):
        with self.db.transaction():
            try:
                fresh = True
                if self.dedup:
                    cur = self.db.execute(
                        "INSERT INTO processed_messages(event_id) VALUES (%s) ON CONFLICT DO NOTHING",
                        (fields["event_id"],))
                    fresh = cur.rowcount == 1
                if fresh:
                    self.db.execute(
                        "UPDATE wallets SET balance_halala = balance_halala + %s WHERE id = %s",
                        (int(fields["amount"]), fields["wallet"]))
            except (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected) as e:
                # What does the server think of this transaction now?
                try:
                    self.db.execute("SELECT 1")
                    probe = "server: SELECT 1 ran (the transaction is NOT aborted on the server)"
                except psycopg.errors.InFailedSqlTransaction:
                    probe = "server: in failed transaction (25P02)"
                say(f"{e.sqlstate} on a statement; client status {self.db.info.transaction_status.name}; {probe}")
                raise

    def process(self, entry_id, fields):
        while fields and not loop.stop:
            try:
                self.apply(fields)
                break
            except (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected) as e:
                # The transaction is over (rolled back by psycopg, or by the failed COMMIT itself): the
                # server must be idle now, whatever failed.
                try:
                    self.db.execute("SELECT 1")
                    after = "server idle"
                except psycopg.errors.InFailedSqlTransaction:
                    after = "server still in a failed transaction (25P02)"
                say(f"entry {entry_id}: {type(e).__name__} ({e.sqlstate}); {after}; running the transaction again")
            except psycopg.OperationalError as e:
                say(f"entry {entry_id}: connection lost ({type(e).__name__}); reconnecting")
                self.reconnect()
        if loop.stop:
            return False
        for _ in range(ATTEMPTS):
            try:
                self.kv.xack(self.stream, self.group, entry_id)
                return True
            except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError) as e:
                say(f"entry {entry_id}: XACK failed ({type(e).__name__}: {e}); again")
                if not loop.pause(50):
                    return False
        raise RuntimeError(f"XACK of {entry_id} failed {ATTEMPTS} times")

    def run(self):
        late = int(os.environ.get("RECONNECT_AFTER_MS", "0"))
        while not loop.stop:
            try:
                return super().run()
            except (redis.ConnectionError, redis.TimeoutError) as e:
                if not late:
                    raise
                say(f"read failed ({type(e).__name__}); reading again in {late} ms")
                if not loop.pause(late):
                    return None
        return None


if __name__ == "__main__":
    sys.exit(loop.main(Resilient, "py-resilient"))
