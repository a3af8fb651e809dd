#include "plan/advisory_lock.h"

#include <cctype>
#include <string>

namespace idem {

AdvisoryLockCall advisoryLockCall(std::string_view sql) {
  std::string upper(sql);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto names = [&](const char* fn) { return upper.find(fn) != std::string::npos; };
  AdvisoryLockCall c;
  c.waits = names("PG_ADVISORY_LOCK") || names("PG_ADVISORY_XACT_LOCK");
  c.tries = names("PG_TRY_ADVISORY");
  c.session = names("PG_ADVISORY_LOCK") || names("PG_TRY_ADVISORY_LOCK");
  c.unlocks = names("PG_ADVISORY_UNLOCK");
  c.unlocksAll = names("PG_ADVISORY_UNLOCK_ALL");
  return c;
}

} // namespace idem
