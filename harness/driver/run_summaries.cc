#include "driver/run_summaries.h"

#include "core/error.h"

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace idem {

RunSummaries::RunSummaries(size_t pageRuns) : file_(std::tmpfile()), pageRuns_(pageRuns) {
  if (!file_) throw UsageError(std::string("cannot create a temporary file for the run summaries: ") + std::strerror(errno));
}

void RunSummaries::add(const RunSummary& r) {
  auto j = r.toJson();
  if ((r.verdict != Verdict::Pass || r.lostFault()) && notPassed_.size() <= pageRuns_) notPassed_.push_back(j);
  const std::string line = j.dump() + "\n"; // dump() escapes control characters: one line per summary
  if (std::exchange(reading_, false)) std::fseek(file_.get(), 0, SEEK_END); // back to the end after a read pass
  if (std::fwrite(line.data(), 1, line.size(), file_.get()) != line.size())
    throw UsageError(std::string("cannot write the run summaries to a temporary file: ") + std::strerror(errno));
  ++count_;
}

nlohmann::json RunSummaries::at(size_t i) {
  if (i == 0) {
    std::fflush(file_.get());
    std::rewind(file_.get());
    reading_ = true;
    next_ = 0;
  }
  if (!reading_ || i != next_ || i >= count_) throw std::logic_error("RunSummaries::at: read out of order");
  std::string line;
  int c;
  while ((c = std::fgetc(file_.get())) != EOF && c != '\n') line.push_back(static_cast<char>(c));
  ++next_;
  return nlohmann::json::parse(line);
}

} // namespace idem
