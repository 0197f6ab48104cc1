// The calling thread's part of an inline collective (submit.h's runInline).
#include <sched.h>

#include "core/cpu_relax.h"
#include "core/submit.h"
#include "recorder/flight_recorder.h"

namespace ftcomm::detail {

namespace {

// How long the calling thread polls without a chunk done before it hands the collective to the
// engine and returns: long enough for peers that call within microseconds of each other. A
// streamed collective waits longer: handed over mid-stream, it goes on from the engine at a
// fraction of the speed, and the member that did so falls behind at the next one too.
constexpr auto kInlineSpin = std::chrono::microseconds(50);
constexpr auto kStreamSpin = std::chrono::microseconds(1000);
// Polls between clock readings (a reading costs as much as a poll here).
constexpr unsigned kPollsPerClock = 8;
// Polls after the first before the clock and the engine's spin bookkeeping start: a collective
// whose peers call within a few hundred nanoseconds ends within them, without the clock readings
// and engine locks it then skips. Back to back, without a pause between them: a pause costs as
// much as two polls on some VMs, and a post that lands meanwhile waits for it.
constexpr unsigned kQuickPolls = 64;

// Gives `run` to the engine, with its deadline, its failure handling and the notices to the
// other members; `lock` holds the engine's mutex. `failed`: what the caller's polls found wrong,
// with which the call then fails at once, breaking the communicator as the engine would.
Work handOff(const std::shared_ptr<CommState>& comm, const CollectiveCall& call,
             std::chrono::milliseconds timeout, std::uint64_t seq,
             std::shared_ptr<recorder::OpProgress> progress, InlineCollective run, Status failed,
             Clock::time_point start, std::unique_lock<std::mutex>& lock) {
  if (!failed.ok()) {
    // What this member's own polls found (a read of a buffer taken back, a mismatch) is the
    // collective's error, even where a peer's notice of its own failure broke the communicator
    // while this thread polled: the engine's thread runs meanwhile, and that notice says less.
    const Status why(failed.code(), comm->describe(call.name, seq) + ": " + failed.message());
    // The entry says how it failed before breakLocked's dump is written.
    if (progress) progress->markFailed(why.toString());
    comm->engine->breakLocked(*comm, why, seq, true);  // no-op when already broken
    lock.unlock();
    return refused(comm, std::move(progress), why);
  }
  // Broken meanwhile: the engine failed the operations it had, not this one.
  if (!comm->broken.ok()) return refusedAsBroken(comm, call.name, seq, std::move(progress), lock);
  auto work = std::make_shared<WorkState>(comm->engine, std::move(progress), start + timeout);
  work->markStartedAtScheduling();
  work->expectBytes(call.choiceBytes);
  auto op = std::make_unique<Operation>();
  op->comm = comm;
  op->timeout = timeout;
  op->deadline = start + timeout;
  op->work = work;
  op->name = call.name;
  op->seq = seq;
  op->watchesSharedMemory = true;
  op->task = std::make_unique<InlineTask>(std::move(run), !comm->engine->oversubscribed());
  comm->engine->startLocked(std::move(op));
  return Work(std::move(work));
}

}  // namespace

Work runInline(const std::shared_ptr<CommState>& comm, const CollectiveCall& call,
               const InlineChunking& chunking, std::chrono::milliseconds timeout, std::uint64_t seq,
               std::shared_ptr<recorder::OpProgress> progress,
               const transport::OpSignature& signature, std::unique_lock<std::mutex>& lock) {
  InlineCollective run(*comm->inlineGroup, comm->rank, call.collective, call.args, chunking,
                       comm->inlineCount + 1, seq, signature, progress.get());
  comm->inlineCount += run.queued() ? 0 : chunking.chunks;
  // Past the profile's caller_bytes the collective progresses on the engine (and in wait()) and
  // the call returns at once, so that the caller's work overlaps it; caller_only keeps every
  // collective here. Up to it, it runs here. The first chunk is posted under the mutex (posts go
  // out in sequence order); the rest streams without it.
  const tuning::Settings& settings = comm->inlineGroup->tuning->settings();
  if (!settings.callerOnly && chunking.chunks * chunking.step > settings.callerBytes) {
    return handOff(comm, call, timeout, seq, std::move(progress), std::move(run), Status::Ok(),
                   Clock::now(), lock);
  }
  // A queued broadcast posts once the mutex is let go: its tickets keep its posts in order, and
  // the unlock's fence would wait for the post to reach its readers' caches.
  const bool queued = run.queued();
  if (queued) {
    claimFastPathLocked(*comm, call.args.dtype, call.choiceBytes);
  } else if (call.collective == algorithms::Collective::kAllReduce && run.plain() &&
             !comm->engine->oversubscribed()) {  // the fast path's allreduces need a core each
    claimFastPathLocked(*comm, call.args.dtype, call.choiceBytes, call.args.op);
  }
  Result<bool> done = queued ? Result<bool>(false) : run.poll(1);
  lock.unlock();
  if (queued) done = run.poll(1);
  if (pollQuickly(run, *comm->engine, done)) {
    comm->engine->polledToCompletion();
    return Work(succeededWorkState(progress.get()));
  }
  return awaitInline(comm, call, timeout, seq, std::move(progress), std::move(run), done, lock);
}

bool pollQuickly(InlineCollective& run, const Engine& engine, Result<bool>& done) {
  // With a core for every process the peers run meanwhile: no yield (on these VMs one costs
  // more than the whole collective). With fewer, the peer may need this core.
  const bool yields = engine.oversubscribed();
  for (unsigned polls = 0; !yields && polls < kQuickPolls && done.ok() && !*done; ++polls) {
    done = run.poll();
  }
  return done.ok() && *done;
}

Work awaitInline(const std::shared_ptr<CommState>& comm, const CollectiveCall& call,
                 std::chrono::milliseconds timeout, std::uint64_t seq,
                 std::shared_ptr<recorder::OpProgress> progress, InlineCollective run,
                 Result<bool> done, std::unique_lock<std::mutex>& lock) {
  Engine& engine = *comm->engine;
  const bool yields = engine.oversubscribed();
  // Read only once the quick polls did not finish it (a reading costs 35 ns on these VMs); the
  // deadline counts from here.
  const Clock::time_point start = Clock::now();
  if (done.ok()) {
    engine.beginSpin();
    const auto patience = run.streams() ? kStreamSpin : kInlineSpin;
    auto now = start, moved = start;
    std::uint64_t chunks = run.chunksDone();
    for (unsigned polls = 1;; ++polls) {
      done = run.poll();
      if (!done.ok() || *done) break;
      if (polls % kPollsPerClock == 0) {
        now = Clock::now();
        if (run.chunksDone() != chunks) {  // a collective that streams and moves: keep at it
          chunks = run.chunksDone();
          moved = now;
        }
        if (now >= moved + patience || comm->unusable.load(std::memory_order_relaxed)) break;
      }
      if (yields) {
        ::sched_yield();
      } else {
        cpuRelax();
      }
    }
    engine.endSpin(done.ok() && *done, now);
    if (done.ok() && *done) return Work(succeededWorkState(progress.get()));
  }

  // Not done within the spin: the engine takes it; failed: the call fails here.
  lock.lock();
  return handOff(comm, call, timeout, seq, std::move(progress), std::move(run),
                 done.ok() ? Status::Ok() : done.status(), start, lock);
}

}  // namespace ftcomm::detail
