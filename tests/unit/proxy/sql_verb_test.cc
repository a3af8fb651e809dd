// Naming SQL texts by their verb.
#include "proxy/sql_verb.h"

#include <catch2/catch.hpp>

using idem::proxy::sqlDetail;
using idem::proxy::sqlVerb;

TEST_CASE("sqlVerb: the first keyword, upper case") {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"commit", "COMMIT"},
      {"  \n\tInsert into t values (1)", "INSERT"},
      {"-- comment\nUPDATE t SET x = 1", "UPDATE"},
      {"/* a /* nested */ b */ delete from t", "DELETE"},
      {"((SELECT 1)) UNION SELECT 2", "SELECT"},
      {";; BEGIN", "BEGIN"},
      {"begin; insert into t values (1); commit", "BEGIN"},
      {"", "EMPTY"},
      {"  -- only a comment", "EMPTY"},
      {"/* unterminated", "EMPTY"},
      {"'literal'", "UNKNOWN"},
      {"WITH x AS (SELECT 1) SELECT * FROM x", "SELECT"},
      {"with recursive t(n) as (values (1) union all select n+1 from t) select * from t", "SELECT"},
      {"WITH ins AS (INSERT INTO a VALUES (1) RETURNING id) UPDATE b SET y = 1", "UPDATE"},
      {"WITH d AS MATERIALIZED (DELETE FROM a RETURNING *), e AS (SELECT 1) INSERT INTO b SELECT * FROM d", "INSERT"},
      {"WITH insert AS (SELECT 1) DELETE FROM t", "DELETE"},
      {"WITH x AS (SELECT ')' AS p, $$ ) $$ AS q, \"(\" AS r) MERGE INTO t USING x ON true WHEN MATCHED THEN DO NOTHING",
       "MERGE"},
      {"WITH t AS (SELECT 1) SEARCH DEPTH FIRST BY a SET o SELECT 1", "SELECT"},
      {"WITH x AS (SELECT 1", "WITH"},
      {"EXPLAIN ANALYZE SELECT 1", "EXPLAIN"},
      {"select$1", "SELECT$1"},
  };
  for (const auto& [sql, verb] : cases) {
    INFO(sql);
    CHECK(sqlVerb(sql) == verb);
  }
}

TEST_CASE("sqlDetail: whitespace collapsed, escaped, at most 200 bytes") {
  CHECK(sqlDetail("  SELECT\n\t1  ,\r\n 2  ") == "SELECT 1 , 2");
  // A leading comment (an ORM's or a tracer's tag) is left out: a long one would push the statement past
  // the abbreviation, and what a step is (an advisory unlock) would be lost.
  const std::string tag = "/* orders service: release the per-key lock (" + std::string(220, 'x') + ") */";
  CHECK(sqlDetail(tag + "\n -- and a line comment\n SELECT pg_advisory_unlock($1)") == "SELECT pg_advisory_unlock($1)");
  CHECK(sqlDetail("SELECT 1 /* trailing */") == "SELECT 1 /* trailing */");
  CHECK(sqlDetail(std::string("SELECT '\x01'")) == "SELECT '\\x01'");
  const std::string long_sql = "SELECT " + std::string(1000, 'x');
  const std::string d = sqlDetail(long_sql);
  CHECK(d.size() == 200);
  CHECK(d.substr(197) == "...");
}

TEST_CASE("sqlTables: the tables a statement reads or writes, for what two statements may conflict on") {
  using idem::proxy::sqlTables;
  using T = std::vector<std::string>;
  const std::vector<std::pair<const char*, T>> cases = {
      {"SELECT 1 FROM seen_events WHERE event_id = $1", {"seen_events"}},
      {"INSERT INTO seen_events (event_id) VALUES ($1)", {"seen_events"}},
      {"insert into processed_messages(event_id) values ($1) on conflict do nothing", {"processed_messages"}},
      {"UPDATE wallets SET balance_halala = balance_halala + $1 WHERE id = $2", {"wallets"}},
      {"DELETE FROM ONLY public.Outbox o USING jobs j WHERE o.id = j.id", {"jobs", "outbox"}},
      {"SELECT * FROM a x, b AS y JOIN \"Mixed\" z ON true", {"Mixed", "a", "b"}}, // quoted: as written
      {"SELECT * FROM accounts WHERE id = 1 FOR UPDATE SKIP LOCKED", {"accounts"}},
      {"INSERT INTO k (id) VALUES (1) ON CONFLICT (id) DO UPDATE SET n = k.n + 1", {"k"}},
      {"SELECT extract(year FROM created), (SELECT max(v) FROM versions) FROM orders", {"orders", "versions"}},
      {"SELECT * FROM generate_series(1, 3) g", {}},
      {"SELECT EXISTS (SELECT 1 FROM seen WHERE id = $1)", {"seen"}},
      {"WITH ins AS (INSERT INTO a VALUES (1) RETURNING id) UPDATE b SET y = 1 FROM ins", {"a", "b", "ins"}},
      {"TRUNCATE TABLE t1", {"t1"}},
      {"LOCK TABLE ledger IN EXCLUSIVE MODE", {"ledger"}},
      {"COPY items FROM STDIN", {"items"}},
      {"BEGIN", {}},
      {"COMMIT", {}},
      {"SELECT 1", {}},
      {"SELECT 'FROM fake' FROM real_one", {"real_one"}},
      {"SELECT * FROM", {}},
  };
  for (const auto& [sql, tables] : cases) {
    INFO(sql);
    CHECK(sqlTables(sql) == tables);
  }
}
