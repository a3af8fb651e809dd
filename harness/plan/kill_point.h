#pragma once
/// A fault is a value. A kill point names the exact step of a run at which the consumer process that
/// performs it is SIGKILLed (its whole process group):
///   before:VERB#k  the k-th request with this verb in the run is withheld; the server never sees it.
///   after:VERB#k   the k-th request reaches the server and takes effect; its reply is withheld.
/// k counts from 1 over the whole run (every consumer process, both servers), so COMMIT#3 is the third
/// COMMIT the consumers sent, whoever sent it.
#include <nlohmann/json.hpp>

#include <string>

namespace idem {

struct KillPoint {
  enum class When { Before, After };
  When when = When::After;
  std::string verb; ///< upper case: COMMIT, XACK, SET, ...
  int k = 1;        ///< 1-based occurrence in the run

  /// "after:COMMIT#3"
  std::string str() const;
  /// Parses "before:VERB#k" / "after:VERB#k" (verb case-insensitive); throws UsageError naming `what`.
  static KillPoint parse(const std::string& text, const std::string& what = "--crash");
  bool operator==(const KillPoint& o) const { return when == o.when && verb == o.verb && k == o.k; }
  bool operator<(const KillPoint& o) const;
};

void to_json(nlohmann::json& j, const KillPoint& p);
void from_json(const nlohmann::json& j, KillPoint& p);

} // namespace idem
