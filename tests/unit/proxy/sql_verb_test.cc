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
  CHECK(sqlDetail(std::string("SELECT '\x01'")) == "SELECT '\\x01'");
  const std::string long_sql = "SELECT " + std::string(1000, 'x');
  const std::string d = sqlDetail(long_sql);
  CHECK(d.size() == 200);
  CHECK(d.substr(197) == "...");
}
