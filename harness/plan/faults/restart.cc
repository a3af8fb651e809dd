/// restart: restart a server at the step, while the step waits: `restart:after:COMMIT#2:pg` restarts
/// PostgreSQL with a fast shutdown (open transactions roll back, every connection drops), `…:valkey`
/// restarts Valkey with its data kept (saved right before the stop: streams, groups, pending lists), `…:kafka`
/// the embedded Kafka broker (every connection closed, back with its topics, records and committed offsets),
/// `…:rabbitmq` the command's RabbitMQ node (stopped and started again with its durable queues and persistent
/// messages).
/// The consumers live on: each must reconnect, or exit and be restarted; either way the run goes on. Needs
/// the embedded servers, one set per worker (docs/faults.md).
#include "plan/faults/kinds.h"

#include "core/error.h"

#include <fmt/format.h>

namespace idem::faults {

namespace {

class Restart : public FaultKind {
public:
  std::string name() const override { return "restart"; }
  std::string usage() const override {
    return "restart:before|after:VERB#k:pg|valkey|kafka|nats|rabbitmq   restart the server (PostgreSQL: fast "
           "shutdown; the others: data kept)";
  }
  void check(const Fault& f, const std::string& what) const override {
    requireArgs(f, 1, what, "restart:before|after:VERB#k:pg|valkey|kafka|nats|rabbitmq");
    if (f.args[0] != "pg" && f.args[0] != "valkey" && f.args[0] != "kafka" && f.args[0] != "nats" &&
        f.args[0] != "rabbitmq")
      throw UsageError(fmt::format("{}: a restart names its server, pg, valkey, kafka, nats or rabbitmq (not '{}')",
                                   what, f.args[0]));
  }
  Effect effect(const Fault& f) const override {
    return Effect{Effect::Action::Restart, {}, {}, {}, f.args[0], false};
  }
  int weight() const override { return 2; } // every connection drops: as a drop, for every process
  /// An HTTP server's PostgreSQL (or its Valkey) restarts under it as under a consumer.
  bool atHttpServer() const override { return true; }
  /// The server of the swept step restarts.
  std::optional<Fault> sweptAt(const Fault& point, const std::string& server, int) const override {
    if (server == "sink") return std::nullopt; // idemproof's own server: nothing of the target's to restart
    Fault f = point;
    f.kind = "restart";
    f.args = {server};
    return f;
  }
  std::string phrase(const Fault& f, const std::string&,
                     const std::function<std::string(const std::string&)>& title) const override {
    return title(f.args.at(0)) + " restarted at " + f.str();
  }
  /// One class per server: PostgreSQL's restart drops every transaction, a broker's keeps its data.
  FaultClass sweepClass(const Fault& f) const override {
    const std::string server = f.args.empty() ? "valkey" : f.args[0];
    if (server == "pg")
      return {"restart:pg", "PostgreSQL restarted",
              "restart:before|after:VERB#k:pg at PostgreSQL steps: fast shutdown, every connection drops"};
    const std::string title = serverTitle(server);
    return {"restart:" + server, title + " restarted",
            fmt::format("restart:before|after:VERB#k:{} at {} steps: restarted with its data, connections drop", server,
                        title)};
  }
};

} // namespace

std::unique_ptr<FaultKind> makeRestart() { return std::make_unique<Restart>(); }

} // namespace idem::faults
