/* librabbitmq 0.11 against RabbitMQ, for tests/captures/librabbitmq: declares the queue, publishes two
   JSON messages with message_id and an event_id header, consumes them with basic.qos(prefetch 1) and
   acks each, then an empty basic.get, and closes. argv: PORT VHOST USER PASSWORD QUEUE
   Build: cc librabbitmq_session.c -lrabbitmq */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc != 6) return 2;
  amqp_connection_state_t c = amqp_new_connection();
  amqp_socket_t* s = amqp_tcp_socket_new(c);
  if (amqp_socket_open(s, "127.0.0.1", atoi(argv[1]))) return 1;
  if (amqp_login(c, argv[2], 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, argv[3], argv[4]).reply_type != AMQP_RESPONSE_NORMAL) return 1;
  amqp_channel_open(c, 1);
  amqp_bytes_t q = amqp_cstring_bytes(argv[5]);
  amqp_queue_declare(c, 1, q, 0, 1, 0, 0, amqp_empty_table);
  for (int i = 1; i <= 2; i++) {
    char body[64], id[8], ev[8];
    snprintf(body, sizeof body, "{\"wallet\":\"w1\",\"amount\":\"%d\"}", i);
    snprintf(id, sizeof id, "m%d", i);
    snprintf(ev, sizeof ev, "e%d", i);
    amqp_table_entry_t h = {amqp_cstring_bytes("event_id"), {AMQP_FIELD_KIND_UTF8, {0}}};
    h.value.value.bytes = amqp_cstring_bytes(ev);
    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    p._flags = AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_HEADERS_FLAG;
    p.message_id = amqp_cstring_bytes(id);
    p.delivery_mode = 2;
    p.headers.num_entries = 1;
    p.headers.entries = &h;
    amqp_basic_publish(c, 1, amqp_empty_bytes, q, 0, 0, &p, amqp_cstring_bytes(body));
  }
  amqp_basic_qos(c, 1, 0, 1, 0);
  amqp_basic_consume(c, 1, q, amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
  for (int i = 0; i < 2; i++) {
    amqp_envelope_t e;
    amqp_maybe_release_buffers(c);
    if (amqp_consume_message(c, &e, NULL, 0).reply_type != AMQP_RESPONSE_NORMAL) return 1;
    amqp_basic_ack(c, 1, e.delivery_tag, 0);
    amqp_destroy_envelope(&e);
  }
  amqp_basic_get(c, 1, q, 0);
  amqp_channel_close(c, 1, AMQP_REPLY_SUCCESS);
  amqp_connection_close(c, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(c);
  return 0;
}
