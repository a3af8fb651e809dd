#pragma once
/// Reading the JSON files users write (target.json, scenarios, schedule files) strictly: a size bound,
/// no key twice in one object (the last would win silently), no NUL byte in a string.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace idem {

/// Size bounds of the files idemproof reads (a hostile file must not cost memory or time).
constexpr uintmax_t kManifestMaxBytes = 1 << 20;  ///< target.json: 1 MiB
constexpr uintmax_t kDocumentMaxBytes = 16 << 20; ///< scenarios and schedule files: 16 MiB

/// Reads and parses a JSON file. Throws UsageError naming `what` and the problem: "no such file",
/// "is a folder, not a file", "N bytes, more than the M ...", "invalid JSON: parse error at line L,
/// column C: ...", "key 'k' appears twice in one object", "a string holds a NUL byte".
nlohmann::json readJsonFile(const std::filesystem::path& file, const std::string& what,
                            uintmax_t maxBytes = kDocumentMaxBytes);

/// The same checks on JSON text already in memory.
nlohmann::json parseJsonStrict(const std::string& text, const std::string& what);

/// What a filtered read keeps, asked as nlohmann's parser callback is (depth, event, value) once the strict
/// checks passed: false discards the value. A container discarded at its start is never built, and no
/// callback comes for the values inside it nor for its end (a filter tracks where it is by depth).
using JsonFilter = std::function<bool(int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed)>;

/// readJsonFile's checks, parsed from the file while it is read (its text is never held whole), keeping
/// only what `filter` keeps: memory is what the filter lets through. A filter throws UsageError to refuse.
nlohmann::json readJsonFileFiltered(const std::filesystem::path& file, const std::string& what, uintmax_t maxBytes,
                                    const JsonFilter& filter);

} // namespace idem
