#include "backends/nccl/nccl_backend.h"

#include "backends/nccl/nccl_status.h"

namespace ftcomm::nccl {
namespace {

// How often the progress thread asks the bootstrap about the epoch while work is pending, and
// how long it sleeps between polls of the events.
constexpr auto kHealthEvery = std::chrono::milliseconds(2);
constexpr auto kPollEvery = std::chrono::microseconds(50);
// How long a healthy communicator's destruction may take (ncclCommFinalize).
constexpr auto kFinalizeTimeout = std::chrono::seconds(10);

}  // namespace

NcclBackend::NcclBackend(NcclSetup setup) : setup_(std::move(setup)) {}

Status NcclBackend::start(CommRef comm) {
  std::lock_guard<std::mutex> lock(mu_);
  comm_ = comm;
  const std::string what = describe("NCCL setup");
  if (stream_ == nullptr) {
    FTCOMM_RETURN_IF_ERROR(toStatus(api().streamCreate(&stream_), what));
    FTCOMM_RETURN_IF_ERROR(toStatus(api().eventCreate(&marker_), what));
    FTCOMM_RETURN_IF_ERROR(
        toStatus(api().deviceAlloc(sizeof(std::int32_t), &barrierBuffer_), what));
  }
  if (!progress_.joinable()) progress_ = std::thread([this] { progressLoop(); });
  return Status::Ok();
}

NcclBackend::~NcclBackend() {
  bool clean = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    clean = pending_.empty() && broken_.ok() && !aborted_;
    for (auto& p : pending_) {
      p.work->complete(cancelled(p.what + ": the communicator was destroyed"));
      freeEvents_.push_back(p.event);
    }
    pending_.clear();
  }
  wake_.notify_all();
  if (progress_.joinable()) progress_.join();
  (void)api().setDevice(setup_.device);
  if (comm_ != nullptr) {
    // A healthy communicator is finalized (its peers' last operations complete); any other is
    // aborted: finalizing a revoked one is invalid.
    bool finalized = false;
    if (clean) {
      NcclResult r = api().commFinalize(comm_);
      finalized =
          r.ok() ||
          (r.inProgress() &&
           waitReady(comm_, Clock::now() + kFinalizeTimeout, describe("finalize"), false).ok());
    }
    if (finalized) {
      (void)api().commDestroy(comm_);
    } else {
      (void)api().commAbort(comm_);
    }
  }
  for (EventRef event : freeEvents_) (void)api().eventDestroy(event);
  if (marker_ != nullptr) (void)api().eventDestroy(marker_);
  if (barrierBuffer_ != nullptr) (void)api().deviceFree(barrierBuffer_);
  if (stream_ != nullptr) (void)api().streamDestroy(stream_);
}

Work NcclBackend::submit(const char* opName, const recorder::OpDescriptor& descriptor,
                         std::vector<NcclOpCall> calls, Status checked,
                         std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + (timeout.count() > 0 ? timeout : setup_.opTimeout);
  auto work = std::make_shared<detail::WorkState>(
      nullptr, recorder::FlightRecorder::process().record(descriptor), deadline);
  if (!checked.ok()) {
    work->complete(std::move(checked));
    return Work(work);
  }
  std::unique_lock<std::mutex> lock(mu_);
  Pending pending{work, nullptr, deadline, "", 0};
  if (descriptor.op == recorder::pb::RECV) {
    // The recorded dtype is ftcomm's shifted by UNSPECIFIED (recorder::recordedType).
    pending.bytes = descriptor.countOut * dataTypeSize(static_cast<DataType>(descriptor.dtype - 1));
  }
  pending.what =
      std::string(opName) + " #" + std::to_string(descriptor.seq) + " of " + describe("");
  if (aborted_) {
    work->complete(failedPrecondition(pending.what + ": the communicator was aborted"));
    return Work(work);
  }
  if (broken_.ok()) {
    if (Status h = setup_.bootstrap->health(); !h.ok()) breakLocked(h);
    if (setup_.bootstrap->epoch() != epoch_) {
      breakLocked(Status(StatusCode::kRevoked,
                         describe("") + " belongs to a past epoch: reconfigure() it"));
    }
  }
  if (!broken_.ok()) {
    work->complete(broken_);
    return Work(work);
  }
  Result<EventRef> event = takeEventLocked();
  Status issued = event.ok() ? issueLocked(calls, *event, deadline) : event.status();
  if (!issued.ok()) {
    if (event.ok()) freeEvents_.push_back(*event);
    Status why(issued.code(), pending.what + ": " + issued.message());
    // A nonblocking NCCL communicator keeps the error of a call it refused (seen with
    // ncclInvalidUsage on 2.28.3): every later call fails with it. So the communicator breaks,
    // and the epoch is revoked so that the other members do not wait for this one.
    breakLocked(Status(StatusCode::kRevoked, describe("") + " is unusable after NCCL refused " +
                                                 why.message() + "; reconfigure() it"));
    const std::string reason = why.message();
    work->complete(std::move(why));
    lock.unlock();
    (void)setup_.bootstrap->revoke(reason);
    return Work(work);
  }
  work->markStarted();
  pending.event = *event;
  pending_.push_back(std::move(pending));
  lock.unlock();
  wake_.notify_one();
  return Work(work);
}

