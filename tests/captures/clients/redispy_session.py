"""A consumer's Redis session through redis-py 4.3 (RESP2), for tests/captures/redis-py (run by
../record.sh): SET NX, a consumer group, entries, a blocking read, XAUTOCLAIM, XACK, and pipelines
with and without MULTI/EXEC."""
import sys

import redis

r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]), single_connection_client=True)
r.set("lock:py", "owner", nx=True, px=30000)
r.xgroup_create("orders", "workers", id="$", mkstream=True)
ids = [r.xadd("orders", {"order": str(i), "amount": str(10 * i)}) for i in (1, 2)]
r.xreadgroup("workers", "c1", {"orders": ">"}, count=10, block=1000)
r.xautoclaim("orders", "workers", "c2", min_idle_time=0, start_id="0-0", count=10)
r.xack("orders", "workers", *ids)
r.xreadgroup("workers", "c1", {"orders": ">"}, count=10, block=50)
with r.pipeline(transaction=False) as p:
    p.xadd("orders", {"order": "3"})
    p.set("done:3", "1", nx=True)
    p.get("done:3")
    p.execute()
with r.pipeline(transaction=True) as p:
    p.incr("balance:1", 10)
    p.set("done:4", "1", nx=True)
    p.execute()
r.close()
