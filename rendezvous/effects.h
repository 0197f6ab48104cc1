// What a call into a job's state asks the server to do afterwards. The state machine (JobState,
// KvStore) never touches gRPC: it returns Effects, and the server persists the journal records,
// then finishes the named pending calls, broadcasts the events and closes expelled members'
// streams, in that order.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "ftcomm/proto/rendezvous.pb.h"
#include "ftcomm/status.h"

namespace ftcomm::rendezvous {

namespace pb = ::ftcomm::rendezvous::v1;
using Clock = std::chrono::steady_clock;

// Identifies one pending (blocking) call: a Join, KvWait or Reconfigure that is answered later.
using WaiterId = std::uint64_t;

struct Reply {
  WaiterId waiter = 0;
  Status status;
  std::variant<std::monostate, pb::JoinResponse, pb::ReconfigureResponse, pb::KvWaitResponse> body;
};

struct Expulsion {
  std::uint64_t memberId = 0;
  std::string reason;
};

struct Effects {
  std::vector<pb::JournalRecord> journal;  // persisted before anything below is sent
  std::vector<Reply> replies;              // finish these pending calls
  std::vector<pb::Event> events;           // broadcast to every open watch stream of the job
  std::vector<Expulsion> expelled;         // finish these members' watch streams

  bool empty() const {
    return journal.empty() && replies.empty() && events.empty() && expelled.empty();
  }
};

}  // namespace ftcomm::rendezvous
