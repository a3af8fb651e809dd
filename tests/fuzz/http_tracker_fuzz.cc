// libFuzzer target: the HTTP/1.1 tracker of the sink's side (see fuzz_feed.h).
#include "fuzz_feed.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  idem::proxy::fuzz::fuzzTracker([] { return idem::proxy::makeHttpTracker(); }, data, size);
  return 0;
}
