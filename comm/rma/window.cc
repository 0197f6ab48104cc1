// Window creation and re-establishment: every member publishes a descriptor of its region
// through an allGather over the communicator, maps the others' regions, and once all have (a
// barrier) closes its own descriptor.
#include <unistd.h>

#include <cstring>

#include "core/comm_access.h"
#include "core/hash.h"
#include "core/transport_choice.h"
#include "core/work_state.h"
#include "recorder/flight_recorder.h"
#include "rma/window_state.h"
#include "transport/shm/shm_access.h"
#include "transport/shm/shm_domain.h"

namespace ftcomm {

namespace rma {
namespace {

constexpr std::uint64_t kDescriptorMagic = 0x6674637764657363ull;  // "ftcwdesc"

// What a member tells the others about its window.
struct Descriptor {
  std::uint64_t magic;
  std::uint64_t host;  // hash of shm::localHostKey()
  std::int32_t pid;
  std::int32_t fd;
  std::uint64_t bytes;
  std::uint64_t slots;
  std::uint64_t address;  // registered windows: where the data is in that process
  std::uint32_t registered;
  std::uint32_t reachable;  // this process allows same-host access, FTCOMM_TRANSPORT allows it
};

// Why this process does not offer same-host access ("" when it does): the others then reach
// it through UCX.
std::string unreachableReason() {
  auto mode = detail::transportModeFromEnv();
  if (!mode.ok()) return mode.status().message();
  if (*mode == detail::TransportMode::kUcx) return "FTCOMM_TRANSPORT=ucx";
  if (!shm::processAccess().ok()) return shm::processAccess().message();
  return "";
}

}  // namespace

Result<std::unique_ptr<WindowState>> WindowState::create(Communicator& comm, void* userBase,
                                                         std::size_t bytes,
                                                         const WindowOptions& options) {
  const bool registered = userBase != nullptr;
  if (options.signalSlots == 0 || options.signalSlots > (1u << 20)) {
    return invalidArgument("window: signalSlots must be 1 to 2^20, not " +
                           std::to_string(options.signalSlots));
  }
  FTCOMM_RETURN_IF_ERROR(comm.health());
  std::unique_ptr<WindowState> state(new WindowState(comm, options, registered, userBase, bytes));
  auto region = WindowRegion::create(options.signalSlots, registered ? 0 : bytes);
  if (!region.ok()) return region.status();
  state->own = std::move(*region);
  FTCOMM_RETURN_IF_ERROR(state->establish());
  return state;
}

Status WindowState::establish() {
  const int size = comm.size(), me = comm.rank();
  const std::string why = unreachableReason();
  Descriptor mine{};
  mine.magic = kDescriptorMagic;
  mine.host = detail::hashText(shm::localHostKey());
  mine.pid = ::getpid();
  mine.fd = own.fd();
  mine.bytes = bytes;
  mine.slots = options.signalSlots;
  mine.address = reinterpret_cast<std::uint64_t>(userBase);
  mine.registered = registered ? 1 : 0;
  mine.reachable = why.empty() ? 1 : 0;
  std::vector<Descriptor> all(static_cast<std::size_t>(size));
  FTCOMM_RETURN_IF_ERROR(
      comm.allGather(&mine, all.data(), sizeof(Descriptor), DataType::kUint8).wait());

  // Every member checks the same descriptors, so every member reaches the same verdict.
  bool anyRemote = false;
  for (int r = 0; r < size; ++r) {
    const Descriptor& d = all[static_cast<std::size_t>(r)];
    const std::string who = "window of " + comm.name() + ": rank " + std::to_string(r);
    if (d.magic != kDescriptorMagic) return internalError(who + " sent no window descriptor");
    if (d.slots != mine.slots) {
      return invalidArgument(who + " has " + std::to_string(d.slots) + " signal slots, rank " +
                             std::to_string(me) + " " + std::to_string(mine.slots) +
                             " (WindowOptions must agree)");
    }
    if (d.registered != mine.registered) {
      return invalidArgument(who + (d.registered ? " registered memory" : " allocated") +
                             ", this rank did not: every member must create the window alike");
    }
    anyRemote |= d.host != mine.host || d.reachable == 0 || !why.empty();
  }
  const detail::CommState& shared = *detail::CommAccess::state(comm);
  std::vector<WindowMember> reached(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    const Descriptor& d = all[static_cast<std::size_t>(r)];
    WindowMember& m = reached[static_cast<std::size_t>(r)];
    m.self = r == me;
    m.pid = d.pid;
    m.bytes = d.bytes;
    m.address = d.address;
    m.viaUcx = !m.self && (d.host != mine.host || d.reachable == 0 || !why.empty());
    if (m.self || m.viaUcx) continue;
    auto region = WindowRegion::open(d.pid, d.fd, d.slots, registered ? 0 : d.bytes);
    if (!region.ok()) {
      return Status(region.status().code(), "window of " + comm.name() + ": rank " +
                                                std::to_string(r) +
                                                "'s region: " + region.status().message());
    }
    m.region = std::move(*region);
    if (!registered) m.data = m.region.data();
    if (registered && shared.shm) m.shmMember = shared.shmMembers[static_cast<std::size_t>(r)];
  }
  // Members elsewhere (or all, under FTCOMM_TRANSPORT=ucx): UCX RMA, set up by everyone when
  // anyone needs it (it exchanges keys collectively).
  std::unique_ptr<UcxWindowPath> path;
  if (anyRemote) {
    std::vector<bool> remote;
    for (const WindowMember& m : reached) remote.push_back(m.viaUcx);
    ucx.reset();  // the previous epoch's registrations go first
    auto made = UcxWindowPath::establish(comm, ownData(), bytes, own.signals(),
                                         options.signalSlots * sizeof(std::uint64_t), remote);
    if (!made.ok()) return made.status();
    path = std::move(*made);
  }
  // Everyone has mapped every region: the descriptors may go (the mappings keep the memory).
  FTCOMM_RETURN_IF_ERROR(comm.barrier().wait());
  own.closeFd();
  ucx = std::move(path);
  members = std::move(reached);
  shm = registered ? shared.shm : nullptr;
  epoch = comm.epoch();
  return Status::Ok();
}

Status WindowState::reconfigure() {
  if (comm.epoch() == epoch) {
    return failedPrecondition("window reconfigure: the communicator is still in epoch " +
                              std::to_string(epoch) + "; call its reconfigure() first");
  }
  FTCOMM_RETURN_IF_ERROR(comm.health());
  // A fresh memfd at the same address: the old one stays with whoever still maps it.
  FTCOMM_RETURN_IF_ERROR(own.renew());
  return establish();
}

std::shared_ptr<recorder::OpProgress> WindowState::record(recorder::v1::OpType op, int target,
                                                          std::size_t count) {
  recorder::OpDescriptor d;
  d.commId = comm.id();
  d.epoch = epoch;
  d.seq = seq.fetch_add(1, std::memory_order_relaxed) + 1;
  d.op = op;
  d.dtype = recorder::v1::UINT8;
  d.countIn = count;
  d.peer = target;
  const bool remote = target >= 0 && target < static_cast<int>(members.size()) &&
                      members[static_cast<std::size_t>(target)].viaUcx;
  d.algorithm = remote ? "ucx" : "shm";
  return recorder::FlightRecorder::process().record(d);
}

Work WindowState::finish(std::shared_ptr<recorder::OpProgress> progress, Status status,
                         std::size_t bytes) {
  // An 8-byte put + flush is measured in hundreds of ns: no allocation, no lock.
  if (status.ok() && bytes == 0) return Work(detail::succeededWorkState(progress.get()));
  auto work = std::make_shared<detail::WorkState>(nullptr, std::move(progress),
                                                  detail::Clock::time_point{});
  work->markStartedAtScheduling();
  work->complete(std::move(status), bytes);
  return Work(work);
}

}  // namespace rma

Result<std::unique_ptr<Window>> Window::allocate(Communicator& comm, std::size_t bytes,
                                                 const WindowOptions& options) {
  auto state = rma::WindowState::create(comm, nullptr, bytes, options);
  if (!state.ok()) return state.status();
  return std::make_unique<Window>(std::move(*state));
}

Result<std::unique_ptr<Window>> Window::registerMemory(Communicator& comm, void* base,
                                                       std::size_t bytes,
                                                       const WindowOptions& options) {
  if (base == nullptr) return invalidArgument("registerMemory: a null base");
  auto state = rma::WindowState::create(comm, base, bytes, options);
  if (!state.ok()) return state.status();
  return std::make_unique<Window>(std::move(*state));
}

Window::Window(std::unique_ptr<rma::WindowState> state) : state_(std::move(state)) {}

Window::~Window() {
  // Registered memory goes back to its owner: nobody may still be writing into it.
  if (state_->registered && state_->comm.health().ok()) (void)state_->comm.barrier().wait();
}

void* Window::data() const {
  return state_->ownData();
}
std::size_t Window::bytes() const {
  return state_->bytes;
}
std::size_t Window::bytesOf(int rank) const {
  if (rank < 0 || rank >= static_cast<int>(state_->members.size())) return 0;
  return state_->members[static_cast<std::size_t>(rank)].bytes;
}
Status Window::reconfigure() {
  return state_->reconfigure();
}

}  // namespace ftcomm
