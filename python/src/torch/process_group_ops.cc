// The collectives and point-to-point operations of ProcessGroupFtcomm. Where torch passes a list
// of tensors that ftcomm wants as one buffer (allgather's and gather's outputs, scatter's and
// reduce_scatter's inputs, alltoall's lists), a staging tensor carries them, and the copy out
// happens when the operation ends (Operation::finish).
#include <numeric>

#include "python/src/counts.h"
#include "python/src/torch/process_group.h"
#include "python/src/torch/tensors.h"

namespace ftcomm::torch_backend {

using python::displacements;

namespace {

std::size_t count(const at::Tensor& t) {
  return static_cast<std::size_t>(t.numel());
}

// Element counts of alltoall_base's splits (rows of dim 0); empty: equal blocks.
std::vector<std::size_t> splitCounts(const at::Tensor& t, const std::vector<int64_t>& splits,
                                     int size, const char* what) {
  std::vector<std::size_t> counts(static_cast<std::size_t>(size));
  if (t.dim() == 0) {
    TORCH_CHECK(splits.empty(), "ftcomm alltoall_base: a scalar ", what, " cannot be split");
  }
  const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  const int64_t perRow = rows == 0 ? 0 : t.numel() / rows;
  if (splits.empty()) {
    TORCH_CHECK(rows % size == 0, "ftcomm alltoall_base: ", what, "'s first dimension (", rows,
                ") does not divide by the group's size ", size);
    for (auto& c : counts) c = static_cast<std::size_t>(rows / size * perRow);
    return counts;
  }
  TORCH_CHECK(static_cast<int>(splits.size()) == size, "ftcomm alltoall_base: ", what,
              " splits need ", size, " entries, got ", splits.size());
  int64_t sum = 0;
  for (std::size_t i = 0; i < splits.size(); ++i) {
    TORCH_CHECK(splits[i] >= 0, "ftcomm alltoall_base: negative split");
    sum += splits[i];
    counts[i] = static_cast<std::size_t>(splits[i] * perRow);
  }
  TORCH_CHECK(sum == rows, "ftcomm alltoall_base: ", what, " splits sum to ", sum, " but ", what,
              " has ", rows, " rows");
  return counts;
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupFtcomm::broadcast(std::vector<at::Tensor>& tensors,
                                                             const c10d::BroadcastOptions& opts) {
  auto options = begin(opts.timeout, "broadcast");
  const auto& t = single(tensors, "broadcast");
  auto w = comm_->broadcast(t.data_ptr(), count(t), dataTypeOf(t, "broadcast"),
                            static_cast<int>(opts.rootRank), options);
  return launch(c10d::OpType::BROADCAST, std::move(w), tensors, {});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupFtcomm::allreduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::AllreduceOptions& opts) {
  auto options = begin(opts.timeout, "allreduce");
  const auto& t = single(tensors, "allreduce");
  const ReduceOp op = reduceOpOf(opts.reduceOp, t, "allreduce");
  auto w = comm_->allReduce(t.data_ptr(), t.data_ptr(), count(t), dataTypeOf(t, "allreduce"), op,
                            options);
  return launch(c10d::OpType::ALLREDUCE, std::move(w), tensors, {});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupFtcomm::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  auto options = begin(opts.timeout, "allreduce_coalesced");
  TORCH_CHECK(!tensors.empty(), "ftcomm allreduce_coalesced: no tensors");
  for (const auto& t : tensors) {
    TORCH_CHECK(t.scalar_type() == tensors.front().scalar_type(),
                "ftcomm allreduce_coalesced: the tensors need one dtype");
    (void)dataTypeOf(t, "allreduce_coalesced");
  }
  const ReduceOp op = reduceOpOf(opts.reduceOp, tensors.front(), "allreduce_coalesced");
  at::Tensor flat = flatten(tensors);
  auto w = comm_->allReduce(flat.data_ptr(), flat.data_ptr(), count(flat),
                            dataTypeOf(flat, "allreduce_coalesced"), op, options);
  auto outputs = tensors;
  return launch(c10d::OpType::ALLREDUCE_COALESCED, std::move(w), tensors, {flat},
                [flat, outputs]() mutable { unflatten(flat, outputs); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupFtcomm::reduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::ReduceOptions& opts) {
  auto options = begin(opts.timeout, "reduce");
  const auto& t = single(tensors, "reduce");
  const ReduceOp op = reduceOpOf(opts.reduceOp, t, "reduce");
  const int root = static_cast<int>(opts.rootRank);
  // In place on every member (torch leaves the other members' tensors unspecified).
  auto w = comm_->reduce(t.data_ptr(), t.data_ptr(), count(t), dataTypeOf(t, "reduce"), op, root,
                         options);
  return launch(c10d::OpType::REDUCE, std::move(w), tensors, {});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupFtcomm::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  auto options = begin(opts.timeout, "allgather");
  const auto& in = single(inputs, "allgather");
  TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
              "ftcomm allgather: expects one list of ", getSize(), " output tensors");
  checkSame(outputs[0], in, in.numel(), "allgather", "output");
  at::Tensor flat = at::empty({in.numel() * getSize()}, in.options());
  auto w = comm_->allGather(in.data_ptr(), flat.data_ptr(), count(in), dataTypeOf(in, "allgather"),
                            options);
  auto outs = outputs[0];
  return launch(c10d::OpType::ALLGATHER, std::move(w), outs, {in, flat},
                [flat, outs]() mutable { unflatten(flat, outs); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupFtcomm::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  auto options = begin(opts.timeout, "_allgather_base");
  checkSame({output}, input, input.numel() * getSize(), "_allgather_base", "the output");
  auto w = comm_->allGather(input.data_ptr(), output.data_ptr(), count(input),
                            dataTypeOf(input, "_allgather_base"), options);
  return launch(c10d::OpType::_ALLGATHER_BASE, std::move(w), {output}, {input});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupFtcomm::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  auto options = begin(opts.timeout, "gather");
  const auto& in = single(inputs, "gather");
  const int root = static_cast<int>(opts.rootRank);
  const auto type = dataTypeOf(in, "gather");
  if (getRank() != root) {
    TORCH_CHECK(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()),
                "ftcomm gather: only the root passes output tensors");
    auto w = comm_->gather(in.data_ptr(), nullptr, count(in), type, root, options);
    return launch(c10d::OpType::GATHER, std::move(w), {}, {in});
  }
  TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
              "ftcomm gather: the root expects one list of ", getSize(), " output tensors");
  checkSame(outputs[0], in, in.numel(), "gather", "output");
  at::Tensor flat = at::empty({in.numel() * getSize()}, in.options());
  auto w = comm_->gather(in.data_ptr(), flat.data_ptr(), count(in), type, root, options);
  auto outs = outputs[0];
  return launch(c10d::OpType::GATHER, std::move(w), outs, {in, flat},
                [flat, outs]() mutable { unflatten(flat, outs); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupFtcomm::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  auto options = begin(opts.timeout, "scatter");
  const auto& out = single(outputs, "scatter");
  const int root = static_cast<int>(opts.rootRank);
  const auto type = dataTypeOf(out, "scatter");
  if (getRank() != root) {
    TORCH_CHECK(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()),
                "ftcomm scatter: only the root passes input tensors");
    auto w = comm_->scatter(nullptr, out.data_ptr(), count(out), type, root, options);
    return launch(c10d::OpType::SCATTER, std::move(w), outputs, {});
  }
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(),
              "ftcomm scatter: the root expects one list of ", getSize(), " input tensors");
  checkSame(inputs[0], out, out.numel(), "scatter", "input");
  at::Tensor flat = flatten(inputs[0]);
  auto w = comm_->scatter(flat.data_ptr(), out.data_ptr(), count(out), type, root, options);
  return launch(c10d::OpType::SCATTER, std::move(w), outputs, {flat});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupFtcomm::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  auto options = begin(opts.timeout, "reduce_scatter");
  const auto& out = single(outputs, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(),
              "ftcomm reduce_scatter: expects one list of ", getSize(), " input tensors");
  checkSame(inputs[0], out, out.numel(), "reduce_scatter", "input");
  const ReduceOp op = reduceOpOf(opts.reduceOp, out, "reduce_scatter");
  at::Tensor flat = flatten(inputs[0]);
  auto w = comm_->reduceScatter(flat.data_ptr(), out.data_ptr(), count(out),
                                dataTypeOf(out, "reduce_scatter"), op, options);
  return launch(c10d::OpType::REDUCE_SCATTER, std::move(w), outputs, {flat});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupFtcomm::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  auto options = begin(opts.timeout, "_reduce_scatter_base");
  checkSame({input}, output, output.numel() * getSize(), "_reduce_scatter_base", "the input");
  const ReduceOp op = reduceOpOf(opts.reduceOp, output, "_reduce_scatter_base");
  auto w = comm_->reduceScatter(input.data_ptr(), output.data_ptr(), count(output),
                                dataTypeOf(output, "_reduce_scatter_base"), op, options);
  return launch(c10d::OpType::_REDUCE_SCATTER_BASE, std::move(w), {output}, {input});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupFtcomm::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& outputSplits,
    std::vector<int64_t>& inputSplits, const c10d::AllToAllOptions& opts) {
  auto options = begin(opts.timeout, "alltoall_base");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(),
              "ftcomm alltoall_base: input and output need one dtype");
  const auto type = dataTypeOf(input, "alltoall_base");
  (void)dataTypeOf(output, "alltoall_base");
  auto sendCounts = splitCounts(input, inputSplits, getSize(), "input");
  auto recvCounts = splitCounts(output, outputSplits, getSize(), "output");
  auto sendDispls = displacements(sendCounts);
  auto recvDispls = displacements(recvCounts);
  auto w = comm_->allToAllV(input.data_ptr(), sendCounts, sendDispls, output.data_ptr(), recvCounts,
                            recvDispls, type, options);
  return launch(c10d::OpType::ALLTOALL_BASE, std::move(w), {output}, {input});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupFtcomm::alltoall(std::vector<at::Tensor>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllToAllOptions& opts) {
  auto options = begin(opts.timeout, "alltoall");
  TORCH_CHECK(
      static_cast<int>(outputs.size()) == getSize() && static_cast<int>(inputs.size()) == getSize(),
      "ftcomm alltoall: expects ", getSize(), " input and output tensors");
  std::vector<std::size_t> sendCounts, recvCounts;
  for (const auto& t : inputs) {
    TORCH_CHECK(t.scalar_type() == inputs[0].scalar_type(), "ftcomm alltoall: mixed dtypes");
    sendCounts.push_back(count(t));
  }
  for (const auto& t : outputs) {
    TORCH_CHECK(t.scalar_type() == inputs[0].scalar_type(), "ftcomm alltoall: mixed dtypes");
    (void)dataTypeOf(t, "alltoall");
    recvCounts.push_back(count(t));
  }
  at::Tensor send = flatten(inputs);
  at::Tensor recv = at::empty(
      {static_cast<int64_t>(std::accumulate(recvCounts.begin(), recvCounts.end(), std::size_t{0}))},
      inputs[0].options());
  auto w = comm_->allToAllV(send.data_ptr(), sendCounts, displacements(sendCounts), recv.data_ptr(),
                            recvCounts, displacements(recvCounts), dataTypeOf(send, "alltoall"),
                            options);
  auto outs = outputs;
  return launch(c10d::OpType::ALLTOALL, std::move(w), outs, {send, recv},
                [recv, outs]() mutable { unflatten(recv, outs); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupFtcomm::barrier(const c10d::BarrierOptions& opts) {
  auto options = begin(opts.timeout, "barrier");
  return launch(c10d::OpType::BARRIER, comm_->barrier(options), {}, {});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupFtcomm::send(std::vector<at::Tensor>& tensors,
                                                        int dstRank, int tag) {
  auto options = begin(std::chrono::milliseconds(0), "send");
  const auto& t = single(tensors, "send");
  auto w = comm_->send(t.data_ptr(), count(t), dataTypeOf(t, "send"), dstRank, tag, options);
  return launch(c10d::OpType::SEND, std::move(w), tensors, {});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupFtcomm::recv(std::vector<at::Tensor>& tensors,
                                                        int srcRank, int tag) {
  auto options = begin(std::chrono::milliseconds(0), "recv");
  const auto& t = single(tensors, "recv");
  auto w = comm_->recv(t.data_ptr(), count(t), dataTypeOf(t, "recv"), srcRank, tag, options);
  return launch(c10d::OpType::RECV, std::move(w), tensors, {});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupFtcomm::recvAnysource(std::vector<at::Tensor>&, int) {
  TORCH_CHECK(false,
              "ftcomm recv: a receive from any source is not supported; name the source rank");
}

}  // namespace ftcomm::torch_backend
