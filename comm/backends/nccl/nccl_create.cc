// NcclCommunicator's creation over a host Communicator (its rendezvous is the bootstrap), its
// splits, and its windows.
#include <map>
#include <mutex>

#include "backends/nccl/nccl_backend.h"
#include "backends/nccl/nccl_host.h"
#include "backends/nccl/nccl_status.h"
#include "core/comm_access.h"
#include "core/environment.h"
#include "core/hash.h"
#include "ftcomm/nccl_communicator.h"

namespace ftcomm {

namespace {

namespace pb = recorder::v1;

// The host communicator's membership and rendezvous. The host outlives the NCCL communicator
// (the header says so).
class HostBootstrap final : public nccl::NcclBootstrap {
 public:
  HostBootstrap(Communicator& host, std::shared_ptr<rendezvous::RendezvousClient> client)
      : host_(host), client_(std::move(client)) {}

  std::uint64_t epoch() const override { return host_.epoch(); }
  Status health() const override { return host_.health(); }
  Status revoke(const std::string& reason) override { return host_.revoke(reason); }
  Status publish(const std::string& key, const std::string& value) override {
    return client_->kvSet(key, value);
  }
  Result<std::vector<std::string>> fetch(const std::vector<std::string>& keys,
                                         std::chrono::milliseconds timeout) override {
    return client_->kvWait(keys, timeout);
  }

 private:
  Communicator& host_;
  std::shared_ptr<rendezvous::RendezvousClient> client_;
};

// NCCL communicators created so far over each host communicator in this process: the same
// count on every member, as creation is collective, so it names the bootstrap keys.
std::uint64_t nextGeneration(std::uint64_t hostId) {
  static std::mutex mu;
  static std::map<std::uint64_t, std::uint64_t> created;
  std::lock_guard<std::mutex> lock(mu);
  return created[hostId]++;
}

Result<int> chooseDevice(const NcclOptions& options, int hostRank, int devices) {
  int device = options.device;
  if (device < 0) device = detail::envInt("FTCOMM_CUDA_DEVICE", -1);
  if (device == -2) return invalidArgument("FTCOMM_CUDA_DEVICE must be a device number");
  if (device < 0) {
    // The launcher's local rank: ftcomm-run's agents', else mpirun's.
    const int local =
        detail::envInt("FTCOMM_LOCAL_RANK", detail::envInt("OMPI_COMM_WORLD_LOCAL_RANK", -1));
    device = (local >= 0 ? local : hostRank) % devices;
  }
  if (device >= devices) {
    return invalidArgument("CUDA device " + std::to_string(device) + " does not exist (" +
                           std::to_string(devices) + " present)");
  }
  return device;
}

}  // namespace

Result<std::unique_ptr<NcclCommunicator>> NcclCommunicator::create(Communicator& host,
                                                                   const NcclOptions& options) {
  std::string why;
  std::shared_ptr<nccl::NcclApi> api = nccl::makeVendorApi(&why);
  if (api == nullptr) return failedPrecondition(why);
  return nccl::createOverHost(host, options, std::move(api));
}

Result<std::unique_ptr<NcclCommunicator>> nccl::createOverHost(Communicator& host,
                                                               const NcclOptions& options,
                                                               std::shared_ptr<NcclApi> api) {
  int devices = 0;
  FTCOMM_RETURN_IF_ERROR(nccl::toStatus(api->deviceCount(&devices), "counting CUDA devices"));
  if (devices == 0) {
    return failedPrecondition("no CUDA device: the NCCL communicator needs a GPU per member");
  }
  auto device = chooseDevice(options, host.rank(), devices);
  if (!device.ok()) return device.status();
  FTCOMM_RETURN_IF_ERROR(host.health());
  const int createMs = detail::envInt("FTCOMM_CREATE_TIMEOUT_MS", 60000);
  if (createMs <= 0) {
    return invalidArgument("FTCOMM_CREATE_TIMEOUT_MS must be a positive number of milliseconds");
  }

  nccl::NcclSetup setup;
  setup.api = std::move(api);
  setup.bootstrap =
      std::make_shared<HostBootstrap>(host, detail::CommAccess::state(host)->rendezvous);
  setup.device = *device;
  setup.rank = host.rank();
  setup.size = host.size();
  setup.name = options.name;
  const std::uint64_t generation = nextGeneration(host.id());
  setup.id = detail::hashMix(detail::hashMix(detail::hashText("nccl/" + options.name), host.id()),
                             generation) |
             1;
  setup.worldRanks = host.worldRanks();
  setup.keyPrefix = "ftcomm/nccl/" + std::to_string(host.id()) + "/" + std::to_string(generation);
  setup.setupTimeout =
      options.timeout.count() > 0 ? options.timeout : std::chrono::milliseconds(createMs);
  setup.opTimeout = options.opTimeout.count() > 0 ? options.opTimeout
                                                  : detail::CommAccess::state(host)->opTimeout;
  auto backend = nccl::NcclBackend::create(std::move(setup));
  if (!backend.ok()) return backend.status();
  return std::make_unique<NcclCommunicator>(std::move(*backend));
}

Result<std::unique_ptr<NcclCommunicator>> NcclCommunicator::split(int color, int key,
                                                                  const OpOptions& options) {
  if (color < Communicator::kNoColor) {
    return invalidArgument("split: color " + std::to_string(color) +
                           " is negative (Communicator::kNoColor is the only one allowed)");
  }
  auto child = backend_->split(color, key, options.timeout);
  if (!child.ok()) return child.status();
  if (*child == nullptr) return std::unique_ptr<NcclCommunicator>();
  return std::make_unique<NcclCommunicator>(std::move(*child));
}

Result<std::unique_ptr<NcclCommunicator>> NcclCommunicator::split(std::span<const int> ranks,
                                                                  const OpOptions& options) {
  std::vector<bool> seen(static_cast<std::size_t>(size()), false);
  int position = -1;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    if (r < 0 || r >= size() || seen[static_cast<std::size_t>(r)]) {
      return invalidArgument("split: rank list entry " + std::to_string(r) +
                             " is out of range or repeated");
    }
    seen[static_cast<std::size_t>(r)] = true;
    if (r == rank()) position = static_cast<int>(i);
  }
  return split(position >= 0 ? 0 : Communicator::kNoColor, position, options);
}

