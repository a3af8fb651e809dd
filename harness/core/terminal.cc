// escapeControls and the filter under std::cout and std::cerr.
#include "core/terminal.h"

#include <fmt/format.h>

#include <iostream>
#include <streambuf>

namespace idem {

namespace {

bool c0(unsigned char c) { return (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f; }

std::string c0Escape(unsigned char c) {
  switch (c) {
  case '\r': return "\\r";
  case 0x1b: return "\\x1b";
  default: return fmt::format("\\x{:02x}", c);
  }
}

/// Escapes what passes through it into `out`; holds back a lead byte 0xC2 until the next byte says whether
/// it starts a C1 control.
class EscapingBuf : public std::streambuf {
public:
  explicit EscapingBuf(std::streambuf* out) : out_(out) {}

protected:
  int_type overflow(int_type ch) override {
    if (traits_type::eq_int_type(ch, traits_type::eof())) return sync() == 0 ? traits_type::not_eof(ch) : ch;
    char c = traits_type::to_char_type(ch);
    return put(&c, 1) ? ch : traits_type::eof();
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override { return put(s, n) ? n : 0; }
  int sync() override {
    if (pendingC2_) {
      pendingC2_ = false;
      if (out_->sputc('\xc2') == traits_type::eof()) return -1;
    }
    return out_->pubsync();
  }

private:
  bool put(const char* s, std::streamsize n) {
    std::string buf;
    buf.reserve(static_cast<size_t>(n) + 8);
    for (std::streamsize i = 0; i < n; ++i) {
      auto c = static_cast<unsigned char>(s[i]);
      if (pendingC2_) {
        pendingC2_ = false;
        if (c >= 0x80 && c <= 0x9f) {
          buf += fmt::format("\\u{:04x}", c);
          continue;
        }
        buf += '\xc2';
      }
      if (c == 0xc2) pendingC2_ = true;
      else if (c0(c)) buf += c0Escape(c);
      else buf += static_cast<char>(c);
    }
    return out_->sputn(buf.data(), static_cast<std::streamsize>(buf.size())) == static_cast<std::streamsize>(buf.size());
  }

  std::streambuf* out_;
  bool pendingC2_ = false;
};

} // namespace

std::string escapeControls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[++i]));
    } else if (c0(c)) {
      out += c0Escape(c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

void escapeStandardStreams() {
  // Leaked on purpose: std::cout and std::cerr are used until the very end, static destructors included.
  static auto* cout = new EscapingBuf(std::cout.rdbuf());
  static auto* cerr = new EscapingBuf(std::cerr.rdbuf());
  std::cout.rdbuf(cout);
  std::cerr.rdbuf(cerr);
}

} // namespace idem
