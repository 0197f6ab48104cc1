#include "transport/shm/shm_domain.h"

#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "transport/shm/shm_op.h"

namespace ftcomm::shm {
namespace {

constexpr auto kPidCheckInterval = std::chrono::milliseconds(10);

// The segment descriptor a member offered no longer exists in its process.
bool descriptorGone(const ShmOffer& offer) {
  const std::string path =
      "/proc/" + std::to_string(offer.pid) + "/fd/" + std::to_string(offer.segmentFd);
  struct stat st {};
  return ::lstat(path.c_str(), &st) != 0 && errno == ENOENT;
}

std::string errnoText(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

// Whether the process of `pidfd` exited, or does within a moment: a process on its way out has
// lost its descriptors (pidfd_getfd and /proc/<pid>/fd fail) before its pidfd says so.
bool exited(int pidfd) {
  pollfd fd{pidfd, POLLIN, 0};
  return ::poll(&fd, 1, 200) > 0;
}

}  // namespace

std::string ShmOffer::encode() const {
  return "shm1 " + host + " " + std::to_string(pid) + " " + std::to_string(segmentFd) + " " +
         std::to_string(wakeFd);
}

Result<std::optional<ShmOffer>> ShmOffer::decode(const std::string& text) {
  if (text == "none") return std::optional<ShmOffer>();
  std::istringstream in(text);
  std::string version;
  ShmOffer offer;
  if (!(in >> version >> offer.host >> offer.pid >> offer.segmentFd >> offer.wakeFd) ||
      version != "shm1" || offer.pid <= 0 || offer.segmentFd < 0 || offer.wakeFd < 0) {
    return internalError("a malformed shared-memory offer in the rendezvous: '" + text + "'");
  }
  return std::optional<ShmOffer>(std::move(offer));
}

std::string localHostKey() {
  std::ifstream bootId("/proc/sys/kernel/random/boot_id");
  std::string boot;
  std::getline(bootId, boot);
  std::string key = boot.empty() ? "unknown-boot" : boot;
  // Processes in different PID, IPC or network namespaces are on different hosts to ftcomm:
  // pidfd_getfd, shared segments and loopback do not cross them (UCX draws the same line).
  for (const char* ns : {"pid", "ipc", "net"}) {
    char link[64] = {};
    const ssize_t n =
        ::readlink((std::string("/proc/self/ns/") + ns).c_str(), link, sizeof link - 1);
    key += "/" + (n > 0 ? std::string(link) : std::string(ns) + ":unknown");
  }
  for (char& c : key) {
    if (c == ' ') c = '_';
  }
  return key;
}

ShmDomain::ShmDomain(int rank, int size, std::uint64_t epoch, int wakeFd, ShmGeometry geometry)
    : rank_(rank),
      epoch_(epoch),
      ownWakeFd_(wakeFd),
      geometry_(geometry),
      peers_(static_cast<std::size_t>(size)) {}

Result<std::shared_ptr<ShmDomain>> ShmDomain::create(int rank, int size, std::uint64_t epoch,
                                                     int wakeFd, ShmGeometry geometry) {
  if (size < 1 || rank < 0 || rank >= size) {
    return invalidArgument("shared-memory domain: rank " + std::to_string(rank) + " of " +
                           std::to_string(size));
  }
  if (geometry.eagerBytes + kRecordAlign > geometry.ringBytes / 2) {
    return invalidArgument("shared-memory domain: eager messages must fit twice in a ring");
  }
  std::shared_ptr<ShmDomain> domain(new ShmDomain(rank, size, epoch, wakeFd, geometry));
  auto segment = Segment::create(rank, size, geometry.ringBytes, epoch);
  if (!segment.ok()) return segment.status();
  domain->own_ = std::move(segment).value();
  Peer& self = domain->peers_[static_cast<std::size_t>(rank)];
  self.local = true;
  self.pid = ::getpid();
  self.out = RingWriter(&domain->own_, rank);
  self.in = RingReader(&domain->own_, rank);
  return domain;
}

ShmDomain::~ShmDomain() {
  for (auto& [request, op] : ops_) {
    op->request->complete(cancelled("the shared-memory domain was closed"), 0);
    op->request->setLanding(false);
  }
  for (Peer& peer : peers_) {
    for (Op* op : peer.outbox) {
      if (!op->request) delete op;
    }
    if (peer.pidfd >= 0) ::close(peer.pidfd);
    if (peer.wakeFd >= 0) ::close(peer.wakeFd);
  }
  for (auto& [request, op] : ops_) delete op;
}

ShmOffer ShmDomain::offer() const {
  return ShmOffer{localHostKey(), ::getpid(), own_.fd(), ownWakeFd_};
}

Status ShmDomain::connect(const std::vector<std::optional<ShmOffer>>& offers, bool requireAll) {
  if (offers.size() != peers_.size()) {
    return invalidArgument("shared-memory domain: " + std::to_string(offers.size()) +
                           " offers for " + std::to_string(peers_.size()) + " members");
  }
  const std::string host = localHostKey();
  for (int m = 0; m < size(); ++m) {
    if (m == rank_) continue;
    const auto& offer = offers[static_cast<std::size_t>(m)];
    const std::string who = "rank " + std::to_string(m);
    if (!offer || offer->host != host) {
      if (!requireAll) continue;
      return failedPrecondition("FTCOMM_TRANSPORT=shm, but " + who +
                                (offer ? " is on another host" : " does not offer shared memory"));
    }
    Peer& peer = peers_[static_cast<std::size_t>(m)];
    peer.pid = offer->pid;
    const std::string hint = " (FTCOMM_TRANSPORT=ucx avoids shared memory)";
    peer.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, offer->pid, 0));
    if (peer.pidfd < 0) {
      if (errno == ESRCH) {
        return Status(StatusCode::kPeerFailed, who + " (pid " + std::to_string(offer->pid) +
                                                   ") exited before the epoch came up");
      }
      return unavailable(errnoText("pidfd_open of " + who) + hint);
    }
    // A member that dies meanwhile is a failed member (another agreement round), not a setup
    // error.
    const Status gone(StatusCode::kPeerFailed, who + " failed: its process (pid " +
                                                   std::to_string(offer->pid) +
                                                   ") exited while the epoch came up");
    // A member that is alive but already closed what it offered has given this epoch up:
    // another member failed while it came up, and the epoch is revoked (another agreement
    // round), which is not a setup error either.
    const Status left(StatusCode::kRevoked,
                      who + " gave epoch " + std::to_string(epoch_) +
                          " up while it came up (its segment is closed): another member failed");
    peer.wakeFd = static_cast<int>(::syscall(SYS_pidfd_getfd, peer.pidfd, offer->wakeFd, 0));
    if (peer.wakeFd < 0) {
      const int err = errno;
      if (exited(peer.pidfd)) return gone;
      if (err == EBADF) return left;
      errno = err;
      return unavailable(errnoText("pidfd_getfd of " + who) + hint);
    }
    auto segment = Segment::open(offer->pid, offer->segmentFd, m, size(), epoch_);
    if (!segment.ok()) {
      if (exited(peer.pidfd)) return gone;
      if (segment.status().code() == StatusCode::kRevoked || descriptorGone(*offer)) return left;
      return Status(segment.status().code(),
                    "mapping the segment of " + who + ": " + segment.status().message() + hint);
    }
    peer.segment = std::move(segment).value();
    peer.memory = PeerMemory::open(peer.pidfd, peer.segment.header().regionTable);
    peer.out = RingWriter(&peer.segment, rank_);
    peer.in = RingReader(&own_, m);
    peer.local = true;
  }
  return Status::Ok();
}

