// libFuzzer target: the RESP tracker (see fuzz_feed.h).
#include "fuzz_feed.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  idem::proxy::fuzz::fuzzTracker(idem::proxy::makeRespTracker, data, size);
  return 0;
}
