// The one error model of ftcomm: Status and Result<T>, with codes chosen by what the caller
// should do next. Every layer (rendezvous, communicator, recorder) returns these; messages name
// the job or communicator, epoch, rank and operation they concern.
//
// Thread-safety: value types; a const Status may be read from many threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace ftcomm {

enum class StatusCode : std::uint8_t {
  kOk = 0,
  kInvalidArgument,     // fix the call: bad sizes, ranks, names, flags
  kNotFound,            // the thing named does not exist (unknown member, key, job)
  kAlreadyExists,       // a duplicate: same rank claimed twice, same process joined twice
  kPermissionDenied,    // wrong or missing job token
  kFailedPrecondition,  // fix state first: stale epoch, expelled member, revoked epoch
  kTimeout,             // a deadline passed; retry higher up (e.g. reconfigure)
  kUnavailable,         // transient: retry the same call (server restarting, connection lost)
  kPeerFailed,          // a peer died; reconfigure
  kRevoked,             // the epoch was revoked; reconfigure
  kMismatch,            // ranks disagree on an operation's signature
  kResourceExhausted,   // a size or count limit was reached
  kCancelled,           // the caller or a shutdown cancelled the operation
  kInternal,            // a bug or an unexpected library error
};

constexpr std::string_view statusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kPermissionDenied:
      return "PermissionDenied";
    case StatusCode::kFailedPrecondition:
      return "FailedPrecondition";
    case StatusCode::kTimeout:
      return "Timeout";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kPeerFailed:
      return "PeerFailed";
    case StatusCode::kRevoked:
      return "Revoked";
    case StatusCode::kMismatch:
      return "Mismatch";
    case StatusCode::kResourceExhausted:
      return "ResourceExhausted";
    case StatusCode::kCancelled:
      return "Cancelled";
    case StatusCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string toString() const {
    return ok() ? "OK" : std::string(statusCodeName(code_)) + ": " + message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status notFound(std::string m) {
  return {StatusCode::kNotFound, std::move(m)};
}
inline Status alreadyExists(std::string m) {
  return {StatusCode::kAlreadyExists, std::move(m)};
}
inline Status permissionDenied(std::string m) {
  return {StatusCode::kPermissionDenied, std::move(m)};
}
inline Status failedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status timeoutError(std::string m) {
  return {StatusCode::kTimeout, std::move(m)};
}
inline Status unavailable(std::string m) {
  return {StatusCode::kUnavailable, std::move(m)};
}
inline Status resourceExhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status cancelled(std::string m) {
  return {StatusCode::kCancelled, std::move(m)};
}
inline Status internalError(std::string m) {
  return {StatusCode::kInternal, std::move(m)};
}

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design, like absl::StatusOr
  Result(Status status) : state_(std::move(status)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(state_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(state_); }
  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace ftcomm

#define FTCOMM_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::ftcomm::Status ftcomm_status_ = (expr);        \
    if (!ftcomm_status_.ok()) return ftcomm_status_; \
  } while (false)
