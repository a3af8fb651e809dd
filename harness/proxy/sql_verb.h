#pragma once
/// Naming a PostgreSQL step by its SQL text.
#include <string>
#include <string_view>
#include <vector>

namespace idem::proxy {

/// The verb of a SQL text: its first keyword, upper case, after leading whitespace, `--` and (nested)
/// `/* */` comments, `(` and `;`. `WITH …` is named by its main statement (SELECT, INSERT, UPDATE,
/// DELETE, MERGE, VALUES, TABLE) when one follows the common table expressions, else WITH. A text with
/// nothing but blanks and comments (an empty query) is "EMPTY", one that starts with something else "UNKNOWN". Only the first statement of a multi-statement
/// text names it.
std::string sqlVerb(std::string_view sql);

/// The tables a SQL text names as what it reads or writes: the relation after FROM, JOIN, INTO, UPDATE,
/// TABLE, TRUNCATE, COPY and USING (each of a FROM's comma-separated list), in every statement of the text
/// and its subqueries and common table expressions; not a FROM inside a function's parentheses
/// (`extract(year FROM t)`), nor a set-returning function (`FROM generate_series(1, 3)`). Names are
/// lower case unless quoted, without their schema; sorted, each once. What two statements may conflict on
/// (a hold's release point that can order a race, search/kill_model.h), not a parser: a name it can't tell
/// from a table (an alias list, an unusual clause) only makes more statements look related.
std::vector<std::string> sqlTables(std::string_view sql);

/// The SQL text for a step detail: leading comments left out, runs of whitespace collapsed to one space,
/// trimmed, escaped and abbreviated to kAbbrevMax bytes.
std::string sqlDetail(std::string_view sql);

} // namespace idem::proxy
