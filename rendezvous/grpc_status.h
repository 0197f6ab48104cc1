// Conversions between ftcomm::Status and grpc::Status, used on both sides of the wire.
#pragma once

#include <grpcpp/support/status.h>

#include "ftcomm/status.h"

namespace ftcomm::rendezvous {

grpc::Status toGrpc(const Status& status);
Status fromGrpc(const grpc::Status& status);

}  // namespace ftcomm::rendezvous
