// The allreduce loop every member of a fault test runs, like a training loop: each step
// allreduces a vector built from this member's contribution and the step, checks the result
// against what the current members should give, and on a failure reconfigures and redoes the
// step; after every reconfigure all take the step and the table of contributions from rank 0
// (the failed step may have completed on some members only). Replacements are admitted when every
// member has seen one waiting (decided by an allreduce, so that all reconfigure at the same step)
// and catch up through shareState.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ftcomm/communicator.h"

namespace ftcomm::testing {

struct LoopHooks {
  std::function<void(int step)> atStep;     // before the step's allreduce is posted
  std::function<void(int step)> afterPost;  // right after
  std::function<void()> beforeReconfigure;
  std::function<std::string(const Reconfiguration&)> afterReconfigure;  // "" or a problem
};

class LoopMember {
 public:
  // `contribution`: this member's share of every sum (the originals: launch rank + 1).
  LoopMember(Communicator& comm, std::int64_t contribution);

  // A replacement's first call: the step and the contributions of everyone, from rank 0.
  std::string catchUp();
  // "OK steps=.. sizes=.. failures=.. rounds=..", "REFUSED <why>" when reconfigure() refused
  // (this member was expelled, or too few are left), or "ERROR <what>".
  std::string run(int steps, const LoopHooks& hooks);

 private:
  // Reconfigures after a failure (or to admit replacements); "" when the loop may go on.
  std::string recover(const LoopHooks& hooks, bool* fenced);
  std::string adopt(const Reconfiguration& r, const LoopHooks& hooks, bool* fenced);
  Status shareTable();

  Communicator& comm_;
  std::int64_t mine_;
  std::vector<std::int64_t> contributions_;  // by current rank
  int next_ = 0;                             // the next step to run
  int failures_ = 0;
  int rounds_ = 0;
  std::string sizes_;  // the world-size history, "4>3>4"
  std::string firstError_;
};

}  // namespace ftcomm::testing
