// The flight recorder's thread lanes: entries of operations completed within their call.
#include <catch2/catch.hpp>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "recorder/flight_recorder.h"

using namespace ftcomm::recorder;

namespace {

// An 8-byte broadcast whose fields all follow from `seq`, so that a torn entry shows.
OpDescriptor broadcast(std::uint64_t seq, std::uint64_t comm = 7) {
  OpDescriptor op;
  op.commId = comm;
  op.epoch = 2;
  op.seq = seq;
  op.op = pb::BROADCAST;
  op.dtype = pb::FLOAT64;
  op.countIn = seq * 3;
  op.countOut = seq * 5;
  op.root = static_cast<std::int32_t>(seq % 7);
  op.algorithm = "inline (queued)";
  return op;
}

bool whole(const pb::Entry& e) {
  return e.count_in() == e.seq() * 3 && e.count_out() == e.seq() * 5 &&
         e.root() == static_cast<std::int32_t>(e.seq() % 7) && e.op() == pb::BROADCAST &&
         e.epoch() == 2 && e.algorithm() == "inline (queued)" && e.state() == pb::COMPLETED;
}

OpDescriptor reduce(std::uint64_t seq) {
  OpDescriptor op;
  op.commId = 7;
  op.epoch = 2;
  op.seq = seq;
  op.op = pb::ALL_REDUCE;
  op.algorithm = "ring";
  return op;
}

}  // namespace

TEST_CASE("an operation completed within its call is recorded complete, in order beside the ring") {
  FlightRecorder recorder(16);
  auto first = recorder.record(reduce(1));
  first->markCompleted();
  recorder.recordCompletedWithinCall(broadcast(2));
  recorder.record(reduce(3));  // still scheduled
  const pb::Dump dump = recorder.snapshot("test");
  REQUIRE(dump.entries_size() == 3);
  CHECK(dump.entries(0).seq() == 1);
  CHECK(dump.entries(2).seq() == 3);
  const pb::Entry& done = dump.entries(1);
  CHECK(done.seq() == 2);
  CHECK(whole(done));
  CHECK(done.scheduled_ns() > 0);
  CHECK(done.started_ns() == done.scheduled_ns());
  CHECK(done.ended_ns() == done.scheduled_ns());
  CHECK(done.scheduled_ns() >= dump.entries(0).scheduled_ns());
  CHECK(done.scheduled_ns() <= dump.entries(2).scheduled_ns());
  CHECK(dump.entries(2).state() == pb::SCHEDULED);
  const std::set<std::uint64_t> ids{dump.entries(0).record_id(), dump.entries(1).record_id(),
                                    dump.entries(2).record_id()};
  CHECK(ids.size() == 3);
  CHECK(dump.dropped_entries() == 0);
}

TEST_CASE("a thread's lane keeps its newest entries and counts the rest as dropped") {
  FlightRecorder recorder(4);
  for (std::uint64_t seq = 1; seq <= 6; ++seq) recorder.recordCompletedWithinCall(broadcast(seq));
  CHECK(recorder.dropped() == 2);
  const pb::Dump dump = recorder.snapshot("test");
  REQUIRE(dump.entries_size() == 4);
  CHECK(dump.entries(0).seq() == 3);
  CHECK(dump.entries(3).seq() == 6);
  CHECK(dump.dropped_entries() == 2);
}

TEST_CASE("recording off leaves the lanes empty too") {
  FlightRecorder off(0);
  off.recordCompletedWithinCall(broadcast(1));
  CHECK(off.snapshot("test").entries_size() == 0);
  FlightRecorder paused(8);
  paused.setRecording(false);
  paused.recordCompletedWithinCall(broadcast(1));
  CHECK(paused.snapshot("test").entries_size() == 0);
}

TEST_CASE("threads write lanes of their own, and a dump taken meanwhile holds only whole entries") {
  constexpr std::size_t kCapacity = 256;
  constexpr std::uint64_t kEach = 200000;
  FlightRecorder recorder(kCapacity);
  std::atomic<int> running{2}, started{0};
  std::vector<std::thread> writers;
  for (std::uint64_t comm = 1; comm <= 2; ++comm) {
    writers.emplace_back([&, comm] {
      recorder.recordCompletedWithinCall(broadcast(1, comm));
      // Both hold a lane before either can end: a thread that ended hands its lane to the next.
      started.fetch_add(1);
      while (started.load() < 2) std::this_thread::yield();
      for (std::uint64_t seq = 2; seq <= kEach; ++seq)
        recorder.recordCompletedWithinCall(broadcast(seq, comm));
      running.fetch_sub(1);
    });
  }
  int dumps = 0, torn = 0;
  while (running.load() > 0 || dumps == 0) {
    const pb::Dump dump = recorder.snapshot("test");
    for (const pb::Entry& e : dump.entries()) torn += whole(e) ? 0 : 1;
    ++dumps;
  }
  for (auto& w : writers) w.join();
  CHECK(torn == 0);
  const pb::Dump last = recorder.snapshot("test");
  REQUIRE(last.entries_size() == static_cast<int>(2 * kCapacity));
  CHECK(last.dropped_entries() == 2 * (kEach - kCapacity));
  std::set<std::uint64_t> ids;
  std::uint64_t lastSeq[3] = {0, kEach - kCapacity, kEach - kCapacity};
  for (const pb::Entry& e : last.entries()) {
    ids.insert(e.record_id());
    // Each thread's entries in its own order.
    CHECK(e.seq() == lastSeq[e.comm_id()] + 1);
    lastSeq[e.comm_id()] = e.seq();
  }
  CHECK(ids.size() == 2 * kCapacity);
}

TEST_CASE("a lane whose thread ended goes to the next thread, its entries kept") {
  FlightRecorder recorder(16);
  std::thread([&] {
    for (std::uint64_t seq = 1; seq <= 3; ++seq) recorder.recordCompletedWithinCall(broadcast(seq));
  }).join();
  std::thread([&] {
    for (std::uint64_t seq = 4; seq <= 5; ++seq) recorder.recordCompletedWithinCall(broadcast(seq));
  }).join();
  const pb::Dump dump = recorder.snapshot("test");
  REQUIRE(dump.entries_size() == 5);
  std::set<std::uint64_t> ids;
  for (int i = 0; i < 5; ++i) {
    CHECK(dump.entries(i).seq() == static_cast<std::uint64_t>(i + 1));
    ids.insert(dump.entries(i).record_id());
  }
  CHECK(ids.size() == 5);
}
