// A consumer's PostgreSQL session through pgx v4 (Debian golang-github-jackc-pgx-v4-dev), for
// tests/captures/pgx (run by ../record.sh): its statement cache (Parse and Describe of a named statement
// under one Sync, then Bind and Execute with binary parameters under another), a transaction, an error,
// and a Batch (every statement's Parse/Describe, then their Bind/Execute, under one Sync).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v4"
)

func main() {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable", os.Args[1]))
	if err != nil {
		panic(err)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		panic(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO processed(msg_id) VALUES ($1) ON CONFLICT DO NOTHING", "pgx-1"); err != nil {
		panic(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := tx.Exec(ctx, "UPDATE accounts SET balance = balance + $1 WHERE id = $2", 5, 1); err != nil {
			panic(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		panic(err)
	}
	var x int
	if err := c.QueryRow(ctx, "SELECT 1 / $1::int", 0).Scan(&x); err == nil {
		panic("no division by zero")
	}
	b := &pgx.Batch{}
	b.Queue("INSERT INTO processed(msg_id) VALUES ($1) ON CONFLICT DO NOTHING", "pgx-2")
	b.Queue("UPDATE accounts SET balance = balance + $1 WHERE id = $2", 1, 1)
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		panic(err)
	}
	c.Close(ctx)
}
