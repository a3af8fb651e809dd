#include "supervisor/sink_server.h"

#include "supervisor/http_body.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace idem {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace sink_detail { // named: SinkServer::Impl holds these (an anonymous namespace would warn in a unity build)

struct Session;

/// A key's first answer, replayed to a later call with the key and the same payload.
struct Stored {
  std::string digest;
  int status = 0;
  std::string body;
  int execution = 0;
};

/// What the sink answers one call, and what it records of it.
struct Answer {
  int status = 200;
  std::string body;
  bool replayed = false;
};

/// `v` with "{execution}" and "{ref}" replaced in every string it holds.
nlohmann::json substitute(const nlohmann::json& v, int execution, const std::string& ref) {
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"{execution}", std::to_string(execution)},
                                   std::pair<std::string, std::string>{"{ref}", ref}}) {
      for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
    }
    return s;
  }
  if (v.is_object() || v.is_array()) {
    nlohmann::json out = v;
    for (auto it = out.begin(); it != out.end(); ++it) *it = substitute(*it, execution, ref);
    return out;
  }
  return v;
}

std::string errorBody(const std::string& text) { return nlohmann::json{{"error", text}}.dump(); }

} // namespace sink_detail

using sink_detail::Answer;
using sink_detail::Session;
using sink_detail::Stored;

struct SinkServer::Impl {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  tcp::acceptor acceptor{io, tcp::endpoint(asio::ip::address_v4::loopback(), 0)};
  std::thread thread;

  std::mutex mu; // what follows: set by reset() on any thread, read by the sessions on the I/O thread
  SinkSpec spec;
  bool honour = true;
  History* history = nullptr;
  std::map<std::string, Stored> keys;
  int calls = 0, executions = 0;
  uint64_t generation = 0; ///< reset() count: a session of an older schedule is closed

  std::set<std::shared_ptr<Session>> sessions; // I/O thread only

  void accept();
  /// Decides the answer to `req` and records the call; under `mu`.
  Answer decide(const http::request<http::string_body>& req);
};

namespace sink_detail {

/// One keep-alive connection: read a request, answer it, again.
struct Session : std::enable_shared_from_this<Session> {
  SinkServer::Impl& sink;
  tcp::socket socket;
  beast::flat_buffer buffer;
  http::request<http::string_body> req;
  http::response<http::string_body> res;
  uint64_t generation;

  Session(SinkServer::Impl& s, tcp::socket sock, uint64_t g) : sink(s), socket(std::move(sock)), generation(g) {}

  void read() {
    req = {};
    http::async_read(socket, buffer, req, [self = shared_from_this()](beast::error_code e, size_t) {
      if (e) return self->close();
      self->answer();
    });
  }

  void answer() {
    Answer a;
    {
      std::lock_guard<std::mutex> lock(sink.mu);
      if (generation != sink.generation) return close(); // a call of an earlier schedule's process
      a = sink.decide(req);
    }
    res = {};
    res.version(11);
    res.result(static_cast<unsigned>(a.status));
    res.set(http::field::content_type, "application/json");
    if (a.replayed) res.set("Idempotent-Replayed", "true");
    res.body() = std::move(a.body);
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    http::async_write(socket, res, [self = shared_from_this()](beast::error_code e, size_t) {
      if (e || !self->res.keep_alive()) return self->close();
      self->read();
    });
  }

  void close() {
    beast::error_code ignore;
    socket.shutdown(tcp::socket::shutdown_both, ignore);
    socket.close(ignore);
    sink.sessions.erase(shared_from_this());
  }
};

} // namespace sink_detail

void SinkServer::Impl::accept() {
  acceptor.async_accept([this](beast::error_code e, tcp::socket sock) {
    if (e) return; // closed
    boost::system::error_code ignore;
    sock.set_option(tcp::no_delay(true), ignore);
    uint64_t g;
    {
      std::lock_guard<std::mutex> lock(mu);
      g = generation;
    }
    auto s = std::make_shared<Session>(*this, std::move(sock), g);
    sessions.insert(s);
    s->read();
    accept();
  });
}

Answer SinkServer::Impl::decide(const http::request<http::string_body>& req) {
  ops::Call c;
  c.id = ++calls;
  c.method = std::string(req.method_string());
  c.path = std::string(req.target());
  auto key = req.find(spec.keyHeader);
  c.keyHeader = key != req.end();
  if (c.keyHeader) c.key = std::string(key->value());
  const auto body = nlohmann::json::parse(req.body(), nullptr, false);
  if (!body.is_discarded() && body.is_object() && body.contains(spec.ref)) {
    const auto& r = body[spec.ref];
    c.ref = r.is_string() ? r.get<std::string>() : r.dump();
  }
  c.digest = fnv64Hex(req.body());
  Answer a;
  if (c.method != spec.method || c.path != spec.path) {
    a = {404, sink_detail::errorBody("no such call: the provider answers " + spec.method + " " + spec.path), false};
    c.outcome = "rejected";
  } else if (c.ref.empty()) {
    a = {400, sink_detail::errorBody("the body has no '" + spec.ref + "' member"), false};
    c.outcome = "rejected";
  } else if (honour && c.keyHeader && keys.count(c.key)) {
    const Stored& s = keys.at(c.key);
    if (s.digest == c.digest) {
      a = {s.status, s.body, true};
      c.outcome = "replayed";
      c.execution = s.execution;
    } else {
      a = {spec.mismatch, sink_detail::errorBody("the key was used with another payload"), false};
      c.outcome = "mismatch";
    }
  } else {
    c.execution = ++executions;
    c.outcome = "executed";
    a = {spec.status, sink_detail::substitute(spec.answer, c.execution, c.ref).dump(), false};
    if (honour && c.keyHeader) keys[c.key] = Stored{c.digest, a.status, a.body, c.execution};
  }
  c.status = a.status;
  if (history) history->append("sink", std::move(c)); // before the answer leaves
  return a;
}

SinkServer::SinkServer() : impl_(std::make_unique<Impl>()) {
  impl_->accept();
  impl_->thread = std::thread([this] { impl_->io.run(); });
}

SinkServer::~SinkServer() {
  asio::post(impl_->io, [this] {
    boost::system::error_code ignore;
    impl_->acceptor.close(ignore);
    auto sessions = impl_->sessions;
    for (const auto& s : sessions) s->close();
  });
  impl_->work.reset();
  impl_->thread.join();
}

int SinkServer::port() const { return impl_->acceptor.local_endpoint().port(); }

void SinkServer::reset(const SinkSpec& spec, bool honourKeys, History* history) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->spec = spec;
    impl_->honour = honourKeys;
    impl_->history = history;
    impl_->keys.clear();
    impl_->calls = impl_->executions = 0;
    ++impl_->generation;
  }
  // The previous schedule's connections: closed on the I/O thread (a session of an older generation that
  // still reads closes itself at its next request).
  asio::post(impl_->io, [this] {
    uint64_t now;
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      now = impl_->generation;
    }
    auto sessions = impl_->sessions;
    for (const auto& s : sessions)
      if (s->generation != now) s->close();
  });
}

void SinkServer::detach() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->history = nullptr;
}

} // namespace idem
