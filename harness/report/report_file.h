#pragma once
/// Where the commands that read a report back (explain, sweep --trace-from) find it: a report folder, or
/// its report.json named itself.
#include <filesystem>
#include <system_error>

namespace idem {

/// `arg`/report.json when `arg` is a folder, else `arg`.
inline std::filesystem::path reportFileOf(const std::filesystem::path& arg) {
  std::error_code ec;
  return std::filesystem::is_directory(arg, ec) ? arg / "report.json" : arg;
}

} // namespace idem
