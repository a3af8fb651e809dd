/// External servers at scale: two idemproof processes (two machines, or two pods of an Indexed Job), each
/// with --workers 4, share one PostgreSQL and one Valkey/Redis that the test starts. Each worker makes a
/// schema and a stream of its own, named by its process's pid, a random word of the process and the
/// worker, so the eight workers never touch each other's tables, streams or keys (with the decodable
/// values of generated schedules, a row or an entry of another worker would be a phantom or a wrong sum:
/// a failure), and at the end nothing of theirs is left on the servers. Run as root, each process runs in
/// a PID namespace of its own, where it is pid 1 like the idemproof of every pod: the pid alone would
/// give both processes the same schema names.
#include "support.h"

#include "servers/servers.h"
#include "brokers/valkey/admin.h"
#include "supervisor/admin.h"

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <boost/process.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include <unistd.h>

using namespace itest;

namespace {

std::vector<std::string> schemas(const std::string& url) {
  std::vector<std::string> out;
  for (const auto& row : idem::PgAdmin(url).query("SELECT nspname FROM pg_namespace ORDER BY 1"))
    out.push_back(row[0].get<std::string>());
  return out;
}

/// idemproof ARGS --report DIR in a PID namespace of its own (as pid 1) when root, else as a plain child.
Result inOwnPidNamespace(std::vector<std::string> args, const std::string& tag) {
  namespace bp = boost::process;
  Result r;
  r.tag = tag;
  auto dir = std::filesystem::temp_directory_path() / ("itest-ext-" + tag);
  std::filesystem::create_directories(dir);
  r.reportDir = dir / "report";
  r.tmpRoot = freshTmpRoot(tag);
  args.insert(args.end(), {"--report", r.reportDir.string()});
  std::vector<std::string> argv;
  if (::geteuid() == 0) argv = {"/usr/bin/unshare", "--pid", "--fork"};
  argv.push_back((build() / "idemproof").string());
  argv.insert(argv.end(), args.begin(), args.end());
  bp::environment env = boost::this_process::environment();
  env["IDEMPROOF_TEST_TAG"] = tag;
  env["IDEMPROOF_TMPDIR"] = r.tmpRoot.string();
  bp::child c(argv.front(), bp::args(std::vector<std::string>(argv.begin() + 1, argv.end())),
              bp::std_out > (dir / "out").string(), bp::std_err > (dir / "err").string(), bp::std_in < bp::null, env,
              bp::start_dir(repo().string()));
  c.wait();
  r.status = c.exit_code();
  auto read = [](const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  r.out = read(dir / "out");
  r.err = read(dir / "err");
  if (std::filesystem::exists(r.reportDir / "report.json")) r.report = nlohmann::json::parse(read(r.reportDir / "report.json"));
  return r;
}

} // namespace

TEST_CASE("external servers: two processes of 4 workers each share one PostgreSQL and one Valkey and leave nothing "
          "behind", "[external][two-cores]") {
  auto servers = idem::EmbeddedServers::start(); // the "external" servers, started by the test
  const auto& e = servers->endpoints();
  std::string dbUrl = fmt::format("postgresql://{}:{}@{}:{}/{}", e.pg_user, e.pg_password, e.pg_host, e.pg_port, e.pg_database);
  std::string valkeyUrl = fmt::format("redis://:{}@{}:{}/0", e.valkey_password, e.valkey_host, e.valkey_port);
  idem::ValkeyAdmin valkey(e.valkey_host, e.valkey_port, e.valkey_password, 0);
  const auto schemasBefore = schemas(dbUrl);
  const auto keysBefore = valkey.command({"KEYS", "*"});

  std::vector<Result> results(2);
  std::vector<std::thread> threads;
  for (int p = 0; p < 2; ++p)
    threads.emplace_back([&, p] {
      results[static_cast<size_t>(p)] = inOwnPidNamespace(
          {"check", "--target", target("dedup-table"), "--scenario", "wallet", "--runs", "12", "--max-events", "3",
                     "--consumers", "1", "--seed", std::to_string(11 + p), "--workers", "4", "--database-url", dbUrl,
                     "--valkey-url", valkeyUrl},
          fmt::format("ext{}-{}", p, ::getpid()));
    });
  for (auto& t : threads) t.join();

  for (const auto& r : results) {
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.report["verdict"] == "pass");
    CHECK(r.report["servers"]["embedded"] == false);
    CHECK(r.report["options"]["workers"] == 4);
    CHECK(r.report["check"]["passed"] == 12);
    CHECK(leftovers(r.tag).empty());
    for (const auto& d : tempDirsIn(r.tmpRoot)) UNSCOPED_INFO("left behind: " << d);
    CHECK(tempDirsIn(r.tmpRoot).empty());
    std::error_code ec;
    std::filesystem::remove(r.tmpRoot, ec); // the call's own root, when it is empty
  }
  CHECK(schemas(dbUrl) == schemasBefore);          // every idemproof_* schema dropped
  CHECK(valkey.command({"KEYS", "*"}) == keysBefore); // every stream deleted
}
