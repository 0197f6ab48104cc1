// NCCL's unique id (128 opaque bytes) as text for the rendezvous's key-value store, whose values
// are protobuf strings (valid UTF-8 only).
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "ftcomm/status.h"

namespace ftcomm::nccl {

std::string uniqueIdToText(const std::string& id);
// InvalidArgument for text that is not what uniqueIdToText() makes.
Result<std::string> uniqueIdFromText(const std::string& text);

}  // namespace ftcomm::nccl
