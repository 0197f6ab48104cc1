#include "recorder/flight_recorder.h"

#include <semaphore.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "recorder/dump_file.h"

namespace ftcomm::recorder {

namespace {

std::int64_t wallNs() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

std::size_t capacityFromEnvironment() {
  const char* text = std::getenv("FTCOMM_FR_CAPACITY");
  if (text == nullptr || *text == '\0') return FlightRecorder::kDefaultCapacity;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0' || value > (1u << 24)) {
    std::cerr << "ftcomm: FTCOMM_FR_CAPACITY='" << text << "' is not a count in 0.." << (1u << 24)
              << "; using " << FlightRecorder::kDefaultCapacity << std::endl;
    return FlightRecorder::kDefaultCapacity;
  }
  return static_cast<std::size_t>(value);
}

// SIGUSR1: the handler may only do async-signal-safe things, so it posts a semaphore and a
// thread of the recorder writes the dump.
sem_t signalDumpRequests;
std::atomic<bool> signalDumpEnabled{false};

void onSignalDumpRequest(int) {
  ::sem_post(&signalDumpRequests);
}

std::atomic<std::uint64_t> recorderInstances{0};

// The calling thread's lane, held weakly: it goes back to the recorder for the next new
// thread when this one ends, if the recorder still exists.
struct LaneHandle {
  std::weak_ptr<ThreadLane> held;

  ~LaneHandle() { release(); }
  void release() {
    if (auto mine = held.lock()) mine->owned.store(false, std::memory_order_release);
    held.reset();
  }
};

thread_local LaneHandle threadLane;

void describe(pb::Entry& entry, std::uint64_t recordId, const OpDescriptor& op) {
  entry.set_record_id(recordId);
  entry.set_comm_id(op.commId);
  entry.set_epoch(op.epoch);
  entry.set_seq(op.seq);
  entry.set_op(op.op);
  entry.set_dtype(op.dtype);
  entry.set_count_in(op.countIn);
  entry.set_count_out(op.countOut);
  entry.set_root(op.root);
  entry.set_peer(op.peer);
  entry.set_tag(op.tag);
  entry.set_reduce_op(op.reduceOp);
  entry.set_algorithm(op.algorithm);
}

}  // namespace

FlightRecorder::FlightRecorder(std::size_t capacity)
    : instance_(recorderInstances.fetch_add(1, std::memory_order_relaxed) + 1), slots_(capacity) {
  // The changing halves of the first kDefaultCapacity slots up front (about 100 bytes each):
  // record() then reuses one from the first operation on, instead of allocating one per
  // operation until the ring has gone round once. That made the first 4096 operations of a
  // process slower than the rest (8-byte allreduce as a run's first size: 0.81-0.94x OpenMPI
  // against 0.68-0.84x, 4 alternating runs). A larger ring (FTCOMM_FR_CAPACITY) allocates the
  // rest as it fills, so that up to 2^24 slots cost nothing until used.
  const std::size_t ahead = std::min(slots_.size(), kDefaultCapacity);
  for (std::size_t i = 0; i < ahead; ++i) slots_[i].progress = std::make_shared<OpProgress>();
}

FlightRecorder::~FlightRecorder() = default;

FlightRecorder& FlightRecorder::process() {
  // Never destroyed: entries may be recorded from threads that outlive static destruction.
  static FlightRecorder* recorder = [] {
    auto* r = new FlightRecorder(capacityFromEnvironment());
    if (const char* dir = std::getenv("FTCOMM_FR_DIR"); dir != nullptr && *dir != '\0') {
      r->setDumpDirectory(dir);
    }
    return r;
  }();
  return *recorder;
}

std::shared_ptr<OpProgress> FlightRecorder::record(const OpDescriptor& op) {
  if (slots_.empty() || !recording_.load(std::memory_order_relaxed)) return nullptr;
  std::lock_guard lock(ringMu_);
  const std::uint64_t id = nextRecordId_++;
  ++ringRecorded_;
  // The slot of the next entry, kept as it moves (a division costs as much as the rest of this
  // function).
  Slot& slot = slots_[nextSlot_];
  if (++nextSlot_ == slots_.size()) nextSlot_ = 0;
  slot.recordId = id;
  slot.op = op;
  // The entry this one overwrites is reused when the ring holds its last reference (its
  // operation ended and no dump is copying it; only the ring hands out references, under this
  // lock): no allocation once the ring has gone round.
  if (slot.progress && slot.progress.use_count() == 1) {
    // Whoever dropped the last other reference did so with release order: see its writes.
    std::atomic_thread_fence(std::memory_order_acquire);
    slot.progress->reset();
  } else {
    slot.progress = std::make_shared<OpProgress>();
  }
  return slot.progress;
}

thread_local FlightRecorder::LaneCache FlightRecorder::laneCache_;

void FlightRecorder::takeIds(ThreadLane& lane) {
  std::lock_guard lock(ringMu_);
  lane.nextId = nextRecordId_;
  nextRecordId_ += kIdBlock;
  lane.endId = nextRecordId_;
}

ThreadLane& FlightRecorder::adoptLane() {
  threadLane.release();  // a lane of another recorder this thread wrote before
  laneCache_ = LaneCache{};
  std::shared_ptr<ThreadLane> lane;
  {
    std::lock_guard lock(lanesMu_);
    for (const auto& candidate : lanes_) {
      bool owned = false;
      if (candidate->owned.compare_exchange_strong(owned, true, std::memory_order_acquire)) {
        lane = candidate;
        break;
      }
    }
    if (!lane) {
      lane = std::make_shared<ThreadLane>(slots_.size());
      lane->owned.store(true, std::memory_order_relaxed);
      lanes_.push_back(lane);
    }
  }
  threadLane.held = lane;
  laneCache_ = LaneCache{instance_, lane.get()};
  return *lane;
}

