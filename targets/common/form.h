#pragma once
/// application/x-www-form-urlencoded bodies as the reference HTTP targets read them (docs/http-contract.md,
/// "Form bodies"), and the canonical forms a server compares a retry's payload by under the declared
/// payload_equivalence. Pure functions, no I/O.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idem::targets::http {

using FormPairs = std::vector<std::pair<std::string, std::string>>;

/// The name=value pairs of a form body, decoded ('+' is a space, %XX a byte), in the order sent. An empty
/// body is no pairs. nullopt on a '%' not followed by two hex digits, or a pair without '='.
std::optional<FormPairs> parseForm(std::string_view body);

/// The pairs sorted (by name, then value) and written back encoded: two bodies with the same set of pairs
/// in any order, or encoded differently (%41 for A, + or %20), have the same canonical form.
std::string canonicalForm(FormPairs pairs);

/// FNV-1a 64, 16 lower-case hex digits: the stable hash a key row stores.
std::string fnv1a64(std::string_view text);

} // namespace idem::targets::http
