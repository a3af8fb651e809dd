#include "proxy/sql_verb.h"

#include "proxy/abbrev.h"

#include <array>
#include <cctype>

namespace idem::proxy {
namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool isWordStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isWordChar(char c) { return isWordStart(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '$'; }

/// A token of SQL as far as naming needs: words, parentheses, commas; strings, quoted identifiers and
/// dollar-quoted bodies are skipped as Other.
struct Token {
  enum class Kind { End, Word, Open, Close, Comma, Semicolon, Other };
  Kind kind = Kind::End;
  std::string_view text;
};

/// Splits SQL into tokens, skipping whitespace and comments. Never reads past the text.
class Lexer {
public:
  explicit Lexer(std::string_view sql) : sql_(sql) {}

  Token next() {
    skipSpaceAndComments();
    if (pos_ >= sql_.size())
      return {};
    const size_t start = pos_;
    const char c = sql_[pos_];
    if ((c == 'E' || c == 'e') && pos_ + 1 < sql_.size() && sql_[pos_ + 1] == '\'') {
      ++pos_;
      skipQuoted('\'', true);
      return {Token::Kind::Other, sql_.substr(start, pos_ - start)};
    }
    if (isWordStart(c)) {
      while (pos_ < sql_.size() && isWordChar(sql_[pos_]))
        ++pos_;
      return {Token::Kind::Word, sql_.substr(start, pos_ - start)};
    }
    ++pos_;
    switch (c) {
    case '(': return {Token::Kind::Open, sql_.substr(start, 1)};
    case ')': return {Token::Kind::Close, sql_.substr(start, 1)};
    case ',': return {Token::Kind::Comma, sql_.substr(start, 1)};
    case ';': return {Token::Kind::Semicolon, sql_.substr(start, 1)};
    case '\'': --pos_; skipQuoted('\'', false); break;
    case '"': --pos_; skipQuoted('"', false); break;
    case '$': skipDollar(start); break;
    default: break;
    }
    return {Token::Kind::Other, sql_.substr(start, pos_ - start)};
  }

private:
  void skipSpaceAndComments() {
    while (pos_ < sql_.size()) {
      if (isSpace(sql_[pos_])) {
        ++pos_;
      } else if (sql_.substr(pos_, 2) == "--") {
        const size_t nl = sql_.find('\n', pos_);
        pos_ = nl == std::string_view::npos ? sql_.size() : nl + 1;
      } else if (sql_.substr(pos_, 2) == "/*") {
        int depth = 0;
        while (pos_ < sql_.size()) {
          if (sql_.substr(pos_, 2) == "/*") {
            ++depth;
            pos_ += 2;
          } else if (sql_.substr(pos_, 2) == "*/") {
            pos_ += 2;
            if (--depth == 0)
              break;
          } else {
            ++pos_;
          }
        }
      } else {
        return;
      }
    }
  }

  /// At an opening quote: skips to after the closing one (a doubled quote is part of the text).
  void skipQuoted(char quote, bool backslashes) {
    ++pos_;
    while (pos_ < sql_.size()) {
      const char c = sql_[pos_++];
      if (backslashes && c == '\\') {
        ++pos_;
      } else if (c == quote) {
        if (pos_ < sql_.size() && sql_[pos_] == quote)
          ++pos_;
        else
          return;
      }
    }
    pos_ = std::min(pos_, sql_.size());
  }

  /// After a `$` at `start`: a `$tag$ … $tag$` body is skipped; `$1` is a parameter.
  void skipDollar(size_t start) {
    const auto digit = [&](size_t i) { return std::isdigit(static_cast<unsigned char>(sql_[i])) != 0; };
    if (pos_ < sql_.size() && digit(pos_)) {
      while (pos_ < sql_.size() && digit(pos_))
        ++pos_;
      return;
    }
    size_t end = pos_;
    while (end < sql_.size() && (isWordStart(sql_[end]) || digit(end)))
      ++end;
    if (end >= sql_.size() || sql_[end] != '$')
      return;
    const std::string_view tag = sql_.substr(start, end + 1 - start);
    const size_t close = sql_.find(tag, end + 1);
    pos_ = close == std::string_view::npos ? sql_.size() : close + tag.size();
  }

  std::string_view sql_;
  size_t pos_ = 0;
};

std::string upper(std::string_view word) {
  std::string out(word);
  for (char& c : out)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

/// After WITH: the first top-level main-statement keyword that is not a CTE name.
std::string withMainVerb(Lexer& lex) {
  static constexpr std::array<std::string_view, 7> kMain = {"SELECT", "INSERT", "UPDATE", "DELETE",
                                                           "MERGE",  "VALUES", "TABLE"};
  int depth = 0;
  bool expect_name = true; // right after WITH [RECURSIVE] or a top-level comma comes a CTE name
  for (Token t = lex.next(); t.kind != Token::Kind::End; t = lex.next()) {
    if (t.kind == Token::Kind::Open) {
      ++depth;
    } else if (t.kind == Token::Kind::Close) {
      depth = depth > 0 ? depth - 1 : 0;
    } else if (depth == 0 && t.kind == Token::Kind::Comma) {
      expect_name = true;
    } else if (depth == 0 && t.kind == Token::Kind::Semicolon) {
      break;
    } else if (depth == 0 && t.kind == Token::Kind::Word) {
      const std::string w = upper(t.text);
      if (expect_name) {
        expect_name = w == "RECURSIVE";
        continue;
      }
      for (std::string_view m : kMain)
        if (w == m)
          return w;
    } else if (depth == 0) {
      expect_name = false;
    }
  }
  return "WITH";
}

} // namespace

std::string sqlVerb(std::string_view sql) {
  Lexer lex(sql);
  for (Token t = lex.next(); t.kind != Token::Kind::End; t = lex.next()) {
    if (t.kind == Token::Kind::Open || t.kind == Token::Kind::Semicolon)
      continue;
    if (t.kind != Token::Kind::Word)
      return "UNKNOWN";
    std::string verb = upper(t.text);
    return verb == "WITH" ? withMainVerb(lex) : verb;
  }
  return "EMPTY";
}

std::string sqlDetail(std::string_view sql) {
  // Collapsed on the stack: a heap string for it cost a fifth of naming a step (bench/tracker_bench).
  // At most 2 * kAbbrevMax + 1 bytes: more than any abbreviation shows, so where it stops changes nothing.
  std::array<char, 2 * kAbbrevMax + 1> collapsed;
  size_t n = 0;
  for (char c : sql) {
    if (n == collapsed.size())
      break;
    if (isSpace(c)) {
      if (n > 0 && collapsed[n - 1] != ' ')
        collapsed[n++] = ' ';
    } else {
      collapsed[n++] = c;
    }
  }
  while (n > 0 && collapsed[n - 1] == ' ')
    --n;
  return abbreviate(std::string_view(collapsed.data(), n));
}

} // namespace idem::proxy
