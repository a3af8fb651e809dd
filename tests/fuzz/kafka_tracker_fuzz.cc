// libFuzzer target: the Kafka tracker (see fuzz_feed.h), rewriting broker addresses as the proxy has it
// do — to a longer host for odd node ids, so that rewritten sizes change — and capping ApiVersions.
#include "fuzz_feed.h"

#include "brokers/kafka/tracker.h"

namespace {

idem::proxy::TrackerPtr makeRewriting() {
  idem::kafka::TrackerOptions o;
  o.addressFor = [](int32_t node, const idem::kafka::Address& a) -> std::optional<idem::kafka::Address> {
    if (node % 2 == 0)
      return a;
    return idem::kafka::Address{"proxy-listener.fuzz", node};
  };
  return idem::kafka::makeTracker(std::move(o));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  idem::proxy::fuzz::fuzzTracker(makeRewriting, data, size);
  return 0;
}
