#include "rendezvous/grpc_status.h"

namespace ftcomm::rendezvous {

grpc::Status toGrpc(const Status& status) {
  using grpc::StatusCode;
  switch (status.code()) {
    case ftcomm::StatusCode::kOk:
      return grpc::Status::OK;
    case ftcomm::StatusCode::kInvalidArgument:
    case ftcomm::StatusCode::kMismatch:
      return {StatusCode::INVALID_ARGUMENT, status.message()};
    case ftcomm::StatusCode::kNotFound:
      return {StatusCode::NOT_FOUND, status.message()};
    case ftcomm::StatusCode::kAlreadyExists:
      return {StatusCode::ALREADY_EXISTS, status.message()};
    case ftcomm::StatusCode::kPermissionDenied:
      return {StatusCode::PERMISSION_DENIED, status.message()};
    case ftcomm::StatusCode::kFailedPrecondition:
    case ftcomm::StatusCode::kPeerFailed:
    case ftcomm::StatusCode::kRevoked:
      return {StatusCode::FAILED_PRECONDITION, status.message()};
    case ftcomm::StatusCode::kTimeout:
      return {StatusCode::DEADLINE_EXCEEDED, status.message()};
    case ftcomm::StatusCode::kUnavailable:
      return {StatusCode::UNAVAILABLE, status.message()};
    case ftcomm::StatusCode::kResourceExhausted:
      return {StatusCode::RESOURCE_EXHAUSTED, status.message()};
    case ftcomm::StatusCode::kCancelled:
      return {StatusCode::CANCELLED, status.message()};
    case ftcomm::StatusCode::kInternal:
      return {StatusCode::INTERNAL, status.message()};
  }
  return {StatusCode::UNKNOWN, status.message()};
}

Status fromGrpc(const grpc::Status& status) {
  using grpc::StatusCode;
  const std::string& m = status.error_message();
  switch (status.error_code()) {
    case StatusCode::OK:
      return Status::Ok();
    case StatusCode::INVALID_ARGUMENT:
    case StatusCode::OUT_OF_RANGE:
      return invalidArgument(m);
    case StatusCode::NOT_FOUND:
      return notFound(m);
    case StatusCode::ALREADY_EXISTS:
      return alreadyExists(m);
    case StatusCode::PERMISSION_DENIED:
    case StatusCode::UNAUTHENTICATED:
      return permissionDenied(m);
    case StatusCode::FAILED_PRECONDITION:
    case StatusCode::ABORTED:
      return failedPrecondition(m);
    case StatusCode::DEADLINE_EXCEEDED:
      return timeoutError(m);
    case StatusCode::UNAVAILABLE:
      return unavailable(m);
    case StatusCode::RESOURCE_EXHAUSTED:
      return resourceExhausted(m);
    case StatusCode::CANCELLED:
      return cancelled(m);
    default:
      return internalError("gRPC " + std::to_string(status.error_code()) + ": " + m);
  }
}

}  // namespace ftcomm::rendezvous
