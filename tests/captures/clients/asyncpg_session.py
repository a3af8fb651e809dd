"""A consumer's PostgreSQL session through asyncpg (Debian python3-asyncpg 0.27), for tests/captures/asyncpg
(run by ../record.sh): the binary protocol, named statements that asyncpg prepares itself (Parse and
Describe under one Sync, then Bind and Execute under another), a transaction, an error inside a second
one, and executemany (one Bind/Execute per row under a single Sync)."""
import asyncio
import sys

import asyncpg


async def main(port):
    c = await asyncpg.connect(host="127.0.0.1", port=port, user="postgres", database="postgres", ssl=False)
    async with c.transaction():
        status = await c.execute("INSERT INTO processed(msg_id) VALUES ($1) ON CONFLICT DO NOTHING", "asyncpg-1")
        assert status == "INSERT 0 1", status
        await c.execute("UPDATE accounts SET balance = balance + $1 WHERE id = $2", 5, 1)
        await c.execute("UPDATE accounts SET balance = balance + $1 WHERE id = $2", 5, 1)  # from its cache
    try:
        async with c.transaction():
            await c.fetchval("SELECT 1 / $1::int", 0)
    except asyncpg.DivisionByZeroError:
        pass
    await c.executemany("INSERT INTO processed(msg_id) VALUES ($1) ON CONFLICT DO NOTHING",
                        [("asyncpg-2",), ("asyncpg-3",), ("asyncpg-1",)])
    await c.close()


asyncio.run(main(int(sys.argv[1])))
