#pragma once
/// A record as the consumer's application receives it, and how it reads as a delivered entry
/// (proxy::EntryView) beside the stream entries of Valkey: its id names its position, its fields are the
/// fields of its JSON value (docs/target-contract.md: all values strings) with the `event_id` header added
/// when the value does not carry that field.
#include "brokers/kafka/records.h"
#include "proxy/tracker.h"

#include <cstdint>
#include <string>

namespace idem::kafka {

struct Delivery {
  std::string topic;
  int32_t partition = 0;
  Record record;
};

/// "payments-0@17": topic, partition and offset, as Kafka's own tools write a position.
std::string positionId(const std::string& topic, int32_t partition, int64_t offset);

/// The entry the record is to the checkers. A value that is not a JSON object gives no fields but the
/// header's; a field whose value is not a string is given as its JSON text.
proxy::EntryView entryOf(const Delivery& d);

} // namespace idem::kafka
