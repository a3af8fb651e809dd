"""py-orders: POST /orders with an Idempotency-Key, as a typical Flask + psycopg 3 service writes it.
With STARTUP_CHECK=1 (tests/targets/py-orders-startup-check) it first queries the catalog, as a framework
checking its migrations does, before it listens.

The policy is Stripe's (scenario orders-409): a key reused with another payload is 409; a retry while the
first request is still running WAITS for it and then replays its answer; the key is opaque (the whole
header value; only a missing or empty one is 400).

Per request, on its own connection (autocommit, so each `conn.transaction()` is one BEGIN ... COMMIT):

    BEGIN
    INSERT INTO idempotency_keys(key, request_hash) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING RETURNING key
      inserted: INSERT the order, UPDATE stock, UPDATE idempotency_keys SET status, location, body
    COMMIT
    not inserted: SELECT the stored row; same hash -> replay status, Location and body exactly; else 409

Why it is correct: the key row, the order and the stock change commit together, so a crash leaves all
or nothing. A concurrent retry's INSERT blocks on the key's unique index until the first transaction
ends: if it committed, ON CONFLICT does nothing and the SELECT (a new statement, a new snapshot) sees the
stored answer; if it died, the retry's row goes in and it executes, once.
"""
import hashlib
import json
import logging
import os
import signal
import sys

import psycopg
from flask import Flask, Response, request

DATABASE_URL = os.environ["DATABASE_URL"]
app = Flask(__name__)


def answer(status, body, location=None):
    """A JSON answer with `body` sent exactly as given (a stored body is replayed byte for byte)."""
    headers = {"Location": location} if location else {}
    return Response(body, status=status, headers=headers, content_type="application/json")


def error(status, message):
    return answer(status, json.dumps({"error": message}, separators=(",", ":")))


def parse_order(raw):
    """The body's fields and its canonical hash, or None when it is not a valid order."""
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    for name in ("ref", "customer", "sku"):
        if not isinstance(body.get(name), str) or "\0" in body[name]:
            return None
    for name in ("qty", "amount"):
        if type(body.get(name)) is not int:  # bool is an int subclass; 3.0 is no integer
            return None
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return body, hashlib.sha256(canonical.encode()).hexdigest()


@app.get("/healthz")
def healthz():
    return Response("ok", status=200, content_type="text/plain")


@app.post("/orders")
def create_order():
    key = request.headers.get("Idempotency-Key", "")
    if key == "":
        return error(400, "Idempotency-Key required")
    parsed = parse_order(request.get_data())
    if parsed is None:
        return error(400, "invalid body")
    order, request_hash = parsed
    try:
        with psycopg.connect(DATABASE_URL, autocommit=True) as conn:
            with conn.transaction():
                cur = conn.execute(
                    "INSERT INTO idempotency_keys(key, request_hash) VALUES (%s, %s) "
                    "ON CONFLICT (key) DO NOTHING RETURNING key",
                    (key, request_hash),
                )
                if cur.fetchone() is not None:
                    order_id = conn.execute(
                        "INSERT INTO orders(ref, customer, sku, qty, amount) "
                        "VALUES (%s, %s, %s, %s, %s) RETURNING id",
                        (order["ref"], order["customer"], order["sku"], order["qty"], order["amount"]),
                    ).fetchone()[0]
                    conn.execute("UPDATE stock SET qty = qty - %s WHERE sku = %s", (order["qty"], order["sku"]))
                    body = json.dumps(
                        {"id": order_id, "ref": order["ref"], "customer": order["customer"], "sku": order["sku"],
                         "qty": order["qty"], "amount": order["amount"], "status": "created"},
                        separators=(",", ":"),
                    )
                    location = f"/orders/{order_id}"
                    conn.execute(
                        "UPDATE idempotency_keys SET status = %s, location = %s, body = %s WHERE key = %s",
                        (201, location, body, key),
                    )
                    created = (201, body, location)
                else:
                    created = None
            if created is not None:  # answered only once COMMIT returned
                return answer(*created)
            row = conn.execute(
                "SELECT request_hash, status, location, body FROM idempotency_keys WHERE key = %s", (key,)
            ).fetchone()
    except psycopg.Error as e:  # a lost connection, an ambiguous COMMIT, a server error: not stored
        print(f"py-orders: 503: {' '.join(str(e).split())}", file=sys.stderr, flush=True)
        return error(503, "database unavailable")
    if row is None or row[1] is None:  # cannot happen: the row commits with its answer, nothing deletes it
        return error(500, "key row without an answer")
    stored_hash, status, location, body = row
    if stored_hash != request_hash:
        return error(409, "idempotency key reused with a different payload")
    return answer(status, body, location)


if __name__ == "__main__":
    # SIGTERM: exit 0 at once (a transaction in flight dies with its connection, as after a kill).
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    # One line per request from werkzeug would be most of the log; keep its warnings and errors.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    if os.environ.get("STARTUP_CHECK") == "1":
        # As Django's runserver checks its migrations before it listens (tests/targets/py-orders-startup-check):
        # one query on a connection of its own, closed before the server serves.
        with psycopg.connect(DATABASE_URL, autocommit=True) as conn:
            conn.execute("SELECT c.relname FROM pg_catalog.pg_class c WHERE c.relname = 'idempotency_keys'").fetchall()
    print(f"py-orders: listening on 127.0.0.1:{os.environ['PORT']}", file=sys.stderr, flush=True)
    app.run(host="127.0.0.1", port=int(os.environ["PORT"]), threaded=True)
