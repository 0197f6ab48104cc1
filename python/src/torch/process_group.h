// ProcessGroupFtcomm: torch.distributed's backend "ftcomm" over one ftcomm Communicator.
//
// torch fixes a ProcessGroup's rank and size at construction, while ftcomm's communicator is
// reconfigured in place. So a group serves the epoch it was made in: once the communicator
// moved on (reconfigure()), every operation of the old group fails with Revoked, and
// ftcomm.torch.reconfigure() gives the group of the new epoch over the same communicator.
//
// Every operation is posted at once and returns an FtcommWork (torch_work.h); its timeout is
// the option's, else the group's. CPU tensors only.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <chrono>
#include <functional>
#include <memory>

#include "ftcomm/communicator.h"
#include "python/src/torch/torch_work.h"

namespace ftcomm::torch_backend {

class ProcessGroupFtcomm : public c10d::ProcessGroup {
 public:
  ProcessGroupFtcomm(std::shared_ptr<Communicator> comm, std::chrono::milliseconds timeout);
  ~ProcessGroupFtcomm() override;

  const std::string getBackendName() const override { return "ftcomm"; }
  const std::shared_ptr<Communicator>& communicator() const { return comm_; }
  std::uint64_t epoch() const { return epoch_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplits,
                                               std::vector<int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;

 private:
  // The options of one operation, after checking that the communicator is still in this
  // group's epoch (a Revoked CommError otherwise).
  OpOptions begin(std::chrono::milliseconds requested, const char* op) const;
  c10::intrusive_ptr<c10d::Work> launch(c10d::OpType type, ftcomm::Work work,
                                        std::vector<at::Tensor> outputs,
                                        std::vector<at::Tensor> keep,
                                        std::function<void()> copyOut = nullptr);

  std::shared_ptr<Communicator> comm_;
  const std::uint64_t epoch_;
  const std::chrono::milliseconds timeout_;
  std::unique_ptr<CompletionThread> completion_;
};

}  // namespace ftcomm::torch_backend
