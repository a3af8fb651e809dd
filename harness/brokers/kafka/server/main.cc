// idemproof-kafka-server: the embedded Kafka broker of idemproof, a cluster of librdkafka's mock brokers
// (rdkafka_mock.h) in one process. See harness/brokers/kafka/README.md.
//
//   idemproof-kafka-server [--brokers N] [--topic NAME:PARTITIONS]... [--ready-file PATH]
//
// Each broker listens on 127.0.0.1 on a port the kernel chooses. Once they listen, the bootstrap list
// ("127.0.0.1:PORT[,127.0.0.1:PORT...]") is the first line on stdout and, with --ready-file, the content of
// that file (written whole, then renamed into place). Then commands on stdin, one per line, each answered
// by one line on stdout, "ok" or "error: <why>":
//   topic NAME PARTITIONS          create a topic (the mock does not implement CreateTopics)
//   down BROKER | up BROKER        close a broker's connections and refuse new ones / accept again (-1: all)
//   errors API_KEY ERROR...        the next requests of API_KEY fail with these errors (names or codes)
//   rtt BROKER MS                  delay every response of a broker
// End of stdin ends the commands, not the server. SIGTERM or SIGINT: the process removes its ready file
// and exits 0 at once (clients see their connections close). Nothing is written anywhere but stdout, stderr and the ready file.
#include "brokers/kafka/errors.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Options {
  int brokers = 1;
  std::vector<std::pair<std::string, int>> topics;
  std::string readyFile;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "idemproof-kafka-server: " << why
            << "\nusage: idemproof-kafka-server [--brokers N] [--topic NAME:PARTITIONS]... [--ready-file PATH]\n";
  std::exit(2);
}

int positive(const std::string& what, const std::string& s) {
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end || v < 1 || v > 100000)
    usage(what + ": '" + s + "' is not a positive integer");
  return static_cast<int>(v);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc)
      usage(a == "--brokers" || a == "--topic" || a == "--ready-file" ? a + " needs a value" : "unknown argument " + a);
    const std::string v = argv[++i];
    if (a == "--brokers") {
      o.brokers = positive("--brokers", v);
    } else if (a == "--topic") {
      const auto colon = v.rfind(':');
      if (colon == std::string::npos || colon == 0)
        usage("--topic: '" + v + "' is not NAME:PARTITIONS");
      o.topics.emplace_back(v.substr(0, colon), positive("--topic " + v, v.substr(colon + 1)));
    } else if (a == "--ready-file") {
      o.readyFile = v;
    } else {
      usage("unknown argument " + a);
    }
  }
  return o;
}

/// An error code by name ("REBALANCE_IN_PROGRESS") or number ("27").
bool errorArg(const std::string& s, rd_kafka_resp_err_t& out) {
  if (auto c = idem::kafka::errorCode(s)) {
    out = static_cast<rd_kafka_resp_err_t>(*c);
    return true;
  }
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end)
    return false;
  out = static_cast<rd_kafka_resp_err_t>(v);
  return true;
}

/// Runs one command line; returns the reply line.
std::string command(rd_kafka_mock_cluster_t* mc, const std::string& line) {
  std::istringstream in(line);
  std::string verb;
  in >> verb;
  std::vector<std::string> args;
  for (std::string a; in >> a;)
    args.push_back(a);
  const auto integer = [](const std::string& s, long& v) {
    char* end = nullptr;
    v = std::strtol(s.c_str(), &end, 10);
    return !s.empty() && !*end;
  };
  long a = 0, b = 0;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
  if (verb == "topic" && args.size() == 2 && integer(args[1], b) && b > 0) {
    err = rd_kafka_mock_topic_create(mc, args[0].c_str(), static_cast<int>(b), 1);
  } else if ((verb == "down" || verb == "up") && args.size() == 1 && integer(args[0], a)) {
    err = verb == "down" ? rd_kafka_mock_broker_set_down(mc, static_cast<int32_t>(a))
                         : rd_kafka_mock_broker_set_up(mc, static_cast<int32_t>(a));
  } else if (verb == "rtt" && args.size() == 2 && integer(args[0], a) && integer(args[1], b) && b >= 0) {
    err = rd_kafka_mock_broker_set_rtt(mc, static_cast<int32_t>(a), static_cast<int>(b));
  } else if (verb == "errors" && args.size() >= 2 && integer(args[0], a)) {
    std::vector<rd_kafka_resp_err_t> codes(args.size() - 1);
    for (size_t i = 1; i < args.size(); ++i)
      if (!errorArg(args[i], codes[i - 1]))
        return "error: '" + args[i] + "' is not a Kafka error name or code";
    rd_kafka_mock_push_request_errors_array(mc, static_cast<int16_t>(a), codes.size(), codes.data());
  } else if (verb.empty()) {
    return "error: empty command";
  } else {
    return "error: unknown command or arguments: " + line;
  }
  return err ? std::string("error: ") + rd_kafka_err2str(err) : "ok";
}

} // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  // SIGTERM and SIGINT are read from a signalfd by this thread; blocked before librdkafka starts its
  // threads, so that they inherit the mask and none of them takes the signal.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);
  const int sfd = signalfd(-1, &mask, SFD_CLOEXEC);

  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err); // errors only: the mock logs every connection
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!rk) {
    std::cerr << "idemproof-kafka-server: " << err << "\n";
    return 1;
  }
  rd_kafka_mock_cluster_t* mc = rd_kafka_mock_cluster_new(rk, o.brokers);
  if (!mc) {
    std::cerr << "idemproof-kafka-server: could not start the mock cluster (see above)\n";
    rd_kafka_destroy(rk);
    return 1;
  }
  for (const auto& [name, partitions] : o.topics) {
    if (rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(mc, name.c_str(), partitions, 1)) {
      std::cerr << "idemproof-kafka-server: topic " << name << ": " << rd_kafka_err2str(e) << "\n";
      rd_kafka_mock_cluster_destroy(mc);
      rd_kafka_destroy(rk);
      return 1;
    }
  }
  const std::string bootstraps = rd_kafka_mock_cluster_bootstraps(mc);
  if (!o.readyFile.empty()) {
    const std::string tmp = o.readyFile + ".tmp";
    std::ofstream(tmp) << bootstraps << "\n";
    if (std::rename(tmp.c_str(), o.readyFile.c_str()) != 0) {
      std::cerr << "idemproof-kafka-server: --ready-file " << o.readyFile << ": " << std::strerror(errno) << "\n";
      rd_kafka_mock_cluster_destroy(mc);
      rd_kafka_destroy(rk);
      return 1;
    }
  }
  std::cout << bootstraps << std::endl;

  std::string pending;
  bool input = true;
  for (;;) {
    pollfd fds[2] = {{sfd, POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
    if (poll(fds, input ? 2 : 1, -1) < 0 && errno != EINTR)
      break;
    if (fds[0].revents & POLLIN)
      break; // SIGTERM or SIGINT
    if (input && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      char buf[4096];
      const ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
      if (n <= 0) {
        input = false; // no more commands; the cluster serves on
        continue;
      }
      pending.append(buf, static_cast<size_t>(n));
      for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1))
        std::cout << command(mc, pending.substr(0, nl)) << std::endl;
    }
  }
  // Nothing to keep and nothing on disk but the ready file: exit without destroying the cluster, whose
  // I/O thread would take up to a second to notice (its poll timeout). The kernel closes the sockets.
  if (!o.readyFile.empty())
    std::remove(o.readyFile.c_str());
  std::cout.flush();
  _exit(0);
}
