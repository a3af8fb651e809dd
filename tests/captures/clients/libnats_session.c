/* A JetStream pull consumer session on libnats 3.4.1 (tests/captures/README.md), through the relay on
 * port argv[1] of a nats-server with token s3cret. As the harness's producer and a consumer would: a
 * stream `payments` (subject payments.>) and a durable pull consumer `workers`, three JSON messages with
 * an event_id header; then one message per fetch: the first acked, the second NAKed, the third marked in
 * progress and acked synchronously, the second again (the server redelivers a NAKed message after those
 * waiting) terminated; a fetch with nothing left (408); a plain publish. */
#include <nats/nats.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(x)                                                                                           \
  do {                                                                                                     \
    natsStatus s_ = (x);                                                                                   \
    if (s_ != NATS_OK) {                                                                                   \
      fprintf(stderr, "%s: %s (%s)\n", #x, natsStatus_GetText(s_), nats_GetLastError(NULL));               \
      exit(1);                                                                                             \
    }                                                                                                      \
  } while (0)

static natsMsg *fetchOne(natsSubscription *sub) {
  natsMsgList list = {NULL, 0};
  jsErrCode jerr = 0;
  CHECK(natsSubscription_Fetch(&list, sub, 1, 2000, &jerr));
  natsMsg *m = list.Msgs[0];
  list.Msgs[0] = NULL;
  natsMsgList_Destroy(&list);
  return m;
}

int main(int argc, char **argv) {
  char url[128];
  snprintf(url, sizeof url, "nats://s3cret@127.0.0.1:%s", argc > 1 ? argv[1] : "4222");
  natsConnection *nc = NULL;
  jsCtx *js = NULL;
  jsErrCode jerr = 0;
  CHECK(natsConnection_ConnectTo(&nc, url));
  CHECK(natsConnection_JetStream(&js, nc, NULL));

  jsStreamConfig sc;
  jsStreamConfig_Init(&sc);
  const char *subjects[] = {"payments.>"};
  sc.Name = "payments";
  sc.Subjects = subjects;
  sc.SubjectsLen = 1;
  CHECK(js_AddStream(NULL, js, &sc, NULL, &jerr));
  jsConsumerConfig cc;
  jsConsumerConfig_Init(&cc);
  cc.Durable = "workers";
  cc.AckPolicy = js_AckExplicit;
  cc.AckWait = (int64_t)30 * 1000 * 1000 * 1000;
  CHECK(js_AddConsumer(NULL, js, "payments", &cc, NULL, &jerr));

  for (int i = 1; i <= 3; ++i) {
    char body[128], id[16];
    snprintf(body, sizeof body, "{\"n\":\"%d\",\"wallet\":\"w%d\",\"amount\":\"5000\"}", i, i);
    snprintf(id, sizeof id, "e-%d", i);
    natsMsg *m = NULL;
    CHECK(natsMsg_Create(&m, "payments.w1", NULL, body, (int)strlen(body)));
    CHECK(natsMsgHeader_Set(m, "event_id", id));
    CHECK(js_PublishMsg(NULL, js, m, NULL, &jerr));
    natsMsg_Destroy(m);
  }

  natsSubscription *sub = NULL;
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = "payments";
  so.Consumer = "workers";
  CHECK(js_PullSubscribe(&sub, js, "payments.>", "workers", NULL, &so, &jerr));
  natsMsg *m = fetchOne(sub);
  CHECK(natsMsg_Ack(m, NULL));
  natsMsg_Destroy(m);
  m = fetchOne(sub);
  CHECK(natsMsg_Nak(m, NULL));
  natsMsg_Destroy(m);
  m = fetchOne(sub);
  CHECK(natsMsg_InProgress(m, NULL));
  CHECK(natsMsg_AckSync(m, NULL, &jerr));
  natsMsg_Destroy(m);
  m = fetchOne(sub); /* the NAKed one again */
  CHECK(natsMsg_Term(m, NULL));
  natsMsg_Destroy(m);
  natsMsgList list = {NULL, 0};
  if (natsSubscription_Fetch(&list, sub, 1, 300, &jerr) != NATS_TIMEOUT) {
    fprintf(stderr, "a fourth message\n");
    return 1;
  }
  CHECK(natsConnection_PublishString(nc, "audit.done", "3 handled"));
  CHECK(natsConnection_Flush(nc));
  natsSubscription_Destroy(sub);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  return 0;
}
