#include "proxy/sql_verb.h"

#include "proxy/abbrev.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <vector>

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

  /// Where the first token starts: past leading whitespace and comments.
  size_t firstToken() {
    skipSpaceAndComments();
    return pos_;
  }

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
      const std::string w = upperWord(t.text);
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

bool isWord(const Token& t, std::string_view upperWord) {
  if (t.kind != Token::Kind::Word || t.text.size() != upperWord.size())
    return false;
  for (size_t i = 0; i < t.text.size(); ++i)
    if (std::toupper(static_cast<unsigned char>(t.text[i])) != upperWord[i])
      return false;
  return true;
}

bool oneOf(const Token& t, std::initializer_list<std::string_view> words) {
  return std::any_of(words.begin(), words.end(), [&](std::string_view w) { return isWord(t, w); });
}

/// A name token as a relation's name: a word lower-cased, a quoted identifier as written; "" for anything else.
std::string nameOf(const Token& t) {
  if (t.kind == Token::Kind::Word) {
    std::string out(t.text);
    for (char& c : out)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  }
  if (t.kind == Token::Kind::Other && t.text.size() >= 2 && t.text.front() == '"' && t.text.back() == '"')
    return std::string(t.text.substr(1, t.text.size() - 2));
  return "";
}

/// Words after which a name is a clause's keyword, not an alias or a table.
bool clauseWord(const Token& t) {
  return oneOf(t, {"WHERE", "JOIN", "LEFT", "RIGHT", "INNER", "OUTER", "FULL", "CROSS", "NATURAL", "ON", "USING",
                   "GROUP", "ORDER", "LIMIT", "OFFSET", "FETCH", "HAVING", "WINDOW", "UNION", "INTERSECT", "EXCEPT",
                   "FOR", "RETURNING", "SET", "VALUES", "SELECT", "DEFAULT", "OVERRIDING", "ON", "DO", "WHEN",
                   "LATERAL", "ONLY", "TABLESAMPLE", "AS", "WITH", "FROM", "TO", "STDIN", "STDOUT", "IN"});
}

} // namespace

std::vector<std::string> sqlTables(std::string_view sql) {
  std::vector<Token> tokens;
  Lexer lex(sql);
  for (Token t = lex.next(); t.kind != Token::Kind::End; t = lex.next())
    tokens.push_back(t);
  std::vector<std::string> out;
  std::vector<bool> inCall; // per open parenthesis: a function's arguments (a word before it that is no keyword)
  size_t i = 0;
  // The relation at tokens[i] (after ONLY, LATERAL), schema-qualified or not; moves i past it. `call`: a
  // name followed by a parenthesis is a function (FROM f(...)), not a table with its column list (INTO t (a)).
  auto relation = [&](bool call) -> bool {
    while (i < tokens.size() && oneOf(tokens[i], {"ONLY", "LATERAL", "TABLE"}))
      ++i;
    if (i >= tokens.size())
      return false;
    std::string name = nameOf(tokens[i]);
    if (name.empty() || (tokens[i].kind == Token::Kind::Word && clauseWord(tokens[i])))
      return false;
    ++i;
    while (i + 1 < tokens.size() && tokens[i].kind == Token::Kind::Other && tokens[i].text == "." &&
           !nameOf(tokens[i + 1]).empty()) {
      name = nameOf(tokens[i + 1]);
      i += 2;
    }
    if (call && i < tokens.size() && tokens[i].kind == Token::Kind::Open)
      return false; // a function: FROM generate_series(1, 3)
    out.push_back(name);
    return true;
  };
  while (i < tokens.size()) {
    const Token& t = tokens[i];
    if (t.kind == Token::Kind::Open) {
      inCall.push_back(i > 0 && tokens[i - 1].kind == Token::Kind::Word && !clauseWord(tokens[i - 1]) &&
                       !oneOf(tokens[i - 1], {"EXISTS", "ANY", "ALL", "SOME", "NOT", "AND", "OR", "INTO", "UPDATE",
                                              "TABLE", "JOIN", "COPY", "TRUNCATE"}));
      ++i;
      continue;
    }
    if (t.kind == Token::Kind::Close) {
      if (!inCall.empty())
        inCall.pop_back();
      ++i;
      continue;
    }
    const bool call = !inCall.empty() && inCall.back();
    ++i;
    if (call)
      continue;
    const bool lockOrConflict = i >= 2 && oneOf(tokens[i - 2], {"FOR", "KEY", "DO"}); // FOR UPDATE, DO UPDATE
    if (oneOf(t, {"INTO", "TRUNCATE", "COPY", "TABLE"}) || (isWord(t, "UPDATE") && !lockOrConflict)) {
      relation(false); // LOCK TABLE t, TRUNCATE [TABLE] t, INSERT INTO t (a, b)
    } else if (isWord(t, "JOIN")) {
      relation(true);
    } else if (oneOf(t, {"FROM", "USING"})) {
      // FROM a [AS] x, b y, ...: each relation of the list, up to the first clause keyword.
      while (relation(true)) {
        if (i < tokens.size() && isWord(tokens[i], "AS"))
          ++i;
        if (i < tokens.size() && tokens[i].kind != Token::Kind::Comma && !clauseWord(tokens[i]) && !nameOf(tokens[i]).empty())
          ++i; // its alias
        if (i >= tokens.size() || tokens[i].kind != Token::Kind::Comma)
          break;
        ++i;
      }
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string sqlVerb(std::string_view sql) {
  Lexer lex(sql);
  for (Token t = lex.next(); t.kind != Token::Kind::End; t = lex.next()) {
    if (t.kind == Token::Kind::Open || t.kind == Token::Kind::Semicolon)
      continue;
    if (t.kind != Token::Kind::Word)
      return "UNKNOWN";
    std::string verb = upperWord(t.text);
    return verb == "WITH" ? withMainVerb(lex) : verb;
  }
  return "EMPTY";
}

std::string sqlDetail(std::string_view sql) {
  // Leading comments (an ORM's or a tracer's tag) would push the statement past the abbreviation.
  sql.remove_prefix(Lexer(sql).firstToken());
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
