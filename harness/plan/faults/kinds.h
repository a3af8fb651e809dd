#pragma once
/// The built-in fault kinds, one file each, registered in registry.cc.
#include "plan/fault_kind.h"

#include <memory>

namespace idem::faults {

std::unique_ptr<FaultKind> makeKill();

} // namespace idem::faults
