#pragma once
/// Naming a PostgreSQL step by its SQL text.
#include <string>
#include <string_view>

namespace idem::proxy {

/// The verb of a SQL text: its first keyword, upper case, after leading whitespace, `--` and (nested)
/// `/* */` comments, `(` and `;`. `WITH …` is named by its main statement (SELECT, INSERT, UPDATE,
/// DELETE, MERGE, VALUES, TABLE) when one follows the common table expressions, else WITH. A text with
/// nothing but blanks and comments (an empty query) is "EMPTY", one that starts with something else "UNKNOWN". Only the first statement of a multi-statement
/// text names it.
std::string sqlVerb(std::string_view sql);

/// The SQL text for a step detail: runs of whitespace collapsed to one space, trimmed, escaped and
/// abbreviated to kAbbrevMax bytes.
std::string sqlDetail(std::string_view sql);

} // namespace idem::proxy
