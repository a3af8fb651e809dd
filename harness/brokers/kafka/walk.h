#pragma once
/// One walker for every message layout of schema.h: reads a request or response body of a given version
/// field by field, tells a Visitor what each field with a role holds, and — when given a Writer — copies
/// the body as it goes, with the values the visitor replaces re-encoded (sizes of tagged fields adjusted).
/// Pure.
#include "brokers/kafka/schema.h"
#include "brokers/kafka/wire.h"

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace idem::kafka {

class Visitor {
public:
  virtual ~Visitor() = default;
  /// An element of the array with role `array` begins (enter) or ends (leave).
  virtual void enter(Role array) {}
  virtual void leave(Role array) {}
  /// An integer or boolean field with a role (an element of an int array too).
  virtual void value(Role role, int64_t v) {}
  /// A string, bytes, records or uuid field with a role; nullopt when null.
  virtual void text(Role role, std::optional<std::string_view> v) {}
  /// When copying: the string to write in place of this one (Role::Host), or nullopt to keep it.
  virtual std::optional<std::string> replaceText(Role role, std::optional<std::string_view> v) { return std::nullopt; }
  /// When copying: the integer to write in place of this one (Role::Port, Role::MaxVersion), or nullopt.
  virtual std::optional<int64_t> replaceValue(Role role, int64_t v) { return std::nullopt; }
};

/// Reads all of `body` as `fields` at `version` (`flexible`: compact encodings and tagged fields). Returns
/// false when the bytes do not fit the layout, including bytes left over. With `out`, appends the body as
/// rewritten (the original bytes when nothing was replaced).
bool walk(std::string_view body, std::span<const Field> fields, int version, bool flexible, Visitor& visitor,
          Writer* out = nullptr);

} // namespace idem::kafka
