/* A consumer's Redis session through hiredis (RESP2), for tests/captures/hiredis (built by ../record.sh).
 * A lock with SET NX, a consumer group, three entries, a read, a deleted entry seen in the pending
 * history (nil fields), XAUTOCLAIM, XACK, an empty blocking read, an error, and a pipeline. */
#include <hiredis/hiredis.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static redisContext* c;

static redisReply* run(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  redisReply* r = redisvCommand(c, fmt, ap);
  va_end(ap);
  if (r == NULL) {
    fprintf(stderr, "hiredis: %s\n", c->errstr);
    exit(1);
  }
  return r;
}

int main(int argc, char** argv) {
  c = redisConnect("127.0.0.1", atoi(argv[1]));
  if (c == NULL || c->err)
    return 1;
  char ids[3][64];
  freeReplyObject(run("SET lock:hiredis owner NX PX 30000"));
  freeReplyObject(run("SET lock:hiredis other NX PX 30000"));
  freeReplyObject(run("XGROUP CREATE orders workers $ MKSTREAM"));
  for (int i = 0; i < 3; ++i) {
    redisReply* r = run("XADD orders * order %d amount %d", i + 1, 10 * (i + 1));
    snprintf(ids[i], sizeof ids[i], "%s", r->str);
    freeReplyObject(r);
  }
  freeReplyObject(run("XREADGROUP GROUP workers c1 COUNT 10 BLOCK 1000 STREAMS orders >"));
  freeReplyObject(run("XDEL orders %s", ids[1]));
  freeReplyObject(run("XREADGROUP GROUP workers c1 COUNT 10 STREAMS orders 0"));
  freeReplyObject(run("XAUTOCLAIM orders workers c2 0 0-0 COUNT 10"));
  freeReplyObject(run("XACK orders workers %s %s", ids[0], ids[2]));
  freeReplyObject(run("XREADGROUP GROUP workers c1 COUNT 10 BLOCK 50 STREAMS orders >"));
  freeReplyObject(run("XGROUP CREATE orders workers $"));
  redisAppendCommand(c, "XADD orders * order 4 amount 40");
  redisAppendCommand(c, "SET done:4 1 NX");
  redisAppendCommand(c, "GET done:4");
  for (int i = 0; i < 3; ++i) {
    redisReply* r;
    if (redisGetReply(c, (void**)&r) != REDIS_OK)
      return 1;
    freeReplyObject(r);
  }
  redisFree(c);
  return 0;
}
