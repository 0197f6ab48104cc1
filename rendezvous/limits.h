// Input limits of the rendezvous service and the checks that enforce them. Every request is
// validated here before it reaches a job's state; proto/rendezvous.proto documents the same
// numbers for clients.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ftcomm/status.h"

namespace ftcomm::rendezvous {

inline constexpr std::size_t kMaxJobIdBytes = 128;
inline constexpr std::size_t kMaxKeyBytes = 256;
inline constexpr std::size_t kMaxValueBytes = 1 << 20;
inline constexpr std::size_t kMaxKeysPerWait = 64;
inline constexpr std::size_t kMaxKeysPerJob = 65536;
inline constexpr std::size_t kMaxKvBytesPerJob = std::size_t{256} << 20;
inline constexpr std::int32_t kMaxWorldSize = 65536;
inline constexpr std::uint32_t kMaxTimeoutMs = 3600 * 1000;
inline constexpr std::size_t kMaxHostBytes = 256;
inline constexpr std::size_t kMaxInstanceIdBytes = 256;
inline constexpr std::size_t kMaxTransportAddressBytes = 64 * 1024;
inline constexpr std::size_t kMaxReasonBytes = 1024;
// gRPC's receive limit on the server: a value plus its key and envelope fit with room to spare.
inline constexpr int kMaxMessageBytes = 4 << 20;

Status validateJobId(std::string_view jobId);
Status validateKey(std::string_view key);
Status validateValue(std::string_view key, std::size_t valueBytes);
Status validateTimeout(std::uint32_t timeoutMs);
Status validateReason(std::string_view reason);

}  // namespace ftcomm::rendezvous
