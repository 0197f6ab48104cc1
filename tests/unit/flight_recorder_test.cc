// The in-process flight recorder: the ring, state changes, dump files and SIGUSR1.
#include <catch2/catch.hpp>

#include <sched.h>
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "recorder/dump_file.h"
#include "recorder/flight_recorder.h"
#include "temp_dir.h"

using namespace ftcomm::recorder;
using ftcomm::testing::TempDir;
using namespace std::chrono_literals;

namespace {

OpDescriptor allreduce(std::uint64_t seq) {
  OpDescriptor op;
  op.commId = 1;
  op.epoch = 1;
  op.seq = seq;
  op.op = pb::ALL_REDUCE;
  op.dtype = pb::FLOAT32;
  op.countIn = op.countOut = 256;
  op.reduceOp = pb::SUM;
  op.algorithm = "ring";
  return op;
}

}  // namespace

TEST_CASE("the ring keeps the newest entries, oldest first, and counts what it dropped") {
  FlightRecorder recorder(4);
  for (std::uint64_t seq = 1; seq <= 6; ++seq) recorder.record(allreduce(seq))->markCompleted();
  CHECK(recorder.dropped() == 2);
  pb::Dump dump = recorder.snapshot("test");
  REQUIRE(dump.entries_size() == 4);
  CHECK(dump.entries(0).seq() == 3);
  CHECK(dump.entries(3).seq() == 6);
  CHECK(dump.dropped_entries() == 2);
  CHECK(dump.capacity() == 4);
  CHECK(dump.entries(0).algorithm() == "ring");
  CHECK(dump.entries(0).reduce_op() == pb::SUM);
}

TEST_CASE("each state change has its own timestamp and the first terminal state wins") {
  FlightRecorder recorder(8);
  auto progress = recorder.record(allreduce(1));
  CHECK(progress->state() == pb::SCHEDULED);
  progress->markStarted();
  // Completion comes from another thread, as from a progress thread.
  std::thread([&] { progress->markCompleted(); }).join();
  progress->markFailed("too late");
  pb::Dump dump = recorder.snapshot("test");
  const pb::Entry& e = dump.entries(0);
  CHECK(e.state() == pb::COMPLETED);
  CHECK(e.error().empty());
  CHECK(e.scheduled_ns() > 0);
  CHECK(e.started_ns() >= e.scheduled_ns());
  CHECK(e.ended_ns() >= e.started_ns());

  auto failing = recorder.record(allreduce(2));
  failing->markFailed("PeerFailed: rank 3 died");
  failing->markCompleted();
  dump = recorder.snapshot("test");
  CHECK(dump.entries(1).state() == pb::FAILED);
  CHECK(dump.entries(1).error() == "PeerFailed: rank 3 died");
  CHECK(dump.entries(1).started_ns() == 0);  // failed before it started
}

TEST_CASE("entry times are CLOCK_MONOTONIC nanoseconds, whichever clock the entries read") {
  FlightRecorder recorder(8);
  const std::int64_t before = monotonicNs();
  auto progress = recorder.record(allreduce(1));
  std::this_thread::sleep_for(20ms);
  progress->markStarted();
  std::this_thread::sleep_for(20ms);
  progress->markCompleted();
  const std::int64_t after = monotonicNs();
  const pb::Dump dump = recorder.snapshot("test");
  const pb::Entry& e = dump.entries(0);
  // A microsecond of slack for the conversion from TSC ticks (recorder_clock.h).
  constexpr std::int64_t kSlack = 1000;
  CHECK(e.scheduled_ns() >= before - kSlack);
  CHECK(e.ended_ns() <= after + kSlack);
  CHECK(e.started_ns() - e.scheduled_ns() >= 20'000'000 - kSlack);
  CHECK(e.started_ns() - e.scheduled_ns() < 1'000'000'000);
  CHECK(e.ended_ns() - e.started_ns() >= 20'000'000 - kSlack);
  CHECK(dump.monotonic_at_dump_ns() >= e.ended_ns());
}

TEST_CASE("entry times taken on every core agree with CLOCK_MONOTONIC taken there") {
  // Where entries read the TSC (recorder_clock.h), each core's must agree with the others': an
  // entry written on one core lands between clock readings taken on it, once converted.
  cpu_set_t allowed;
  REQUIRE(::sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  FlightRecorder recorder(CPU_SETSIZE);
  struct Taken {
    std::int64_t before, after;
  };
  std::vector<Taken> taken;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    // Catch2's assertions stay on the test's thread (one that throws elsewhere terminates).
    bool pinned = false;
    std::thread([&] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      pinned = ::pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
      if (!pinned) return;
      const std::int64_t before = monotonicNs();
      recorder.record(allreduce(taken.size() + 1))->markCompleted();
      taken.push_back({before, monotonicNs()});
    }).join();
    INFO("cpu " << cpu);
    REQUIRE(pinned);
  }
  const pb::Dump dump = recorder.snapshot("test");
  REQUIRE(static_cast<std::size_t>(dump.entries_size()) == taken.size());
  constexpr std::int64_t kSlack = 1000;  // as above
  for (std::size_t i = 0; i < taken.size(); ++i) {
    const pb::Entry& e = dump.entries(static_cast<int>(i));
    INFO("entry " << i);
    CHECK(e.scheduled_ns() >= taken[i].before - kSlack);
    CHECK(e.ended_ns() <= taken[i].after + kSlack);
  }
}