void FlightRecorder::setIdentity(ProcessIdentity identity) {
  std::lock_guard lock(infoMu_);
  identity_ = std::move(identity);
}

void FlightRecorder::upsertCommunicator(const pb::Communicator& communicator) {
  std::lock_guard lock(infoMu_);
  communicators_[communicator.comm_id()] = communicator;
}

void FlightRecorder::setDumpDirectory(std::filesystem::path dir) {
  std::lock_guard lock(infoMu_);
  dumpDir_ = std::move(dir);
}

std::uint64_t FlightRecorder::dropped() const {
  std::uint64_t dropped = 0;
  {
    std::lock_guard lock(ringMu_);
    dropped = ringRecorded_ > slots_.size() ? ringRecorded_ - slots_.size() : 0;
  }
  std::vector<LaneEntry> ignored;
  std::lock_guard lock(lanesMu_);
  for (const auto& lane : lanes_) {
    dropped += lane->collect(ignored);
    ignored.clear();
  }
  return dropped;
}

pb::Dump FlightRecorder::snapshot(const std::string& reason) const {
  pb::Dump dump;
  dump.set_format_version(kDumpFormatVersion);
  dump.set_reason(reason);
  dump.set_host(hostName());
  dump.set_pid(static_cast<std::int32_t>(::getpid()));
  dump.set_library_version(FTCOMM_VERSION);
  dump.set_wall_time_ns(wallNs());
  dump.set_monotonic_at_dump_ns(monotonicNs());
  {
    std::lock_guard lock(infoMu_);
    dump.set_job(identity_.job);
    dump.set_rank(identity_.rank);
    dump.set_world_size(identity_.worldSize);
    dump.set_epoch(identity_.epoch);
    for (const auto& [id, communicator] : communicators_) *dump.add_communicators() = communicator;
  }
  // Copy the ring under its lock (descriptors and shared pointers only), format outside it.
  std::vector<Slot> copy;
  std::uint64_t dropped = 0;
  {
    std::lock_guard lock(ringMu_);
    const std::uint64_t first = ringRecorded_ > slots_.size() ? ringRecorded_ - slots_.size() : 0;
    copy.reserve(static_cast<std::size_t>(ringRecorded_ - first));
    for (std::uint64_t i = first; i < ringRecorded_; ++i) copy.push_back(slots_[i % slots_.size()]);
    dump.set_capacity(static_cast<std::uint32_t>(slots_.size()));
    dropped = first;
  }
  std::vector<LaneEntry> laneEntries;
  {
    std::lock_guard lock(lanesMu_);
    for (const auto& lane : lanes_) dropped += lane->collect(laneEntries);
  }
  dump.set_dropped_entries(dropped);
  const TickConverter clock;
  for (const Slot& slot : copy) {
    pb::Entry* entry = dump.add_entries();
    describe(*entry, slot.recordId, slot.op);
    slot.progress->copyTo(*entry, clock);
  }
  for (const LaneEntry& done : laneEntries) {
    pb::Entry* entry = dump.add_entries();
    describe(*entry, done.recordId, done.op);
    const std::int64_t ns = clock.toNs(done.ticks);
    entry->set_state(pb::COMPLETED);
    entry->set_scheduled_ns(ns);
    entry->set_started_ns(ns);
    entry->set_ended_ns(ns);
  }
  // In the order the operations were scheduled: a lane's record ids come in blocks, so ids
  // alone interleave threads (and the ring) out of order.
  auto* entries = dump.mutable_entries();
  std::sort(entries->begin(), entries->end(), [](const pb::Entry& a, const pb::Entry& b) {
    return a.scheduled_ns() != b.scheduled_ns() ? a.scheduled_ns() < b.scheduled_ns()
                                                : a.record_id() < b.record_id();
  });
  return dump;
}

Result<std::filesystem::path> FlightRecorder::dump(const std::string& reason) const {
  std::filesystem::path dir;
  {
    std::lock_guard lock(infoMu_);
    dir = dumpDir_;
  }
  auto written = writeDumpFile(snapshot(reason), dir);
  if (written.ok()) dumped_.store(true, std::memory_order_relaxed);
  return written;
}

Status FlightRecorder::enableSignalDump() {
  if (this != &process()) return failedPrecondition("only the process recorder dumps on SIGUSR1");
  bool expected = false;
  if (!signalDumpEnabled.compare_exchange_strong(expected, true)) return Status::Ok();
  if (::sem_init(&signalDumpRequests, 0, 0) != 0) return internalError("sem_init failed");
  std::thread([this] {
    while (true) {
      if (::sem_wait(&signalDumpRequests) != 0) continue;  // EINTR
      auto written = dump("SIGUSR1");
      std::cerr << "ftcomm: flight recorder dump on SIGUSR1: "
                << (written.ok() ? written->string() : written.status().toString()) << std::endl;
    }
  }).detach();
  struct sigaction action {};
  action.sa_handler = onSignalDumpRequest;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (::sigaction(SIGUSR1, &action, nullptr) != 0)
    return internalError("sigaction(SIGUSR1) failed");
  return Status::Ok();
}

}  // namespace ftcomm::recorder
