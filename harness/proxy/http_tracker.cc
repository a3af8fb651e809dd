/// The HTTP/1.1 tracker: the sink's side of a consumer (docs/steps.md, "CALL steps"). Every request is a step,
/// verb CALL; its reply is the next final answer (1xx answers are interim: they pass). Framing is Boost.Beast's
/// parsers', fed the unconsumed bytes from the message's first byte each time, so that the result depends only
/// on the bytes, however they arrive.
#include "proxy/abbrev.h"
#include "proxy/tracker.h"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <nlohmann/json.hpp>

#include <deque>
#include <optional>

namespace idem::proxy {

namespace http_tracker_detail { // named: a unity build joins this file with the other trackers

namespace http = boost::beast::http;

/// Bytes of one message's body beyond which the connection passes through unobserved (the proxy holds a
/// step's bytes whole: this bounds what one costs).
constexpr std::uint64_t kBodyLimit = 32ull << 20;
constexpr std::uint32_t kHeaderLimit = 64 << 10;

/// How far a parser got through `bytes`.
enum class Fed { Done, More, Bad };

template <class Parser>
Fed feed(Parser& p, std::string_view bytes, size_t& used) {
  used = 0;
  while (!p.is_done()) {
    boost::beast::error_code ec;
    const size_t n = p.put(boost::asio::buffer(bytes.data() + used, bytes.size() - used), ec);
    used += n;
    if (ec == http::error::need_more) return Fed::More;
    if (ec) return Fed::Bad;
    if (n == 0 && !p.is_done()) return Fed::More; // no progress: what is left is not enough
  }
  return Fed::Done;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

/// The string (or number) member `name` of a JSON object body, "" when there is none.
std::string member(const std::string& body, const std::string& name) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return {};
  auto it = j.find(name);
  if (it == j.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) return it->dump();
  return {};
}

class HttpTracker : public Tracker {
public:
  explicit HttpTracker(HttpCall call) : call_(std::move(call)) {}

  Decode onClient(std::string_view buf, ClientMsg& out) override {
    // A request whose head went on before its body (Expect: 100-continue): parsed again from its head.
    std::string whole = head_ + std::string(buf);
    http::request_parser<http::string_body> p;
    p.header_limit(kHeaderLimit);
    p.body_limit(kBodyLimit);
    size_t used = 0;
    const Fed fed = feed(p, whole, used);
    if (head_.empty() && p.is_header_done() && continued(p)) {
      // The client waits for the server's interim answer before it sends the body: the head goes on at once,
      // as a message of its own whether the body is here yet, complete, or bad (the same messages however
      // the bytes arrive).
      out.size = headerSize(whole);
      out.kind = ClientMsg::Kind::Stream;
      head_ = whole.substr(0, out.size);
      return Decode::Message;
    }
    if (fed == Fed::Bad) return Decode::Invalid;
    if (fed == Fed::More) return Decode::NeedMoreData;
    const auto& req = p.get();
    out.size = used - head_.size();
    head_.clear();
    out.kind = ClientMsg::Kind::RequestEnd;
    out.step.verb = "CALL";
    std::string detail = std::string(req.method_string()) + " " + std::string(req.target());
    // The reference first: a key may be long (255 bytes at some providers), and a detail cut short keeps
    // the event's id whole.
    const std::string ref = member(req.body(), call_.ref);
    if (!ref.empty()) detail += " ref=" + ref;
    auto key = req.find(call_.keyHeader);
    if (key != req.end()) detail += " key=" + std::string(key->value());
    out.step.detail = abbreviate(detail);
    pending_.push_back(req.method() == http::verb::head);
    return Decode::Message;
  }

  Decode onServer(std::string_view buf, ServerMsg& out) override {
    http::response_parser<http::string_body> p;
    p.header_limit(kHeaderLimit);
    p.body_limit(kBodyLimit);
    if (!pending_.empty() && pending_.front()) p.skip(true); // the answer to HEAD has no body
    size_t used = 0;
    const Fed fed = feed(p, buf, used);
    if (fed == Fed::Bad) return Decode::Invalid;
    if (fed == Fed::More) return Decode::NeedMoreData;
    const auto& res = p.get();
    out.size = used;
    const unsigned status = res.result_int();
    if (status >= 100 && status < 200) { // interim (100 Continue): not the reply
      out.kind = ServerMsg::Kind::Pass;
      return Decode::Message;
    }
    out.kind = ServerMsg::Kind::ReplyEnd;
    out.reply.summary = std::to_string(status);
    if (iequals(res["Idempotent-Replayed"], "true")) out.reply.summary += " replayed";
    out.reply.error = status >= 500;
    if (!pending_.empty()) pending_.pop_front();
    return Decode::Message;
  }

  void withdrawLast() override {
    if (!pending_.empty()) pending_.pop_back();
  }

private:
  /// A request whose client waits for an interim answer before it sends its declared body.
  static bool continued(const http::request_parser<http::string_body>& p) {
    if (!iequals(p.get()[http::field::expect], "100-continue")) return false;
    return p.chunked() || (p.content_length() && *p.content_length() > 0);
  }

  /// The size of the head (through the empty line) of a message that has one.
  static size_t headerSize(std::string_view bytes) {
    const size_t end = bytes.find("\r\n\r\n");
    return end == std::string_view::npos ? bytes.size() : end + 4;
  }

  HttpCall call_;
  std::string head_;           ///< the head of the current request, forwarded before its body
  std::deque<bool> pending_;   ///< requests without a final answer yet, oldest first: is it a HEAD
};

} // namespace http_tracker_detail

TrackerPtr makeHttpTracker(HttpCall call) { return std::make_unique<http_tracker_detail::HttpTracker>(std::move(call)); }

} // namespace idem::proxy
