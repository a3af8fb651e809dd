// A consumer's PostgreSQL session through libpq, for tests/captures/libpq (built by ../record.sh).
// Simple queries, an unnamed extended query, a named prepared statement, an error, and two pipelines:
// one of Flush-ended groups whose second statement fails, one of four statements under one Sync.
#include <libpq-fe.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

PGconn* conn;

void check(PGresult* r, const char* what) {
  const auto st = PQresultStatus(r);
  std::printf("%s: %s %s\n", what, PQresStatus(st), PQcmdStatus(r));
  PQclear(r);
}

void drainPipeline(int results) {
  for (int i = 0, nulls = 0; i < results && nulls < 100;) {
    PGresult* r = PQgetResult(conn);
    if (r == nullptr) { // the end of one query's results
      ++nulls;
      continue;
    }
    check(r, "pipeline");
    ++i;
  }
}

} // namespace

int main(int argc, char** argv) {
  const std::string info = std::string("host=127.0.0.1 dbname=postgres user=postgres port=") + argv[1];
  conn = PQconnectdb(info.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    std::fprintf(stderr, "%s", PQerrorMessage(conn));
    return 1;
  }
  const char* insert = "INSERT INTO processed(msg_id) VALUES ($1) ON CONFLICT DO NOTHING";
  const char* update = "UPDATE accounts SET balance = balance + $1 WHERE id = $2";
  const char* m1[] = {"libpq-1"};
  const char* upd[] = {"10", "1"};
  check(PQexec(conn, "BEGIN"), "begin");
  check(PQexecParams(conn, insert, 1, nullptr, m1, nullptr, nullptr, 0), "insert");
  check(PQprepare(conn, "upd", update, 2, nullptr), "prepare");
  check(PQexecPrepared(conn, "upd", 2, upd, nullptr, nullptr, 0), "update");
  check(PQexec(conn, "COMMIT"), "commit");
  check(PQexec(conn, "SELECT 1/0"), "error");

  // Pipeline 1: INSERT, Flush; SELECT 1/0, Flush; UPDATE, Flush; Sync. The server skips the UPDATE.
  const char* m2[] = {"libpq-2"};
  PQenterPipelineMode(conn);
  PQsendQueryParams(conn, insert, 1, nullptr, m2, nullptr, nullptr, 0);
  PQsendFlushRequest(conn);
  PQsendQueryParams(conn, "SELECT 1/0", 0, nullptr, nullptr, nullptr, nullptr, 0);
  PQsendFlushRequest(conn);
  PQsendQueryPrepared(conn, "upd", 2, upd, nullptr, nullptr, 0);
  PQsendFlushRequest(conn);
  PQpipelineSync(conn);
  while (PQflush(conn) > 0) {
  }
  drainPipeline(4); // insert, error, skipped update (PGRES_PIPELINE_ABORTED), sync

  // Pipeline 2: BEGIN, INSERT, UPDATE, COMMIT under one Sync.
  const char* m3[] = {"libpq-3"};
  PQsendQueryParams(conn, "BEGIN", 0, nullptr, nullptr, nullptr, nullptr, 0);
  PQsendQueryParams(conn, insert, 1, nullptr, m3, nullptr, nullptr, 0);
  PQsendQueryPrepared(conn, "upd", 2, upd, nullptr, nullptr, 0);
  PQsendQueryParams(conn, "COMMIT", 0, nullptr, nullptr, nullptr, nullptr, 0);
  PQpipelineSync(conn);
  drainPipeline(5);
  PQexitPipelineMode(conn);
  PQfinish(conn);
  return 0;
}
