#pragma once
/// Temporary directories of idemproof (temp_dir.cc).
#include <filesystem>
#include <string>

namespace idem {

/// A temporary directory, on /dev/shm when it exists and is writable, else $TMPDIR or /tmp; removed
/// (recursively) by the destructor and by Cleanup.
class TempDir {
public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

private:
  std::filesystem::path path_;
  int cleanupId_ = -1;
};

} // namespace idem
