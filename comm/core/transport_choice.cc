#include "core/transport_choice.h"

#include <cstdlib>

#include "transport/shm/shm_transport.h"
#include "transport/ucx/ucx_transport.h"

namespace ftcomm::detail {

Result<TransportMode> transportModeFromEnv() {
  const char* value = std::getenv("FTCOMM_TRANSPORT");
  const std::string mode = value == nullptr ? "auto" : value;
  if (mode == "auto" || mode.empty()) return TransportMode::kAuto;
  if (mode == "ucx") return TransportMode::kUcx;
  if (mode == "shm") return TransportMode::kShm;
  return invalidArgument("FTCOMM_TRANSPORT='" + mode + "': expected auto, ucx or shm");
}

const char* transportModeName(TransportMode mode) {
  switch (mode) {
    case TransportMode::kUcx:
      return "ucx";
    case TransportMode::kShm:
      return "shm";
    default:
      return "auto";
  }
}

Result<std::unique_ptr<transport::Transport>> makeTransportLocked(
    Engine& engine, const std::shared_ptr<shm::ShmDomain>& domain, const std::vector<int>& members,
    int rank, const std::vector<std::string>& addresses,
    const std::vector<std::uint16_t>& channels) {
  bool allLocal = domain != nullptr;
  for (std::size_t r = 0; domain && r < members.size(); ++r) allLocal &= domain->local(members[r]);
  std::unique_ptr<transport::Transport> remote;
  if (!allLocal) {
    auto ucx = ucx::UcxTransport::connect(engine.workerLocked(), rank, addresses, channels);
    if (!ucx.ok()) return ucx.status();
    remote = std::move(ucx).value();
    if (!domain) return remote;
  }
  auto shm = shm::ShmTransport::create(domain, rank, members, channels, std::move(remote));
  if (!shm.ok()) return shm.status();
  return std::unique_ptr<transport::Transport>(std::move(shm).value());
}

bool everyPeerReadable(const transport::Transport& transport) {
  for (int peer = 0; peer < transport.size(); ++peer) {
    if (peer != transport.rank() && !transport.canReadPeer(peer)) return false;
  }
  return true;
}

}  // namespace ftcomm::detail
