// libFuzzer target: the AMQP 0-9-1 tracker (see fuzz_feed.h).
#include "fuzz_feed.h"

#include "brokers/rabbitmq/tracker.h"

namespace {

idem::proxy::TrackerPtr makeAmqp() { return idem::rabbitmq::makeTracker(); }

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  idem::proxy::fuzz::fuzzTracker(makeAmqp, data, size);
  return 0;
}
