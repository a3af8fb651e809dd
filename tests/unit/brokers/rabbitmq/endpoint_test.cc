// --amqp-url: the user's RabbitMQ as RabbitMQ's URI spec writes it, and one-line errors naming the flag.
#include "brokers/rabbitmq/client/endpoint.h"

#include "core/error.h"

#include <catch2/catch.hpp>

using idem::rabbitmq::client::parseAmqpUrl;

TEST_CASE("amqp url: user, password, host, port and vhost, every part decoded") {
  auto ep = parseAmqpUrl("amqp://app:p%40ss@mq.internal:5673/orders");
  CHECK(ep.host == "mq.internal");
  CHECK(ep.port == 5673);
  CHECK(ep.user == "app");
  CHECK(ep.password == "p@ss");
  CHECK(ep.vhost == "orders");
  // The default vhost: no path, an empty one, or "/" spelt %2F; the port and guest by default.
  for (const char* url : {"amqp://h", "amqp://h/", "amqp://h/%2F"}) {
    INFO(url);
    auto d = parseAmqpUrl(url);
    CHECK(d.vhost == "/");
    CHECK(d.port == 5672);
    CHECK(d.user == "guest");
  }
}

TEST_CASE("amqp url: what it can't use is one line naming --amqp-url") {
  for (const auto& [url, says] : std::vector<std::pair<std::string, std::string>>{
           {"", "empty URL"},
           {"amqps://h/", "TLS"},
           {"http://h/", "scheme must be amqp://"},
           {"amqp:///x", "a host is required"},
           {"amqp://h:0/", "port must be 1..65535"},
           {"amqp://h/a/b", "the path must be one vhost"},
           {"amqp://h/?heartbeat=5", "query parameters"}}) {
    INFO(url);
    try {
      parseAmqpUrl(url);
      FAIL("accepted");
    } catch (const idem::UsageError& e) {
      const std::string what = e.what();
      CHECK(what.rfind("--amqp-url: ", 0) == 0);
      CHECK(what.find(says) != std::string::npos);
      CHECK(what.find('\n') == std::string::npos);
    }
  }
}