TEST_CASE("an operation completed within its call is started when scheduled and ends later") {
  FlightRecorder recorder(8);
  auto progress = recorder.record(allreduce(1));
  std::this_thread::sleep_for(5ms);
  progress->markCompletedWithinCall();
  CHECK(progress->state() == pb::COMPLETED);
  progress->markFailed("too late");  // a terminal state stays
  const pb::Entry e = recorder.snapshot("test").entries(0);
  CHECK(e.state() == pb::COMPLETED);
  CHECK(e.error().empty());
  CHECK(e.started_ns() == e.scheduled_ns());
  CHECK(e.ended_ns() - e.started_ns() >= 5'000'000 - 1000);
}

TEST_CASE("an entry overwritten once its operation ended starts afresh") {
  FlightRecorder recorder(1);
  recorder.record(allreduce(1))->markFailed("PeerFailed: rank 1 died");
  auto held = recorder.record(allreduce(2));  // reuses the first entry's storage
  pb::Dump dump = recorder.snapshot("test");
  REQUIRE(dump.entries_size() == 1);
  CHECK(dump.entries(0).seq() == 2);
  CHECK(dump.entries(0).state() == pb::SCHEDULED);
  CHECK(dump.entries(0).error().empty());
  CHECK(dump.entries(0).started_ns() == 0);
  CHECK(dump.entries(0).ended_ns() == 0);
  // One still held (its operation runs) is never reused: the next record gets a new one.
  auto next = recorder.record(allreduce(3));
  CHECK(next.get() != held.get());
  held->markCompleted();
  CHECK(next->state() == pb::SCHEDULED);
}

TEST_CASE("a dump is self-describing and round-trips through its file") {
  TempDir dir("ftcomm-fr");
  FlightRecorder recorder(16);
  recorder.setIdentity({"job-a", 3, 8, 2});
  pb::Communicator world;
  world.set_comm_id(1);
  world.set_name("world");
  world.set_epoch(2);
  world.set_rank(3);
  for (int r : {0, 1, 2, 3, 5, 6, 7}) world.add_world_ranks(r);
  recorder.upsertCommunicator(world);
  recorder.setDumpDirectory(dir.path);
  recorder.record(allreduce(1))->markStarted();
  auto written = recorder.dump("operation timeout");
  REQUIRE(written.ok());
  CHECK(written->filename() == "job-a.3.ftfr");
  auto dump = readDumpFile(*written);
  REQUIRE(dump.ok());
  CHECK(dump->format_version() == 1);
  CHECK(dump->job() == "job-a");
  CHECK(dump->rank() == 3);
  CHECK(dump->world_size() == 8);
  CHECK(dump->epoch() == 2);
  CHECK(dump->reason() == "operation timeout");
  CHECK(dump->pid() == ::getpid());
  CHECK_FALSE(dump->host().empty());
  CHECK_FALSE(dump->library_version().empty());
  CHECK(dump->wall_time_ns() > 0);
  REQUIRE(dump->communicators_size() == 1);
  CHECK(dump->communicators(0).world_ranks_size() == 7);
  REQUIRE(dump->entries_size() == 1);
  CHECK(dump->entries(0).state() == pb::STARTED);
}

