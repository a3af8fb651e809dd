// libFuzzer target: the NATS tracker (see fuzz_feed.h).
#include "fuzz_feed.h"

#include "brokers/nats/tracker.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  idem::proxy::fuzz::fuzzTracker(idem::nats::makeTracker, data, size);
  return 0;
}
