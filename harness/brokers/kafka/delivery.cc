#include "brokers/kafka/delivery.h"

#include <nlohmann/json.hpp>

namespace idem::kafka {

std::string positionId(const std::string& topic, int32_t partition, int64_t offset) {
  return topic + "-" + std::to_string(partition) + "@" + std::to_string(offset);
}

proxy::EntryView entryOf(const Delivery& d) {
  proxy::EntryView e;
  e.id = positionId(d.topic, d.partition, d.record.offset);
  bool hasEventId = false;
  if (d.record.value) {
    const auto j = nlohmann::ordered_json::parse(*d.record.value, nullptr, false);
    if (j.is_object()) {
      for (const auto& [k, v] : j.items()) {
        e.fields.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
        hasEventId = hasEventId || k == "event_id";
      }
    }
  }
  if (!hasEventId)
    for (const auto& [k, v] : d.record.headers)
      if (k == "event_id" && v) {
        e.fields.emplace_back(k, *v);
        break;
      }
  return e;
}

} // namespace idem::kafka
