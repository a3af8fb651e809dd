#pragma once
/// Temporary directories of idemproof (temp_dir.cc).
#include <filesystem>
#include <string>

namespace idem {

/// Where idemproof makes its temporary folders: $IDEMPROOF_TMPDIR when set (a private root for one
/// invocation, e.g. a test's own folder: it must exist and be writable, else UsageError naming the
/// variable), else /dev/shm when it exists and is writable, else $TMPDIR, else /tmp.
std::filesystem::path tempRoot();

/// A temporary directory under tempRoot(); removed (recursively) by the destructor and by Cleanup.
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