TEST_CASE(
    "a later dump of the same rank keeps the earlier ones, numbered, and leaves no temp file") {
  TempDir dir("ftcomm-fr");
  FlightRecorder recorder(4);
  recorder.setIdentity({"job-b", 0, 2, 1});
  recorder.setDumpDirectory(dir.path);
  for (int i = 0; i < kKeptEarlierDumps + 3; ++i) {
    REQUIRE(recorder.dump("dump " + std::to_string(i)).ok());
  }
  auto latest = readDumpFile(dir.path / "job-b.0.ftfr");
  REQUIRE(latest.ok());
  CHECK(latest->reason() == "dump " + std::to_string(kKeptEarlierDumps + 2));
  auto previous = readDumpFile(dir.path / "job-b.0.ftfr.1");
  REQUIRE(previous.ok());
  CHECK(previous->reason() == "dump " + std::to_string(kKeptEarlierDumps + 1));
  CHECK(std::filesystem::exists(dir.path / ("job-b.0.ftfr." + std::to_string(kKeptEarlierDumps))));
  CHECK_FALSE(std::filesystem::exists(dir.path /
                                      ("job-b.0.ftfr." + std::to_string(kKeptEarlierDumps + 1))));
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
    CHECK(entry.path().string().find(".tmp") == std::string::npos);
  }
}

TEST_CASE(
    "corrupt, truncated, wrong-version and foreign files are refused with a message naming them") {
  TempDir dir("ftcomm-fr");
  FlightRecorder recorder(4);
  recorder.setIdentity({"job-c", 0, 1, 1});
  recorder.setDumpDirectory(dir.path);
  recorder.record(allreduce(1));
  auto written = recorder.dump("test");
  REQUIRE(written.ok());
  std::string good;
  {
    std::ifstream in(*written, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto writeVariant = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir.path / name, std::ios::binary) << bytes;
    return readDumpFile(dir.path / name);
  };
  auto truncated = writeVariant("truncated.ftfr", good.substr(0, good.size() - 5));
  REQUIRE_FALSE(truncated.ok());
  CHECK_THAT(truncated.status().message(), Catch::Contains("truncated.ftfr"));
  CHECK_THAT(truncated.status().message(), Catch::Contains("truncated or corrupt"));

  std::string flipped = good;
  flipped[flipped.size() - 3] ^= 0x55;
  CHECK_THAT(writeVariant("flipped.ftfr", flipped).status().message(), Catch::Contains("corrupt"));

  std::string future = good;
  future[8] = 9;
  CHECK_THAT(writeVariant("future.ftfr", future).status().message(),
             Catch::Contains("format version 9"));

  CHECK_THAT(writeVariant("foreign.ftfr", "{\"json\": true}").status().message(),
             Catch::Contains("not an ftcomm flight-recorder dump"));
  CHECK_THAT(writeVariant("header-only.ftfr", good.substr(0, 10)).status().message(),
             Catch::Contains("truncated inside its header"));
  CHECK_FALSE(readDumpFile(dir.path / "missing.ftfr").ok());
}

TEST_CASE("SIGUSR1 makes a live process write a dump from a recorder thread") {
  TempDir dir("ftcomm-fr");
  FlightRecorder& recorder = FlightRecorder::process();
  recorder.setIdentity({"signal-job", 5, 6, 1});
  recorder.setDumpDirectory(dir.path);
  recorder.record(allreduce(1))->markStarted();
  REQUIRE(recorder.enableSignalDump().ok());
  REQUIRE(::raise(SIGUSR1) == 0);
  const auto path = dir.path / "signal-job.5.ftfr";
  for (int i = 0; i < 1000 && !std::filesystem::exists(path); ++i)
    std::this_thread::sleep_for(10ms);
  auto dump = readDumpFile(path);
  REQUIRE(dump.ok());
  CHECK(dump->reason() == "SIGUSR1");
  CHECK(dump->entries_size() >= 1);
}