void ShmDomain::failPeer(int m, const Status& why, bool keepArrived) {
  if (m < 0 || m >= size()) return;
  Peer& peer = peers_[static_cast<std::size_t>(m)];
  if (!peer.failure.ok()) return;
  peer.failure =
      why.ok() ? Status(StatusCode::kPeerFailed, "rank " + std::to_string(m) + " failed") : why;
  std::vector<Op*> doomed(peer.posted.begin(), peer.posted.end());
  doomed.insert(doomed.end(), peer.outbox.begin(), peer.outbox.end());
  for (auto& [id, op] : peer.awaitingFin) doomed.push_back(op);
  peer.posted.clear();
  peer.outbox.clear();
  peer.awaitingFin.clear();
  // An announced (kRts) message is read from the sender's memory, gone with it.
  std::erase_if(peer.unexpected, [&](const Unexpected& u) {
    return !keepArrived || u.record.kind != RecordKind::kEager;
  });
  for (Op* op : doomed) {
    if (op->request) {
      complete(op, peer.failure, 0);
      op->request->setLanding(false);
    }
    destroy(op);
  }
}

void ShmDomain::checkPidfds() {
  std::vector<pollfd> fds;
  pollFds(fds);
  if (fds.empty() || ::poll(fds.data(), fds.size(), 0) <= 0) return;
  for (const pollfd& fd : fds) polled(fd);
}

