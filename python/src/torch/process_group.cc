#include "python/src/torch/process_group.h"

#include <string>

namespace ftcomm::torch_backend {

ProcessGroupFtcomm::ProcessGroupFtcomm(std::shared_ptr<Communicator> comm,
                                       std::chrono::milliseconds timeout)
    : c10d::ProcessGroup(comm->rank(), comm->size()),
      comm_(std::move(comm)),
      epoch_(comm_->epoch()),
      timeout_(timeout),
      completion_(std::make_unique<CompletionThread>()) {
  init();
}

ProcessGroupFtcomm::~ProcessGroupFtcomm() = default;

OpOptions ProcessGroupFtcomm::begin(std::chrono::milliseconds requested, const char* op) const {
  if (comm_->epoch() != epoch_) {
    throw CommError(Status(StatusCode::kRevoked,
                           std::string("ftcomm ") + op + ": this process group belongs to epoch " +
                               std::to_string(epoch_) +
                               ", and its communicator was reconfigured into epoch " +
                               std::to_string(comm_->epoch()) +
                               "; use the group that ftcomm.torch.reconfigure() returned"));
  }
  OpOptions options;
  options.timeout = requested.count() > 0 ? requested : timeout_;
  return options;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupFtcomm::launch(c10d::OpType type, ftcomm::Work work,
                                                          std::vector<at::Tensor> outputs,
                                                          std::vector<at::Tensor> keep,
                                                          std::function<void()> copyOut) {
  auto op = std::make_shared<Operation>();
  op->work = std::move(work);
  op->outputs = std::move(outputs);
  op->keep = std::move(keep);
  op->copyOut = std::move(copyOut);
  return c10::make_intrusive<FtcommWork>(getRank(), type, std::move(op), completion_->queue());
}

}  // namespace ftcomm::torch_backend
