#pragma once
/// Internal: the parts of scenarioFromJson, one file each. Every function throws UsageError naming the
/// file (`what`) and the field path. Not a public API.
#include "scenario/scenario.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace idem::detail {

/// Parses and cross-checks "fields" (names, generators, `of` references, one uuid, map coverage).
std::vector<FieldGen> parseFields(const nlohmann::json& j, const std::string& what,
                                  const std::vector<std::string>& keys);

/// Parses "invariants"; every field an invariant names must be one of `s.fields`.
std::vector<Invariant> parseInvariants(const nlohmann::json& j, const std::string& what, const Scenario& s);

/// Parses "default_schedule" against the scenario's fields and keys (events numbered 1..N in order).
DefaultSchedule parseDefaultSchedule(const nlohmann::json& j, const std::string& what, const Scenario& s);

/// Parses "poison" (the values, the dead letter, max_deliveries); its `events` are checked against the
/// default schedule's by checkPoisonEvents once that is read.
PoisonSpec parsePoison(const nlohmann::json& j, const std::string& what, const Scenario& s);
void checkPoisonEvents(const PoisonSpec& p, const std::string& what, size_t events);

/// Parses "sink" (consumer scenarios): the call, the reference member, the provider's policy, the answer and
/// the booked query.
SinkSpec parseSink(const nlohmann::json& j, const std::string& what, const Scenario& s);

/// Parses "http" (kind http): the endpoint, the effects query, the ledger and the declared policy.
HttpSpec parseHttpSpec(const nlohmann::json& j, const std::string& what, const Scenario& s);

/// Every value a field can take, when that set is finite (key, pick, const, map); nullopt otherwise.
std::optional<std::set<std::string>> possibleValues(const FieldGen& f, const std::vector<std::string>& keys);

/// True when every value the field can take is a decimal integer.
bool integerValued(const FieldGen& f, const std::vector<std::string>& keys);

/// Parses a decimal integer (optional sign); nullopt for anything else.
std::optional<int64_t> parseInteger(const std::string& text);

/// "n, event_id, wallet, amount"
std::string fieldNames(const std::vector<FieldGen>& fields);

} // namespace idem::detail
