#include "core/network.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <set>

#include "core/environment.h"

namespace ftcomm::detail {

Result<DataNetwork> dataNetwork() {
  DataNetwork network;
  network.interface = envString("FTCOMM_SOCKET_IFNAME", "");
  network.address = envString("FTCOMM_ADVERTISE_ADDR", "");
  if (network.interface.empty() || !network.address.empty()) return network;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) {
    return internalError("FTCOMM_SOCKET_IFNAME: cannot list the network interfaces");
  }
  std::set<std::string> names;
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    names.insert(i->ifa_name);
    if (network.interface == i->ifa_name && network.address.empty()) {
      char text[INET_ADDRSTRLEN] = {};
      const auto* in = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
      if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) != nullptr) {
        network.address = text;
      }
    }
  }
  ::freeifaddrs(list);
  if (network.address.empty()) {
    std::string known;
    for (const auto& name : names) known += (known.empty() ? "" : ", ") + name;
    return invalidArgument(
        "FTCOMM_SOCKET_IFNAME=" + network.interface +
        ": no interface of that name with an IPv4 address here (there are: " + known + ")");
  }
  return network;
}

}  // namespace ftcomm::detail
