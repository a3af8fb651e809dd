#include "checkers/tx_statement.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

namespace idem::detail {

bool oneStatement(const ops::Step& s) {
  std::string_view d = s.detail;
  while (!d.empty() && (d.back() == ';' || d.back() == ' ')) d.remove_suffix(1);
  const bool cut = d.size() >= 3 && d.substr(d.size() - 3) == "...";
  return !cut && d.find(';') == std::string_view::npos;
}

namespace {

/// The upper-cased first word of `sql` and where the text after its first statement starts (npos: none).
std::pair<std::string, size_t> firstWord(std::string_view sql) {
  size_t i = 0;
  while (i < sql.size() && std::isspace(static_cast<unsigned char>(sql[i]))) ++i;
  std::string word;
  for (; i < sql.size() && std::isalpha(static_cast<unsigned char>(sql[i])); ++i)
    word += static_cast<char>(std::toupper(static_cast<unsigned char>(sql[i])));
  return {word, sql.find(';', i)};
}

bool beginVerb(const std::string& v) { return v == "BEGIN" || v == "START"; }

} // namespace

bool opensWithBegin(const ops::Step& s) {
  if (s.server != "pg" || beginVerb(s.verb)) return false;
  auto [word, end] = firstWord(s.detail);
  return beginVerb(word) && end != std::string::npos;
}

bool commitsWithin(const ops::Step& s) {
  if (s.server != "pg" || s.error || !s.reachedServer() || s.verb == "COMMIT" || s.verb == "END") return false;
  const size_t last = s.summary.rfind("; ");
  return last != std::string::npos && s.summary.compare(last + 2, std::string::npos, "COMMIT") == 0;
}

std::string namedStatementText(const ops::Step& s) {
  std::string_view d = s.detail;
  if (s.server != "pg" || beginVerb(s.verb)) return s.detail;
  for (;;) {
    auto [word, end] = firstWord(d);
    if (!beginVerb(word) || end == std::string_view::npos) break;
    d.remove_prefix(end + 1);
    while (!d.empty() && d.front() == ' ') d.remove_prefix(1);
  }
  return std::string(d);
}

bool failedCommit(const ops::Step& s) {
  return txStatement(s).kind == TxStatement::Kind::Commit && oneStatement(s) && s.replied() && !s.error &&
         s.summary == "ROLLBACK";
}

TxStatement txStatement(const ops::Step& s) {
  using K = TxStatement::Kind;
  if (s.server != "pg") return {};
  const std::string& v = s.verb;
  if (v != "BEGIN" && v != "START" && v != "COMMIT" && v != "END" && v != "ROLLBACK" && v != "ABORT" &&
      v != "SAVEPOINT" && v != "RELEASE" && v != "PREPARE")
    return {};
  std::vector<std::string> words; // the first statement's words, upper-cased: a savepoint's name ends at `;`
  std::string word;
  for (char c : s.detail + ";") {
    if (c == ';' || std::isspace(static_cast<unsigned char>(c))) {
      if (!word.empty()) words.push_back(word);
      word.clear();
      if (c == ';') break;
    } else {
      word += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
  }
  size_t i = 1;
  auto is = [&](const char* w) { return i < words.size() && words[i] == w; };
  auto skip = [&](std::initializer_list<const char*> optional) {
    for (const char* w : optional)
      if (is(w)) ++i;
  };
  auto name = [&] { return i < words.size() ? words[i] : std::string(); };
  if (v == "BEGIN" || v == "START") return {K::Begin, ""};
  if (v == "PREPARE") return is("TRANSACTION") ? TxStatement{K::Prepare, ""} : TxStatement{}; // else a statement's
  if (v == "SAVEPOINT") return {K::Savepoint, name()};
  if (v == "RELEASE") {
    skip({"SAVEPOINT"});
    return {K::Release, name()};
  }
  if (is("PREPARED")) return {K::Prepared, ""};
  if (v == "COMMIT" || v == "END") return {K::Commit, ""};
  if (v == "ABORT") return {K::Rollback, ""};
  skip({"WORK", "TRANSACTION"});
  if (!is("TO")) return {K::Rollback, ""};
  ++i;
  skip({"SAVEPOINT"});
  return {K::RollbackTo, name()};
}

bool overlappingTransactions(const std::vector<const ops::Step*>& steps) {
  using K = TxStatement::Kind;
  std::map<int, bool> open; // connection -> a transaction open on it
  for (const ops::Step* s : steps) {
    if (s->server != "pg") continue;
    if (std::any_of(open.begin(), open.end(), [&](const auto& o) { return o.second && o.first != s->conn; })) return true;
    const TxStatement t = txStatement(*s);
    if (t.kind == K::Begin || opensWithBegin(*s)) open[s->conn] = true;
    else if (t.kind == K::Commit || t.kind == K::Rollback || t.kind == K::Prepare || t.kind == K::Prepared ||
             commitsWithin(*s))
      open[s->conn] = false;
  }
  return false;
}

} // namespace idem::detail

namespace idem {

bool concurrentWork(const std::vector<Op>& history) {
  std::map<std::string, std::vector<const ops::Step*>> byProcess;
  for (const auto& op : history)
    if (const auto* s = op.as<ops::Step>()) byProcess[op.process].push_back(s);
  return std::any_of(byProcess.begin(), byProcess.end(),
                     [](const auto& p) { return detail::overlappingTransactions(p.second); });
}

} // namespace idem
