"""py-orders-valkey: POST /orders with an Idempotency-Key kept in Valkey, the order in PostgreSQL.

Per request (Flask 2.2, redis-py 4.3, psycopg 3, each on the VALKEY_URL and DATABASE_URL idemproof gives):

    SET idem:<key> {"hash": ...} NX PX $IDEMPOTENCY_LEASE_MS      the key taken, for the lease
      taken before: GET idem:<key> -> another hash 422, no answer yet 409, else the stored answer
    BEGIN; INSERT the order; UPDATE stock; COMMIT
    SET idem:<key> {"hash", "status", "body", "location"}          the answer stored, no expiry
    on any error: DEL idem:<key>, answer 503 (the client retries)

The key and the effect live in two stores, so they can come apart: when the SET that stores the answer
is applied but its reply is lost (drop:after:SET#2), the server believes it failed, deletes the key and
answers 503; the client's retry finds no key and orders again (double-effect). Faults before the order
(an error or a restart of Valkey at the first SET) are ridden out.
"""
import hashlib
import json
import os
import sys

import psycopg
import redis
from flask import Flask, Response, request

app = Flask(__name__)
VALKEY = redis.Redis.from_url(os.environ["VALKEY_URL"])
LEASE_MS = int(os.environ.get("IDEMPOTENCY_LEASE_MS", "2000"))


def answer(status, body, location=None):
    headers = {"Location": location} if location else {}
    return Response(body, status=status, headers=headers, content_type="application/json")


def error(status, message):
    return answer(status, json.dumps({"error": message}, separators=(",", ":")))


@app.get("/healthz")
def healthz():
    return Response("ok", status=200, content_type="text/plain")


@app.post("/orders")
def create_order():
    raw = request.headers.get("Idempotency-Key", "")
    if len(raw) < 3 or raw[0] != '"' or raw[-1] != '"':
        return error(400, "Idempotency-Key required (an sf-string)")
    name = "idem:" + raw[1:-1]
    order = json.loads(request.get_data())
    request_hash = hashlib.sha256(json.dumps(order, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    try:
        if not VALKEY.set(name, json.dumps({"hash": request_hash}), nx=True, px=LEASE_MS):
            stored = json.loads(VALKEY.get(name) or "{}")
            if stored.get("hash") != request_hash:
                return error(422, "idempotency key reused with a different payload")
            if "status" not in stored:
                return error(409, "request in progress")
            return answer(stored["status"], stored["body"], stored["location"])
        with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
            with conn.transaction():
                order_id = conn.execute(
                    "INSERT INTO orders(ref, customer, sku, qty, amount) VALUES (%s, %s, %s, %s, %s) RETURNING id",
                    (order["ref"], order["customer"], order["sku"], order["qty"], order["amount"]),
                ).fetchone()[0]
                conn.execute("UPDATE stock SET qty = qty - %s WHERE sku = %s", (order["qty"], order["sku"]))
        body = json.dumps({"id": order_id, "ref": order["ref"], "status": "created"}, separators=(",", ":"))
        location = f"/orders/{order_id}"
        VALKEY.set(name, json.dumps({"hash": request_hash, "status": 201, "body": body, "location": location}))
        return answer(201, body, location)
    except (psycopg.Error, redis.RedisError) as e:
        print(f"py-orders-valkey: 503: {' '.join(str(e).split())}", file=sys.stderr, flush=True)
        try:
            VALKEY.delete(name)
        except redis.RedisError:
            pass
        return error(503, "unavailable")


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=int(os.environ["PORT"]), threaded=True)
