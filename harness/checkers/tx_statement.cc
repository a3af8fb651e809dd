#include "checkers/tx_statement.h"

#include <cctype>
#include <string_view>
#include <vector>

namespace idem::detail {

bool oneStatement(const ops::Step& s) {
  std::string_view d = s.detail;
  while (!d.empty() && (d.back() == ';' || d.back() == ' ')) d.remove_suffix(1);
  const bool cut = d.size() >= 3 && d.substr(d.size() - 3) == "...";
  return !cut && d.find(';') == std::string_view::npos;
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

} // namespace idem::detail
