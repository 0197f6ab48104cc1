// A collective made of phases that run one after another, each a task of its own: the
// node-aware collectives (within each host, across hosts, within each host again). A rank skips
// the phases it takes no part in, for which makePhase() returns null.
#pragma once

#include <memory>

#include "algorithms/collective_task.h"

namespace ftcomm::algorithms {

class PhasedTask : public TaskBase {
 public:
  using TaskBase::TaskBase;

  Result<bool> advance() final;
  bool hasMoreWork() const final { return current_ && current_->hasMoreWork(); }

 protected:
  // Runs once, before the first phase (puts the input where the phases work).
  virtual void start() {}
  virtual int phases() const = 0;
  // This rank's task for phase `index` (0 .. phases()-1); null where it takes no part.
  virtual Result<std::unique_ptr<CollectiveTask>> makePhase(int index) = 0;
  // Runs once, after the last phase; its result is the collective's.
  virtual Result<bool> finish() { return true; }

 private:
  // Makes the task of the next phase this rank takes part in; none after the last.
  Status startNext();

  bool started_ = false;
  int next_ = 0;
  std::unique_ptr<CollectiveTask> current_;
};

}  // namespace ftcomm::algorithms