Work NcclBackend::refuse(const recorder::OpDescriptor& descriptor, Status why) {
  auto work = std::make_shared<detail::WorkState>(
      nullptr, recorder::FlightRecorder::process().record(descriptor), Clock::now());
  work->complete(std::move(why));
  return Work(work);
}

Status NcclBackend::issueLocked(const std::vector<NcclOpCall>& calls, EventRef event,
                                Clock::time_point deadline) {
  FTCOMM_RETURN_IF_ERROR(toStatus(api().setDevice(setup_.device), "cudaSetDevice"));
  FTCOMM_RETURN_IF_ERROR(
      toStatus(api().streamWaitForDefault(stream_, marker_), "ordering after the default stream"));
  const bool grouped = calls.size() > 1;
  if (grouped) FTCOMM_RETURN_IF_ERROR(toStatus(api().groupStart(), "ncclGroupStart"));
  NcclResult last = ncclOk();
  for (const NcclOpCall& call : calls) {
    last = api().issue(call, comm_, stream_);
    if (!last.ok() && !last.inProgress()) {
      if (grouped) (void)api().groupEnd();
      return toStatus(last, "NCCL");
    }
  }
  if (grouped) last = api().groupEnd();
  if (last.inProgress()) {
    FTCOMM_RETURN_IF_ERROR(waitReady(comm_, deadline, "enqueueing", false));
  } else if (!last.ok()) {
    return toStatus(last, "NCCL");
  }
  return toStatus(api().eventRecord(event, stream_), "recording its completion");
}

Result<EventRef> NcclBackend::takeEventLocked() {
  if (!freeEvents_.empty()) {
    EventRef event = freeEvents_.back();
    freeEvents_.pop_back();
    return event;
  }
  EventRef event = nullptr;
  FTCOMM_RETURN_IF_ERROR(toStatus(api().eventCreate(&event), "cudaEventCreate"));
  return event;
}

void NcclBackend::breakLocked(const Status& why) {
  if (!broken_.ok()) return;
  broken_ = why;
  // Stops kernels that wait for a dead or absent peer; the stream then drains. An NCCL without
  // ncclCommRevoke (2.28.3) leaves them running: reconfigure() then shrinks with
  // NCCL_SHRINK_ABORT, which ends them first.
  if (comm_ != nullptr) {
    unrevoked_ = api().commRevoke(comm_).code == NcclCode::kNotSupported;
  }
  for (auto& p : pending_) {
    p.work->complete(why);
    freeEvents_.push_back(p.event);
  }
  pending_.clear();
}

