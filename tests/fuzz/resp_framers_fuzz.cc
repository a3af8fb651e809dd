// libFuzzer target: the RESP framers that take a value or command too large to hold in pieces
// (RespReplyStream, RespCommandStream), fed arbitrary bytes at a split point the input chooses. Every
// piece lies within what was fed; when a framer says the value is done, it took exactly the bytes a whole
// parse takes, and its outline parses. Any crash or breach is a finding.
#include "proxy/resp_command.h"
#include "proxy/resp_value.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

template <class Framer>
size_t frameAll(Framer& f, std::string_view bytes, size_t at, bool& done) {
  std::string pending;
  size_t taken = 0;
  done = false;
  for (std::string_view part : {bytes.substr(0, at), bytes.substr(at)}) {
    pending += part;
    while (!done) {
      size_t size = 0;
      const idem::proxy::Decode d = f.next(pending, size, done);
      if (d != idem::proxy::Decode::Message) {
        if (d == idem::proxy::Decode::Invalid) return taken;
        break;
      }
      if (size == 0 || size > pending.size()) std::abort();
      pending.erase(0, size);
      taken += size;
    }
  }
  return taken;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t at = data[0] % (size);
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  {
    idem::proxy::RespReplyStream f;
    bool done = false;
    const size_t taken = frameAll(f, bytes, std::min(at, bytes.size()), done);
    if (done) {
      size_t whole = 0, outline = 0;
      if (idem::proxy::parseResp(bytes, whole, nullptr) == idem::proxy::Decode::Message && whole != taken) std::abort();
      if (idem::proxy::parseResp(f.skeleton(), outline, nullptr) != idem::proxy::Decode::Message) std::abort();
    }
  }
  {
    idem::proxy::RespCommandStream f;
    bool done = false;
    frameAll(f, bytes, std::min(at, bytes.size()), done);
  }
  return 0;
}
