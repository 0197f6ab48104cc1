// One request of a ShmDomain in flight (a send not yet written or not yet answered, a posted
// receive), or a kFin/kCancel record waiting for room in a ring. Private to the domain.
#pragma once

#include "transport/shm/shm_domain.h"

namespace ftcomm::shm {

struct ShmDomain::Op {
  transport::RequestPtr request;  // null for kFin and kCancel records
  const void* owner = nullptr;
  int peer = 0;
  bool receive = false;
  Record record{};       // a send's or answer's record; a receive's channel, slot, signature
  void* data = nullptr;  // a receive's buffer
  const void* source = nullptr;  // an eager send's data
  std::size_t capacity = 0;      // a receive's buffer size
  bool withdrawn = false;        // a cancelled kRts the peer may still be reading
};

}  // namespace ftcomm::shm