bool NcclBackend::pollLocked(std::string* revokeEpoch) {
  while (!pending_.empty()) {
    Pending& front = pending_.front();
    bool done = false;
    if (NcclResult r = api().eventQuery(front.event, &done); !r.ok()) {
      const Status why = toStatus(r, front.what);
      breakLocked(why);
      *revokeEpoch = why.message();
      return false;
    }
    if (!done) break;
    front.work->complete(Status::Ok(), front.bytes);
    freeEvents_.push_back(front.event);
    pending_.pop_front();
  }
  if (pending_.empty()) return false;
  const auto now = Clock::now();
  if (NcclResult r = api().commAsyncError(comm_); !r.ok() && !r.inProgress()) {
    const Status why = toStatus(r, pending_.front().what);
    breakLocked(why);
    *revokeEpoch = why.message();
    return false;
  }
  if (now >= nextHealthCheck_) {
    nextHealthCheck_ = now + kHealthEvery;
    Status h = setup_.bootstrap->health();
    if (h.ok() && setup_.bootstrap->epoch() != epoch_) {
      h = Status(StatusCode::kRevoked,
                 "the host membership moved to epoch " + std::to_string(setup_.bootstrap->epoch()));
    }
    if (!h.ok()) {
      breakLocked(Status(h.code(), pending_.front().what + ": " + h.message()));
      return false;
    }
  }
  if (now >= pending_.front().deadline) {
    const Status why = timeoutError(pending_.front().what +
                                    " did not complete by its deadline: a member did not call it, "
                                    "called another operation, or is stuck");
    breakLocked(why);
    *revokeEpoch = why.message();
    return false;
  }
  return true;
}

void NcclBackend::progressLoop() {
  (void)api().setDevice(setup_.device);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    std::string revokeEpoch;
    const bool busy = comm_ != nullptr && pollLocked(&revokeEpoch);
    if (!revokeEpoch.empty()) {
      // The first failure reaches every member through the bootstrap (an RPC: not under mu_).
      lock.unlock();
      (void)setup_.bootstrap->revoke(revokeEpoch);
      lock.lock();
      continue;
    }
    if (busy) {
      wake_.wait_for(lock, kPollEvery);
    } else {
      wake_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
    }
  }
}

Status NcclBackend::health() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_) return failedPrecondition(describe("") + " was aborted");
  if (!broken_.ok()) return broken_;
  if (Status h = setup_.bootstrap->health(); !h.ok()) return h;
  if (setup_.bootstrap->epoch() != epoch_) {
    return Status(StatusCode::kRevoked,
                  describe("") + " belongs to a past epoch: reconfigure() it");
  }
  return Status::Ok();
}

Status NcclBackend::revoke(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    breakLocked(Status(StatusCode::kRevoked, describe("") + " revoked: " + reason));
  }
  return setup_.bootstrap->revoke(reason);
}

void NcclBackend::abort(const std::string& reason) {
  (void)revoke(reason);
  std::lock_guard<std::mutex> lock(mu_);
  aborted_ = true;
  releaseCommLocked();
}

void NcclBackend::releaseCommLocked() {
  if (comm_ == nullptr) return;
  (void)api().setDevice(setup_.device);
  (void)api().commAbort(comm_);
  comm_ = nullptr;
}

int NcclBackend::rank() const {
  std::lock_guard<std::mutex> lock(mu_);
  return setup_.rank;
}
int NcclBackend::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return setup_.size;
}
std::uint64_t NcclBackend::epoch() const {
  std::lock_guard<std::mutex> lock(mu_);
  return epoch_;
}
std::vector<int> NcclBackend::worldRanks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return setup_.worldRanks;
}
std::uint64_t NcclBackend::nextCollectiveSeq() {
  std::lock_guard<std::mutex> lock(mu_);
  return ++collectiveSeq_;
}
std::uint64_t NcclBackend::nextPointToPointSeq() {
  std::lock_guard<std::mutex> lock(mu_);
  return ++pointToPointSeq_;
}

void NcclBackend::recordConfig() const {
  recorder::pb::Communicator entry;
  std::lock_guard<std::mutex> lock(mu_);
  entry.set_comm_id(setup_.id);
  entry.set_name(setup_.name);
  entry.set_parent_comm_id(setup_.parentId);
  entry.set_epoch(epoch_);
  entry.set_rank(setup_.rank);
  for (int r : setup_.worldRanks) entry.add_world_ranks(r);
  recorder::FlightRecorder::process().upsertCommunicator(entry);
}

// Without mu_ or with it: reads fields that change only under it, by their owner.
std::string NcclBackend::describe(const char* what) const {
  std::string text = setup_.name + " (NCCL, epoch " + std::to_string(epoch_) + ", rank " +
                     std::to_string(setup_.rank) + ")";
  return *what == '\0' ? text : std::string(what) + " of " + text;
}

}  // namespace ftcomm::nccl