void ShmDomain::pollFds(std::vector<pollfd>& fds) const {
  for (const Peer& peer : peers_) {
    if (peer.pidfd >= 0 && peer.failure.ok()) fds.push_back({peer.pidfd, POLLIN, 0});
  }
}

void ShmDomain::polled(const pollfd& fd) {
  if ((fd.revents & (POLLIN | POLLHUP | POLLERR)) == 0) return;
  for (int m = 0; m < size(); ++m) {
    const Peer& peer = peers_[static_cast<std::size_t>(m)];
    if (peer.pidfd != fd.fd || !peer.failure.ok()) continue;
    // What it wrote before it exited is read first: its last messages (a leaving notice among
    // them) reach their receives, or wait for them.
    drainInbox(m);
    if (!peer.failure.ok()) continue;
    failPeer(
        m,
        Status(StatusCode::kPeerFailed, "rank " + std::to_string(m) + " failed: its process (pid " +
                                            std::to_string(peer.pid) + ") exited"),
        true);
  }
}

int ShmDomain::arm() {
  own_.header().sleeping.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  int limit = -1;
  for (const Peer& peer : peers_) {
    if (!peer.local || !peer.failure.ok()) continue;
    if (!peer.in.empty()) {
      own_.header().sleeping.store(0, std::memory_order_relaxed);
      return 0;
    }
    // Nobody wakes a sender when its peer makes room: look again soon.
    if (!peer.outbox.empty()) limit = 1;
  }
  return limit;
}

bool ShmDomain::spin(int delta) {
  own_.header().spinners.fetch_add(static_cast<std::uint32_t>(delta), std::memory_order_relaxed);
  if (delta > 0) return false;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (const Peer& peer : peers_) {
    if (peer.local && peer.failure.ok() && !peer.in.empty()) return true;
  }
  return false;
}

int ShmDomain::allocateArea() {
  return nextArea_ < kInlineAreas ? nextArea_++ : -1;
}

InlineArea* ShmDomain::area(int member, int index) const {
  if (member == rank_) return own_.area(index);
  const Peer& peer = peers_[static_cast<std::size_t>(member)];
  return peer.local ? peer.segment.area(index) : nullptr;
}

void ShmDomain::wakeMember(int member, bool fenced) {
  if (member != rank_) wakeOwner(peers_[static_cast<std::size_t>(member)], fenced);
}

void ShmDomain::wakeOwner(Peer& peer, bool fenced) {
  if (peer.wakeFd < 0 || !peer.out.ownerSleeping(fenced)) return;
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(peer.wakeFd, &one, sizeof one);
}

bool ShmDomain::progress() {
  bool moved = false;
  // The clock, and then the pidfds, are looked at every few rounds only.
  if (++rounds_ % 32 == 0) {
    const auto now = transport::Clock::now();
    if (now >= nextPidCheck_) {
      nextPidCheck_ = now + kPidCheckInterval;
      checkPidfds();
    }
  }
  for (int m = 0; m < size(); ++m) {
    Peer& peer = peers_[static_cast<std::size_t>(m)];
    if (!peer.local || !peer.failure.ok()) continue;
    if (!peer.outbox.empty()) moved |= flushOutbox(peer);
    moved |= drainInbox(m);
  }
  return moved;
}

}  // namespace ftcomm::shm
