// Conversions between ftcomm::Status and grpc::Status, and the wording of answers, used on both
// sides of the wire.
#pragma once

#include <grpcpp/support/status.h>

#include <string_view>

#include "ftcomm/status.h"

namespace ftcomm::rendezvous {

// How a standby replica's UNAVAILABLE answer starts: it refused before doing anything, so a
// client may send even a call that must not be repeated to the next replica.
constexpr std::string_view kStandbyRefusal = "this rendezvous replica stands by";

grpc::Status toGrpc(const Status& status);
Status fromGrpc(const grpc::Status& status);

}  // namespace ftcomm::rendezvous
