// kafka_test_member BOOTSTRAP TOPIC GROUP: a librdkafka consumer that joins GROUP on TOPIC
// (session.timeout.ms 6000), prints its member id on stdout once it has an assignment, and polls until it
// is killed. client_test.cc kills it with SIGKILL, so that it never leaves the group itself.
#include <librdkafka/rdkafka.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: kafka_test_member BOOTSTRAP TOPIC GROUP\n");
    return 2;
  }
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  const char* settings[][2] = {{"bootstrap.servers", argv[1]}, {"group.id", argv[3]},
                               {"client.id", "killed-member"}, {"session.timeout.ms", "6000"},
                               {"heartbeat.interval.ms", "500"}, {"enable.auto.commit", "false"},
                               {"log_level", "3"}};
  for (const auto& s : settings) {
    if (rd_kafka_conf_set(conf, s[0], s[1], err, sizeof err) != RD_KAFKA_CONF_OK) {
      std::fprintf(stderr, "%s\n", err);
      return 2;
    }
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (!rk) {
    std::fprintf(stderr, "%s\n", err);
    return 2;
  }
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, argv[2], RD_KAFKA_PARTITION_UA);
  rd_kafka_subscribe(rk, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  bool told = false;
  while (true) {
    if (rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 50)) rd_kafka_message_destroy(m);
    if (told) continue;
    rd_kafka_topic_partition_list_t* assigned = nullptr;
    if (rd_kafka_assignment(rk, &assigned) == RD_KAFKA_RESP_ERR_NO_ERROR && assigned->cnt > 0) {
      char* member = rd_kafka_memberid(rk);
      std::printf("%s %d\n", member, assigned->cnt);
      std::fflush(stdout);
      rd_kafka_mem_free(rk, member);
      told = true;
    }
    if (assigned) rd_kafka_topic_partition_list_destroy(assigned);
  }
}
