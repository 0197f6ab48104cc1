#include "core/submit.h"

#include "algorithms/path.h"
#include "core/fault_injection.h"
#include "recorder/flight_recorder.h"

namespace ftcomm::detail {

namespace pb = recorder::v1;
using recorder::recordedOp;
using recorder::recordedType;

namespace {

std::chrono::milliseconds timeoutOf(const CommState& comm, const OpOptions& options) {
  return options.timeout.count() > 0 ? options.timeout : comm.opTimeout;
}

// FTCOMM_FAULT's hook, before the call takes its sequence number `nextSeq()` (read under the
// engine's mutex), and outside that mutex: a delayed or hung call must not stall the others.
template <typename NextSeq>
void injectFault(const std::shared_ptr<CommState>& comm, const char* name, NextSeq nextSeq) {
  FaultInjector& injector = FaultInjector::process();
  if (!injector.armed()) return;
  std::uint64_t seq = 0;
  {
    std::lock_guard<std::mutex> lock(comm->engine->mutex());
    seq = nextSeq();
  }
  injector.at(name, comm->launchRank, comm->id, comm->epoch, seq,
              [&] { comm->engine->dropConnections(comm->rendezvous.get()); });
}

}  // namespace

Work refused(const std::shared_ptr<CommState>& comm, std::shared_ptr<recorder::OpProgress> progress,
             Status why) {
  auto state = std::make_shared<WorkState>(comm->engine, std::move(progress), Clock::now());
  state->complete(std::move(why));
  return Work(std::move(state));
}

Work refusedAsBroken(const std::shared_ptr<CommState>& comm, const char* name, std::uint64_t seq,
                     std::shared_ptr<recorder::OpProgress> progress,
                     std::unique_lock<std::mutex>& lock) {
  // The collective another member already failed (its notice can arrive before this member
  // makes the call) fails with that member's error; later ones with Revoked.
  if (seq == comm->brokenSeq) {
    const Status why = comm->broken;
    lock.unlock();
    Work work = refused(comm, std::move(progress), why);
    // The dump written when the notice came lacks this call; without it a reader would take
    // this member for one that never entered the failed collective.
    (void)recorder::FlightRecorder::process().dump(why.message() +
                                                   " (called after the failure notice)");
    return work;
  }
  const Status why(
      StatusCode::kRevoked,
      comm->describe(name, seq) + ": the communicator is unusable: " + comm->broken.toString());
  lock.unlock();
  return refused(comm, std::move(progress), why);
}

Work submitCollective(const std::shared_ptr<CommState>& comm, CollectiveCall&& call,
                      const OpOptions& options, const Status& valid) {
  recorder::OpDescriptor record;
  record.commId = comm->id;
  record.epoch = comm->epoch;
  record.op = call.recordOp;
  record.dtype = recordedType(call.args.dtype);
  record.countIn = call.countIn;
  record.countOut = call.countOut;
  record.root = call.args.root;
  if (call.reduces) record.reduceOp = recordedOp(call.args.op);

  const algorithms::AlgorithmInfo* algorithm = nullptr;
  Status status = valid;
  InlineChunking chunking;
  if (status.ok()) {
    algorithms::PathQuery query;
    query.collective = call.collective;
    query.count = call.args.count;
    query.dtype = call.args.dtype;
    query.bytes = call.choiceBytes;
    query.ranks = comm->size;
    query.peersReadable = comm->peersReadable;
    query.hasInline = comm->inlineGroup != nullptr;
    query.forced = (comm->forcedAlgorithms & (1u << static_cast<unsigned>(call.collective))) != 0;
    query.spansHosts = comm->spansHosts;
    auto path = algorithms::choosePath(*comm->tuning, query);
    if (path.ok()) {
      chunking = path->chunking;
      algorithm = path->algorithm;
      call.args.segmentBytes = path->segmentBytes;
    } else {
      status = path.status();
    }
  }
  const bool inlined = chunking.chunks > 0;
  if (inlined) {
    record.algorithm = chunking.direct ? "direct (inline)" : "inline";
  } else if (algorithm != nullptr) {
    record.algorithm = algorithm->name.data();
  }
  if (!status.ok()) {
    return refused(comm, recorder::FlightRecorder::process().record(record),
                   Status(status.code(), std::string(call.name) + ": " + status.message()));
  }

  injectFault(comm, call.name,
              [&] { return comm->collectiveSeq.load(std::memory_order_relaxed) + 1; });
  std::unique_lock<std::mutex> lock(comm->engine->mutex());
  if (Status taken = revokeFastPathLocked(*comm, timeoutOf(*comm, options)); !taken.ok()) {
    lock.unlock();
    return refused(comm, recorder::FlightRecorder::process().record(record),
                   Status(taken.code(), std::string(call.name) + ": " + taken.message()));
  }
  // Only this thread writes it now (the fast path's owner, if any, is this thread).
  const std::uint64_t seq = comm->collectiveSeq.load(std::memory_order_relaxed) + 1;
  comm->collectiveSeq.store(seq, std::memory_order_relaxed);
  record.seq = seq;
  auto progress = recorder::FlightRecorder::process().record(record);
  if (seq > comm->lastCompletable.load(std::memory_order_relaxed)) {
    comm->engine->breakLocked(
        *comm, Engine::leftBeforeLocked(*comm, comm->describe(call.name, seq)), seq, false);
  }
  if (!comm->broken.ok()) return refusedAsBroken(comm, call.name, seq, std::move(progress), lock);
  transport::OpSignature signature;
  signature.kind = call.kind;
  signature.dtype = static_cast<std::uint8_t>(call.args.dtype);
  signature.reduceOp = call.reduces ? static_cast<std::uint8_t>(call.args.op) : 0;
  signature.root = call.args.root;
  signature.count = call.args.count;
  signature.extra = call.extra;
  if (inlined) {
    return runInline(comm, call, chunking, timeoutOf(*comm, options), seq, std::move(progress),
                     signature, lock);
  }
  if (comm->inlineGroup) announceCollective(*comm->inlineGroup, comm->rank, seq, signature);
  auto op = std::make_unique<Operation>();
  op->comm = comm;
  op->timeout = timeoutOf(*comm, options);
  op->deadline = Clock::now() + op->timeout;
  op->work = std::make_shared<WorkState>(comm->engine, std::move(progress), op->deadline);
  op->work->expectBytes(call.choiceBytes);
  if (comm->severalHosts) op->work->expectNetwork();
  op->name = call.name;
  op->seq = seq;
  op->counts = std::move(call.counts);
  auto span = [&](std::size_t i) {
    const auto [offset, length] = call.ranges[i];
    return std::span<const std::size_t>(op->counts.data() + offset, length);
  };
  if (!op->counts.empty()) {
    call.args.sendCounts = span(0);
    call.args.sendDispls = span(1);
    call.args.recvCounts = span(2);
    call.args.recvDispls = span(3);
  }
  call.args.tag = transport::MessageTag(comm->channel, collectiveSlot(seq), signature);
  call.args.hosts = comm->hosts;
  op->task = algorithm->make(*comm->transport, call.args);
  Work work(op->work);
  comm->engine->startLocked(std::move(op));
  return work;
}

Work submitPointToPoint(const std::shared_ptr<CommState>& comm, const PointToPointCall& call,
                        const OpOptions& options, const Status& valid) {
  const char* name = call.send ? "send" : "recv";
  recorder::OpDescriptor record;
  record.commId = comm->id;
  record.epoch = comm->epoch;
  record.op = call.send ? pb::SEND : pb::RECV;
  record.dtype = recordedType(call.dtype);
  record.countIn = call.send ? call.count : 0;
  record.countOut = call.send ? 0 : call.count;
  record.peer = call.peer;
  record.tag = call.tag;
  if (!valid.ok()) {
    return refused(comm, recorder::FlightRecorder::process().record(record),
                   Status(valid.code(), std::string(name) + ": " + valid.message()));
  }
  injectFault(comm, call.send ? "send" : "recv", [&] { return comm->p2pSeq + 1; });
  std::lock_guard<std::mutex> lock(comm->engine->mutex());
  const std::uint64_t seq = ++comm->p2pSeq;
  record.seq = seq;
  auto progress = recorder::FlightRecorder::process().record(record);
  if (!comm->broken.ok()) {
    return refused(comm, std::move(progress),
                   Status(StatusCode::kRevoked,
                          comm->describe(name, seq) +
                              ": the communicator is unusable: " + comm->broken.toString()));
  }
  auto op = std::make_unique<Operation>();
  op->comm = comm;
  op->collective = false;
  op->timeout = timeoutOf(*comm, options);
  op->deadline = Clock::now() + op->timeout;
  op->work = std::make_shared<WorkState>(comm->engine, std::move(progress), op->deadline);
  op->work->expectBytes(call.count * dataTypeSize(call.dtype));
  if (comm->severalHosts) op->work->expectNetwork();
  op->name = name;
  op->peer = call.peer;
  op->tag = call.tag;
  op->send = call.send;
  op->seq = seq;
  transport::OpSignature signature;
  signature.kind = transport::OpKind::kPointToPoint;
  signature.dtype = static_cast<std::uint8_t>(call.dtype);
  signature.count = call.count;
  const transport::MessageTag tag(comm->channel, pointToPointSlot(call.tag), signature);
  const std::size_t bytes = call.count * dataTypeSize(call.dtype);
  op->request = call.send ? comm->transport->send(call.peer, tag, call.buffer, bytes)
                          : comm->transport->recv(call.peer, tag, call.buffer, bytes);
  Work work(op->work);
  comm->engine->startLocked(std::move(op));
  return work;
}

}  // namespace ftcomm::detail
