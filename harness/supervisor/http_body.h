#pragma once
/// The body of an HTTP answer as the client keeps it: a digest of every byte (FNV-1a 64), its size, and
/// its first bytes only. A Boost.Beast Body type: the parser hands it the body as it arrives (chunked or
/// not, in pieces of any size), so an answer of any length costs the client at most kKeptBytes. The kept
/// bytes are the whole body when it is no longer than that: enough to compare an answer as JSON.
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>

#include <algorithm>
#include <cstdint>
#include <string>

namespace idem {

/// FNV-1a 64 of `s`, 16 lower-case hex digits.
std::string fnv64Hex(const std::string& s);

struct DigestBody {
  /// The most of a body kept: answers up to this size are kept whole (and can be compared as JSON).
  static constexpr size_t kKeptBytes = 256 * 1024;
  static constexpr uint64_t kFnvOffset = 1469598103934665603ULL;
  static constexpr uint64_t kFnvPrime = 1099511628211ULL;

  struct value_type {
    uint64_t fnv = kFnvOffset;
    uint64_t size = 0;  ///< every byte of the body, kept or not
    std::string kept;   ///< the first kKeptBytes bytes
    /// Whether `kept` is the whole body.
    bool whole() const { return size == kept.size(); }
    /// fnv64Hex of the whole body.
    std::string digest() const;
  };

  class reader {
  public:
    template <bool isRequest, class Fields>
    reader(boost::beast::http::header<isRequest, Fields>&, value_type& body) : body_(body) {}

    void init(const boost::optional<std::uint64_t>&, boost::beast::error_code& ec) { ec = {}; }

    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, boost::beast::error_code& ec) {
      std::size_t n = 0;
      for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers); ++it) {
        boost::asio::const_buffer b = *it;
        add(static_cast<const char*>(b.data()), b.size());
        n += b.size();
      }
      ec = {};
      return n;
    }

    void finish(boost::beast::error_code& ec) { ec = {}; }

  private:
    void add(const char* p, std::size_t n) {
      for (std::size_t i = 0; i < n; ++i) {
        body_.fnv ^= static_cast<unsigned char>(p[i]);
        body_.fnv *= kFnvPrime;
      }
      body_.size += n;
      if (body_.kept.size() < kKeptBytes) body_.kept.append(p, std::min(n, kKeptBytes - body_.kept.size()));
    }

    value_type& body_;
  };
};

} // namespace idem
