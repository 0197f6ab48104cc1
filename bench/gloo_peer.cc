#include "gloo_peer.h"

#include <gloo/allgather_ring.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/alltoall.h>
#include <gloo/broadcast_one_to_all.h>
#include <gloo/reduce.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include "core/network.h"

namespace ftcomm::bench {

Result<std::unique_ptr<GlooPeer>> GlooPeer::connect(int rank, int size,
                                                    const std::string& storeDir) {
  // Gloo listens where ftcomm's own traffic between hosts goes: the address this member
  // advertises (FTCOMM_ADVERTISE_ADDR, else FTCOMM_SOCKET_IFNAME's address, which ftcomm-run
  // --nodes sets), else loopback.
  auto network = detail::dataNetwork();
  if (!network.ok()) return network.status();
  const std::string where = network->address.empty() ? "127.0.0.1" : network->address;
  try {
    auto device = gloo::transport::tcp::CreateDevice(gloo::transport::tcp::attr(where.c_str()));
    gloo::rendezvous::FileStore store(storeDir);
    auto peer = std::make_unique<GlooPeer>();
    peer->rank_ = rank;
    peer->size_ = size;
    peer->context_ = std::make_shared<gloo::rendezvous::Context>(rank, size);
    // A Gloo call that hangs (seen once at 4 oversubscribed ranks, inside AllreduceRing) throws
    // after this instead; the bench then drops Gloo for the rest of the run.
    peer->context_->setTimeout(std::chrono::seconds(30));
    peer->context_->connectFullMesh(store, device);
    return peer;
  } catch (const std::exception& e) {
    return unavailable("Gloo on " + where + ": " + e.what());
  }
}

std::vector<std::string> GlooPeer::variants(const std::string& op) {
  if (op == "allreduce") return {"ring", "hd"};  // hd: halving-doubling
  return {""};
}

std::function<void()> GlooPeer::bind(const std::string& op, const std::string& variant, float* send,
                                     float* recv, std::size_t count) {
  const int n = static_cast<int>(count);
  const auto blocks = static_cast<std::size_t>(size_);
  if (op == "allreduce" && variant == "ring") {
    auto algorithm = std::make_shared<gloo::AllreduceRing<float>>(context_, std::vector{recv}, n);
    return [algorithm] { algorithm->run(); };
  }
  if (op == "allreduce") {
    auto algorithm =
        std::make_shared<gloo::AllreduceHalvingDoubling<float>>(context_, std::vector{recv}, n);
    return [algorithm] { algorithm->run(); };
  }
  if (op == "broadcast") {
    auto algorithm =
        std::make_shared<gloo::BroadcastOneToAll<float>>(context_, std::vector{recv}, count, 0);
    return [algorithm] { algorithm->run(); };
  }
  if (op == "allgather") {
    auto algorithm = std::make_shared<gloo::AllgatherRing<float>>(
        context_, std::vector<const float*>{send}, recv, n);
    return [algorithm] { algorithm->run(); };
  }
  if (op == "reducescatter") {  // in place on the whole input
    auto algorithm = std::make_shared<gloo::ReduceScatterHalvingDoubling<float>>(
        context_, std::vector{send}, static_cast<int>(count * blocks), std::vector<int>(blocks, n));
    return [algorithm] { algorithm->run(); };
  }
  const std::uint32_t tag = tag_++;
  if (op == "reduce") {
    return [this, send, recv, count, tag] {
      gloo::ReduceOptions options(context_);
      options.setInput(send, count);
      options.setOutput(recv, count);
      options.setRoot(0);
      options.setTag(tag);
      options.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      gloo::reduce(options);
    };
  }
  return [this, send, recv, count, blocks, tag] {  // alltoall
    gloo::AlltoallOptions options(context_);
    options.setInput(send, count * blocks);
    options.setOutput(recv, count * blocks);
    options.setTag(tag);
    gloo::alltoall(options);
  };
}

}  // namespace ftcomm::bench
