// Built-in fault injection, inert unless FTCOMM_FAULT is set (ftcomm-run --fault sets it):
//
//   FTCOMM_FAULT = SPEC[;SPEC...]
//   SPEC         = rank=R,op=OP,seq=S,action=kill|stop|hang|delay:MS|drop-conn|exit:CODE|
//                  cut-link[:MS]|silent|kill-host|lose-host|cut-rendezvous:MS
//
// R is the process's launch rank (mpirun's); OP an operation name in lower case without
// separators (allreduce, broadcast, alltoall, split, send, reconfigure, ...); S the operation's
// sequence number on its communicator, as the flight recorder shows it (for reconfigure: the
// epoch being left). The fault fires when the operation is issued: deterministic, logged to
// stderr, and recorded in the flight recorder as FAULT_INJECTED before it acts. Each spec fires
// once.
//
//   kill       SIGKILL, at once (no dump: a crash leaves none)
//   stop       SIGSTOP: the process hangs with its sockets open; only its lease finds it
//   hang       the calling thread never returns; the rest of the process (heartbeats) lives on
//   delay:MS   the call is held MS milliseconds, then goes on (a slow rank)
//   drop-conn  every peer of the communicator is declared failed here, as if the network to
//              them had gone; the peers then see this process as gone
//   exit:CODE  _exit(CODE)
//
// Under `ftcomm-run --nodes` (simulated hosts; FTCOMM_RUN_CONTROL names the launcher's control
// folder), two more act on the process's whole host, through the launcher, which the call waits
// for (up to 10 s):
//   cut-link[:MS]  the host's data link goes down (restored after MS ms if given); its
//                  processes live on, cut off from the rest of the job and the rendezvous
//   silent         the data link goes down, then the host's ranks are killed: a host that dies
//                  without closing a connection
//   kill-host      every rank of the host is killed at once (their sockets close)
//   lose-host      every process of the host is killed, mpirun's daemon or ftcomm-run's agent
//                  included: the whole host is gone
//   cut-rendezvous:MS  the rendezvous's host (the head) loses its data link for MS ms
//
// Thread-safety: any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "ftcomm/status.h"

namespace ftcomm::detail {

class FaultInjector {
 public:
  enum class Action {
    kKill,
    kStop,
    kHang,
    kDelay,
    kDropConnection,
    kExit,
    kCutLink,
    kSilent,
    kKillHost,
    kLoseHost,
    kCutRendezvous
  };
  struct Spec {
    int rank = -1;
    std::string op;
    std::uint64_t seq = 0;
    Action action = Action::kKill;
    int argument = 0;  // delay's or a cut's milliseconds (cut-link: 0 for ever), exit's code
    bool fired = false;
  };

  // The spec list of this process, parsed once from FTCOMM_FAULT.
  static FaultInjector& process();
  static Result<std::vector<Spec>> parse(const std::string& text);

  // Ok, or why FTCOMM_FAULT is malformed (creation then fails with it).
  const Status& status() const { return status_; }
  bool armed() const { return !specs_.empty(); }

  // Called by the facade as it issues an operation. `dropConnection` runs for drop-conn.
  void at(const std::string& op, int launchRank, std::uint64_t commId, std::uint64_t epoch,
          std::uint64_t seq, const std::function<void()>& dropConnection);

 private:
  std::mutex mu_;
  std::vector<Spec> specs_;
  Status status_;
};

// "allReduce" -> "allreduce": the names FTCOMM_FAULT uses.
std::string faultOpName(const std::string& callName);

}  // namespace ftcomm::detail