Result<std::unique_ptr<NcclWindow>> NcclCommunicator::registerWindow(void* buffer,
                                                                     std::size_t bytes,
                                                                     const OpOptions& options) {
  if (buffer == nullptr || bytes == 0) {
    return invalidArgument("registerWindow: an empty buffer");
  }
  if (reinterpret_cast<std::uintptr_t>(buffer) % 4096 != 0) {
    return invalidArgument("registerWindow: NCCL windows must be 4096-byte aligned");
  }
  bool device = false;
  FTCOMM_RETURN_IF_ERROR(nccl::toStatus(
      backend_->api().isDeviceMemory(buffer, backend_->device(), &device), "registerWindow"));
  if (!device) {
    return invalidArgument("registerWindow: the buffer is not memory of CUDA device " +
                           std::to_string(backend_->device()));
  }
  const std::uint64_t epoch = backend_->epoch();
  auto window = backend_->registerWindow(buffer, bytes, options.timeout);
  if (!window.ok()) return window.status();
  return std::make_unique<NcclWindow>(backend_, buffer, bytes, *window, epoch, false);
}

Result<std::unique_ptr<NcclWindow>> NcclCommunicator::allocateWindow(std::size_t bytes,
                                                                     const OpOptions& options) {
  if (bytes == 0) return invalidArgument("allocateWindow: zero bytes");
  void* buffer = nullptr;
  FTCOMM_RETURN_IF_ERROR(
      nccl::toStatus(backend_->api().memAlloc(bytes, &buffer), "allocateWindow (ncclMemAlloc)"));
  const std::uint64_t epoch = backend_->epoch();
  auto window = backend_->registerWindow(buffer, bytes, options.timeout);
  if (!window.ok()) {
    (void)backend_->api().memFree(buffer);
    return window.status();
  }
  return std::make_unique<NcclWindow>(backend_, buffer, bytes, *window, epoch, true);
}

NcclWindow::NcclWindow(std::shared_ptr<nccl::NcclBackend> backend, void* buffer, std::size_t bytes,
                       void* handle, std::uint64_t epoch, bool owned)
    : backend_(std::move(backend)),
      buffer_(buffer),
      bytes_(bytes),
      handle_(handle),
      epoch_(epoch),
      owned_(owned) {}

NcclWindow::~NcclWindow() {
  (void)backend_->deregisterWindow(static_cast<nccl::WindowRef>(handle_), epoch_);
  if (owned_) (void)backend_->api().memFree(buffer_);
}

namespace {

Work refuseOneSided(nccl::NcclBackend& backend, pb::OpType op, int target, std::size_t bytes) {
  recorder::OpDescriptor d;
  d.commId = backend.id();
  d.epoch = backend.epoch();
  d.seq = backend.nextPointToPointSeq();
  d.op = op;
  d.peer = target;
  d.countIn = bytes;
  d.algorithm = "nccl";
  return backend.refuse(
      d, failedPrecondition(std::string(pb::OpType_Name(op)) + " on " + backend.name() +
                            ": not supported by this NCCL backend: NCCL 2.28 offers one-sided "
                            "put and signal only from device code (nccl_device.h, GIN)"));
}

}  // namespace

Work NcclWindow::put(const void* /*source*/, std::size_t bytes, int targetRank,
                     std::size_t /*targetOffset*/) {
  return refuseOneSided(*backend_, pb::RMA_PUT, targetRank, bytes);
}

Work NcclWindow::signal(int targetRank, std::size_t /*slot*/, std::uint64_t /*value*/) {
  return refuseOneSided(*backend_, pb::RMA_SIGNAL, targetRank, 0);
}

}  // namespace ftcomm
