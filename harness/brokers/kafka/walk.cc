#include "brokers/kafka/walk.h"

namespace idem::kafka {
namespace {

class Walker {
public:
  Walker(std::string_view body, int version, bool flexible, Visitor& v, Writer* out)
      : whole_(body), r_(body), version_(version), flexible_(flexible), v_(v), out_(out) {}

  bool run(std::span<const Field> fields) {
    structBody(fields);
    return !r_.failed() && r_.left() == 0;
  }

private:
  /// The regular fields of a struct in order, then (flexible) its tagged-field section.
  void structBody(std::span<const Field> fields) {
    for (const Field& f : fields)
      if (f.tag < 0 && f.in(version_) && !r_.failed())
        field(f);
    if (flexible_ && !r_.failed())
      taggedSection(fields);
  }

  void copySince(size_t start) {
    if (out_)
      out_->raw(whole_.substr(start, r_.pos() - start));
  }

  void field(const Field& f) {
    const size_t start = r_.pos();
    switch (f.ty) {
    case Ty::Bool: case Ty::Int8: integer(f, start, r_.int8()); break;
    case Ty::Int16: integer(f, start, r_.int16()); break;
    case Ty::Int32: integer(f, start, r_.int32()); break;
    case Ty::Int64: integer(f, start, r_.int64()); break;
    case Ty::Float64: r_.take(8); copySince(start); break;
    case Ty::Uuid: {
      const std::string_view id = r_.take(16);
      copySince(start);
      if (f.role != Role::None && !r_.failed())
        v_.text(f.role, id);
      break;
    }
    case Ty::String: string(f, start, r_.string(flexible_)); break;
    case Ty::Bytes: case Ty::Records: {
      const auto b = r_.bytes(flexible_);
      copySince(start);
      if (f.role != Role::None && !r_.failed())
        v_.text(f.role, b);
      break;
    }
    case Ty::Struct:
      copySince(start);
      structBody(f.fields);
      break;
    case Ty::Array: {
      const auto n = r_.arrayCount(flexible_);
      copySince(start);
      for (size_t i = 0; n && i < *n && !r_.failed(); ++i) {
        v_.enter(f.role);
        structBody(f.fields);
        v_.leave(f.role);
      }
      break;
    }
    case Ty::Int32Array: case Ty::Int64Array: case Ty::StringArray: {
      const auto n = r_.arrayCount(flexible_);
      copySince(start);
      for (size_t i = 0; n && i < *n && !r_.failed(); ++i) {
        const size_t at = r_.pos();
        if (f.ty == Ty::StringArray) {
          r_.string(flexible_);
          copySince(at);
        } else {
          integer(f, at, f.ty == Ty::Int32Array ? r_.int32() : r_.int64());
        }
      }
      break;
    }
    }
  }

  void integer(const Field& f, size_t start, int64_t value) {
    if (r_.failed())
      return;
    std::optional<int64_t> with;
    if (f.role != Role::None) {
      v_.value(f.role, value);
      if (out_)
        with = v_.replaceValue(f.role, value);
    }
    if (!with) {
      copySince(start);
      return;
    }
    switch (f.ty) {
    case Ty::Int16: out_->int16(static_cast<int16_t>(*with)); break;
    case Ty::Int32: case Ty::Int32Array: out_->int32(static_cast<int32_t>(*with)); break;
    case Ty::Int64: case Ty::Int64Array: out_->int64(*with); break;
    default: out_->int8(static_cast<int8_t>(*with)); break;
    }
  }

  void string(const Field& f, size_t start, std::optional<std::string_view> s) {
    if (r_.failed())
      return;
    std::optional<std::string> with;
    if (f.role != Role::None) {
      v_.text(f.role, s);
      if (out_)
        with = v_.replaceText(f.role, s);
    }
    if (with)
      out_->string(*with, flexible_);
    else
      copySince(start);
  }

  /// The tagged fields of a struct: those the layout names are walked (and re-encoded with their new size
  /// when copying); the others are copied as they are.
  void taggedSection(std::span<const Field> fields) {
    const size_t start = r_.pos();
    const uint32_t count = r_.uvarint();
    copySince(start);
    for (uint32_t i = 0; i < count && !r_.failed(); ++i) {
      const size_t at = r_.pos();
      const uint32_t tag = r_.uvarint();
      const uint32_t size = r_.uvarint(); // a plain size, not a compact length
      const std::string_view payload = r_.take(size);
      if (r_.failed())
        return;
      const Field* known = nullptr;
      for (const Field& f : fields)
        if (f.tag >= 0 && static_cast<uint32_t>(f.tag) == tag && f.in(version_))
          known = &f;
      if (!known) {
        copySince(at);
        continue;
      }
      Writer sub;
      Walker inner(payload, version_, flexible_, v_, out_ ? &sub : nullptr);
      inner.field(*known);
      if (inner.r_.failed() || inner.r_.left() != 0) {
        r_.fail();
        return;
      }
      if (out_) {
        out_->uvarint(tag);
        out_->uvarint(sub.out.size());
        out_->raw(sub.out);
      }
    }
  }

  std::string_view whole_;
  Reader r_;
  int version_;
  bool flexible_;
  Visitor& v_;
  Writer* out_;
};

} // namespace

bool walk(std::string_view body, std::span<const Field> fields, int version, bool flexible, Visitor& visitor,
          Writer* out) {
  return Walker(body, version, flexible, visitor, out).run(fields);
}

} // namespace idem::kafka
