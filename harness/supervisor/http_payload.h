#pragma once
/// The body of an HTTP schedule's request (docs/http-contract.md, "The requests"): an event's fields written
/// as the scenario's `http.body` says, a JSON object (application/json) or name=value pairs
/// (application/x-www-form-urlencoded, as Stripe's API takes them), in the scenario's field order, or in the
/// reverse order for a reordered retry (the same values). Pure functions of their arguments.
#include "scenario/scenario.h"

#include <map>
#include <string>

namespace idem {

/// `fields` (name -> value) of one event as the request body: the scenario's fields in their declared order
/// (reversed with `reordered`), `http.numbers` as JSON numbers in a JSON body.
std::string encodePayload(const Scenario& s, const std::map<std::string, std::string>& fields, bool reordered);

/// The Content-Type of the scenario's request bodies.
const char* payloadContentType(const HttpSpec& h);

/// application/x-www-form-urlencoded of one name or value (WHATWG URL: ALPHA DIGIT *-._ kept, space as '+',
/// every other byte %XX in upper case).
std::string formEncode(const std::string& text);

} // namespace idem
