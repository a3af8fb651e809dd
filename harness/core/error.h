#pragma once
/// Errors that decide idemproof's exit status.
#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

namespace idem {

/// Bad input (flag, manifest, scenario, schedule file) or an environment that cannot run a judgement
/// (a server or a target that cannot start). The CLI prints what() as one line and exits 2.
/// The message names the file, field or flag: "targets/x/target.json: field 'command': must be ...".
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The failure of a system call, from errno: "<what>: <strerror>".
inline std::system_error sysError(const std::string& what) {
  return std::system_error(errno, std::system_category(), what);
}

} // namespace idem
