#include "transport/shm/peer_mapping.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace ftcomm::shm {

Result<PeerMapping> mapPeerFd(pid_t pid, int fd, std::size_t minimum) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const int opened = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (opened < 0) return unavailable("opening " + path + ": " + std::strerror(errno));
  struct stat st {};
  PeerMapping mapping;
  if (::fstat(opened, &st) == 0) mapping.length = static_cast<std::size_t>(st.st_size);
  void* base = mapping.length >= minimum && mapping.length > 0
                   ? ::mmap(nullptr, mapping.length, PROT_READ | PROT_WRITE, MAP_SHARED, opened, 0)
                   : MAP_FAILED;
  const int mapError = errno;
  ::close(opened);
  if (mapping.length < minimum || mapping.length == 0) {
    return unavailable(path + " holds " + std::to_string(mapping.length) + " bytes, not the " +
                       std::to_string(minimum) + " announced");
  }
  if (base == MAP_FAILED) return unavailable("mmap of " + path + ": " + std::strerror(mapError));
  mapping.base = base;
  return mapping;
}

}  // namespace ftcomm::shm
