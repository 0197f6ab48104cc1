#include "rma/window_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "transport/shm/peer_mapping.h"

namespace ftcomm::rma {
namespace {

constexpr std::uint64_t kMagic = 0x66746377696e3031ull;  // "ftcwin01"
constexpr std::size_t kPage = 4096;

struct Header {
  std::uint64_t magic;
  std::uint64_t slots;
  std::uint64_t dataBytes;
};

Status errnoStatus(const std::string& what) {
  return unavailable(what + ": " + std::strerror(errno));
}

}  // namespace

std::size_t WindowRegion::headerBytes(std::size_t slots) {
  const std::size_t raw = 64 + slots * sizeof(std::uint64_t);
  return (raw + kPage - 1) / kPage * kPage;
}

Result<WindowRegion> WindowRegion::create(std::size_t slots, std::size_t dataBytes) {
  WindowRegion region;
  region.slots_ = slots;
  region.length_ = headerBytes(slots) + dataBytes;
  region.fd_ = ::memfd_create("ftcomm-window", MFD_CLOEXEC);
  if (region.fd_ < 0) return errnoStatus("memfd_create for a window");
  if (::ftruncate(region.fd_, static_cast<off_t>(region.length_)) != 0) {
    return errnoStatus("sizing a window of " + std::to_string(dataBytes) + " bytes");
  }
  void* base = ::mmap(nullptr, region.length_, PROT_READ | PROT_WRITE, MAP_SHARED, region.fd_, 0);
  if (base == MAP_FAILED) return errnoStatus("mapping a window");
  region.base_ = base;
  auto* header = static_cast<Header*>(base);
  header->slots = slots;
  header->dataBytes = dataBytes;
  std::atomic_ref<std::uint64_t>(header->magic).store(kMagic, std::memory_order_release);
  return region;
}

Result<WindowRegion> WindowRegion::open(pid_t pid, int fd, std::size_t slots,
                                        std::size_t dataBytes) {
  WindowRegion region;
  region.slots_ = slots;
  region.length_ = headerBytes(slots) + dataBytes;
  auto mapped = shm::mapPeerFd(pid, fd, region.length_);
  if (!mapped.ok()) return mapped.status();
  region.base_ = mapped->base;
  const std::size_t length = mapped->length;
  const auto* header = static_cast<const Header*>(region.base_);
  if (length != region.length_ || header->magic != kMagic || header->slots != slots ||
      header->dataBytes != dataBytes) {
    region.length_ = length;  // unmapped whole by the destructor
    return unavailable("/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd) +
                       " is not the window region announced");
  }
  return region;
}

WindowRegion& WindowRegion::operator=(WindowRegion&& other) noexcept {
  if (this == &other) return *this;
  this->~WindowRegion();
  base_ = std::exchange(other.base_, nullptr);
  length_ = std::exchange(other.length_, 0);
  slots_ = std::exchange(other.slots_, 0);
  fd_ = std::exchange(other.fd_, -1);
  return *this;
}

WindowRegion::~WindowRegion() {
  if (base_ != nullptr) ::munmap(base_, length_);
  base_ = nullptr;
  closeFd();
}

void WindowRegion::closeFd() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::atomic<std::uint64_t>* WindowRegion::signals() const {
  return reinterpret_cast<std::atomic<std::uint64_t>*>(static_cast<std::byte*>(base_) + 64);
}

std::byte* WindowRegion::data() const {
  return static_cast<std::byte*>(base_) + headerBytes(slots_);
}

Status WindowRegion::renew() {
  const int fresh = ::memfd_create("ftcomm-window", MFD_CLOEXEC);
  if (fresh < 0) return errnoStatus("memfd_create for a renewed window");
  if (::ftruncate(fresh, static_cast<off_t>(length_)) != 0) {
    ::close(fresh);
    return errnoStatus("sizing a renewed window");
  }
  // Copy the contents in, then map the new memfd over the old mapping at the same address.
  std::size_t done = 0;
  while (done < length_) {
    const ssize_t n = ::pwrite(fresh, static_cast<std::byte*>(base_) + done, length_ - done,
                               static_cast<off_t>(done));
    if (n <= 0) {
      ::close(fresh);
      return errnoStatus("copying a window into its renewed region");
    }
    done += static_cast<std::size_t>(n);
  }
  void* at = ::mmap(base_, length_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fresh, 0);
  if (at == MAP_FAILED) {
    ::close(fresh);
    return errnoStatus("mapping a renewed window");
  }
  closeFd();
  fd_ = fresh;
  return Status::Ok();
}

}  // namespace ftcomm::rma
