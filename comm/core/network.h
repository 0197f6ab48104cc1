// The data network between hosts, as the environment names it:
//   FTCOMM_SOCKET_IFNAME   the interface UCX uses between hosts; UCX gets it as NET_DEVICES
//                          unless UCX_NET_DEVICES is set (which then wins, e.g. to add an
//                          InfiniBand device);
//   FTCOMM_ADVERTISE_ADDR  the address this member reports to the rendezvous; by default the
//                          interface's IPv4 address.
// Both empty when unset: UCX then picks its devices itself and the member reports no address.
#pragma once

#include <string>

#include "ftcomm/status.h"

namespace ftcomm::detail {

struct DataNetwork {
  std::string interface;
  std::string address;
};

// The settings, or InvalidArgument when FTCOMM_SOCKET_IFNAME names no interface with an IPv4
// address here (the message lists the ones there are).
Result<DataNetwork> dataNetwork();

}  // namespace ftcomm::detail
