// The Communicator under real mpirun with a real rendezvous server: ftcomm-test-comm members
// (tests/fixtures/comm_peer.cc) run one scenario each and report one line per rank.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "child_process.h"
#include "json_check.h"
#include "mpi_job.h"
#include "rendezvous_server_process.h"
#include "temp_dir.h"
#include "transport/shm/shm_access.h"

using namespace ftcomm::testing;
using namespace std::chrono_literals;

namespace {

// ftcomm-fr's output for the dumps in `dir`.
std::string analyze(const std::string& dir) {
  LineProcess fr({binary("ftcomm-fr"), "analyze", dir});
  (void)fr.waitFor("no line starts like this", 60s);  // reads to the end of its output
  return fr.transcript();
}

bool transportIsUcx() {
  const char* transport = std::getenv("FTCOMM_TRANSPORT");
  return transport != nullptr && std::string(transport) == "ucx";
}

MpiJob job(const std::string& scenario, int ranks, std::vector<std::string> env = {},
           std::vector<std::string> mpirunOptions = {}) {
  MpiJob job;
  job.ranks = ranks;
  job.command = {binary("ftcomm-test-comm"), "--scenario", scenario};
  job.env = std::move(env);
  job.mpirunOptions = std::move(mpirunOptions);
  job.timeout = 240s;
  return job;
}

std::vector<std::string> run(const std::string& scenario, int ranks,
                             std::vector<std::string> env = {},
                             std::vector<std::string> mpirunOptions = {}) {
  return runMpiJob(job(scenario, ranks, std::move(env), std::move(mpirunOptions)));
}

// The same with the scenario's buffers from ftcomm::allocMem (`memory` "allocmem") or the heap.
std::vector<std::string> runWithMemory(const std::string& memory, const std::string& scenario,
                                       int ranks, std::vector<std::string> env = {},
                                       std::vector<std::string> mpirunOptions = {},
                                       bool keepSurvivors = false) {
  MpiJob j = job(scenario, ranks, std::move(env), std::move(mpirunOptions));
  j.command.insert(j.command.end(), {"--memory", memory});
  j.keepSurvivors = keepSurvivors;
  return runMpiJob(j);
}

}  // namespace

TEST_CASE(
    "communicator: every collective, dtype, op and count is right at 1, 2, 3, 4, 5 and 8 ranks") {
  for (int ranks : {1, 2, 3, 4, 5, 8}) {
    for (const auto& result : run("collectives", ranks)) {
      INFO("ranks=" << ranks);
      CHECK_THAT(result, Catch::StartsWith("OK"));
    }
  }
}

TEST_CASE("communicator: small collectives inline: a late member, several at once, many in a row") {
  for (int ranks : {2, 3, 4}) {
    for (const auto& result : run("inline", ranks)) {
      INFO("ranks=" << ranks);
      CHECK(result == "OK inline");
    }
  }
}

TEST_CASE("communicator: ranks that each call themselves a broadcast's root all fail") {
  // Inline (shared memory) the posts' signatures differ. With messages (FTCOMM_TRANSPORT=ucx)
  // each root sends and none receives, so nothing catches it (README, Mismatch: a known gap).
  if (transportIsUcx()) return;
  for (const auto& result : run("mismatch-roots", 2)) {
    CHECK_THAT(result, Catch::StartsWith("OK status=Mismatch"));
    CHECK_THAT(result, Catch::Contains("root=0") && Catch::Contains("root=1"));
  }
}

TEST_CASE("communicator: split trees, NOCOLOR, split(ranks) and nonblocking splits") {
  for (int ranks : {1, 3, 4}) {
    for (const auto& result : run("split", ranks)) {
      INFO("ranks=" << ranks);
      CHECK(result == "OK split");
    }
  }
}

TEST_CASE("communicator: send/recv match by tag in any order, report truncation, time out alone") {
  for (int ranks : {2, 3}) {
    for (const auto& result : run("p2p", ranks)) CHECK(result == "OK p2p");
  }
}

TEST_CASE("communicator: two communicators created at once without blocking") {
  for (const auto& result : run("async", 2)) CHECK(result == "OK async");
}

TEST_CASE("communicator: a different count or dtype on one rank is a Mismatch on every rank") {
  for (const std::string scenario :
       {"mismatch-count", "mismatch-dtype", "mismatch-large", "mismatch-inline"}) {
    TempDir dir;
    for (const auto& result : run(scenario, 3, {"FTCOMM_FR_DIR=" + dir.path.string()})) {
      INFO(scenario);
      CHECK_THAT(result, Catch::StartsWith("OK status=Mismatch after=Revoked"));
      // Both signatures are named.
      if (scenario == "mismatch-count") {
        CHECK_THAT(result, Catch::Contains("count=8") && Catch::Contains("count=16"));
      } else if (scenario == "mismatch-inline") {
        // One side in shared memory (inline), the others with messages (both with messages
        // under FTCOMM_TRANSPORT=ucx).
        CHECK_THAT(result, Catch::Contains("count=524288"));
        if (!transportIsUcx()) CHECK_THAT(result, Catch::Contains("count=1024"));
      } else if (scenario == "mismatch-large") {
        CHECK_THAT(result, Catch::Contains("count=65536"));
      } else {
        CHECK_THAT(result, Catch::Contains("int32") && Catch::Contains("float32"));
      }
    }
    // The dumps tell the same story.
    const std::string report = analyze(dir.path.string());
    INFO(report);
    CHECK_THAT(report, Catch::Contains("mismatch: rank 0 called all_reduce"));
  }
}

TEST_CASE("communicator: a root that differs between ranks never completes as if it agreed") {
  // Two roots that each only send exchange no message that could show the disagreement: the
  // ranks then fail at the deadline (Timeout) rather than with Mismatch.
  for (const auto& result : run("mismatch-root", 2, {"FTCOMM_TIMEOUT_MS=2000"})) {
    CHECK_THAT(result,
               Catch::StartsWith("OK status=Mismatch") || Catch::StartsWith("OK status=Timeout"));
  }
}

TEST_CASE("communicator: a rank that never calls makes the others time out at their deadline") {
  auto results = run("timeout", 3);
  for (int r = 0; r < 2; ++r) {
    const auto& result = results[static_cast<std::size_t>(r)];
    INFO(result);
    CHECK_THAT(result, Catch::StartsWith("OK status=Timeout"));
    const int ms = std::stoi(field(result, "after_ms"));
    CHECK(ms >= 1400);  // not before the 1500 ms deadline
    CHECK(ms < 20000);  // and not much after it, even on two loaded cores
  }
  CHECK(results[2] == "OK absent");
}

TEST_CASE("communicator: a rank that never shows up makes creation fail naming it") {
  auto results = run("p2p", 2, {"FTCOMM_WORLD_SIZE=3", "FTCOMM_CREATE_TIMEOUT_MS=4000"});
  for (const auto& result : results) {
    CHECK_THAT(result, Catch::StartsWith("ERROR create"));
    // Rank 2 is named (the other one may still have been starting when a deadline passed).
    CHECK_THAT(result, Catch::Contains("ranks not claimed:") && Catch::EndsWith(" 2)"));
  }
}

TEST_CASE(
    "communicator: every rank dumps its flight recorder and ftcomm-fr names the rank that "
    "skipped a collective") {
  TempDir dir;
  auto results = run("skip", 4, {"FTCOMM_FR_DIR=" + dir.path.string()});
  for (const auto& result : results) {
    CHECK_THAT(result, Catch::StartsWith("OK status=Timeout") ||
                           Catch::StartsWith("OK status=Revoked") ||
                           Catch::StartsWith("OK status=PeerFailed"));
  }
  const std::string report = analyze(dir.path.string());
  INFO(report);
  CHECK_THAT(report, Catch::Contains("dumps of 4 of 4 ranks"));
  // The others' fourth allreduce; seq 1 is creation's wire-up exchange.
  CHECK_THAT(report, Catch::Contains("first incomplete collective is seq 5, all_reduce"));
  CHECK_THAT(report, Catch::Contains("never entered it (likely culprits): rank 1"));
  // The same dumps as a trace: valid JSON, one track per rank.
  const auto tracePath = dir.path / "trace.json";
  LineProcess fr({binary("ftcomm-fr"), "trace", dir.path.string(), "-o", tracePath.string()});
  (void)fr.waitFor("no line starts like this", 60s);
  CHECK(fr.child().waitExit(10s) == 0);
  std::ifstream in(tracePath);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(JsonCheck::error(text.str()).empty());
  for (int rank = 0; rank < 4; ++rank) {
    CHECK_THAT(text.str(), Catch::Contains("\"process_name\",\"pid\":" + std::to_string(rank)));
  }
}

TEST_CASE("communicator: SIGUSR1 to a running member dumps its recorder and the job goes on") {
  TempDir dir;
  for (const auto& result : run("sigusr1", 2, {"FTCOMM_FR_DIR=" + dir.path.string()})) {
    CHECK(result == "OK dumped");
  }
  std::string rank0Dump;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
    const std::string name = entry.path().string();
    if (name.size() > 7 && name.compare(name.size() - 7, 7, ".0.ftfr") == 0) rank0Dump = name;
  }
  REQUIRE(!rank0Dump.empty());
  LineProcess fr({binary("ftcomm-fr"), "show", rank0Dump});
  (void)fr.waitFor("no line starts like this", 60s);
  INFO(fr.transcript());
  CHECK_THAT(fr.transcript(), Catch::Contains("because: SIGUSR1"));
  CHECK_THAT(fr.transcript(), Catch::Contains("broadcast"));
  CHECK_THAT(fr.transcript(), Catch::Contains("all_reduce"));
}

TEST_CASE(
    "nccl: over a host communicator the NCCL id travels through the rendezvous, a host "
    "revoke fails NCCL work and reconfigure follows the host") {
  for (const auto& result : run("nccl-host", 3))
    CHECK_THAT(result, Catch::StartsWith("OK nccl-host"));
}

TEST_CASE("shared memory: FTCOMM_TRANSPORT other than auto, ucx or shm fails creation naming it") {
  auto results = run("p2p", 2, {"FTCOMM_TRANSPORT=bogus"});
  for (const auto& result : results) {
    CHECK_THAT(result, Catch::StartsWith("ERROR create") &&
                           Catch::Contains("FTCOMM_TRANSPORT='bogus': expected auto, ucx or shm"));
  }
}

TEST_CASE("shared memory: FTCOMM_TRANSPORT=shm runs every collective at 3 ranks") {
  // Where processes may not reach into each other, shm must refuse, saying why.
  const ftcomm::Status& access = ftcomm::shm::processAccess();
  for (const auto& result : run("collectives", 3, {"FTCOMM_TRANSPORT=shm"})) {
    if (access.ok()) {
      CHECK_THAT(result, Catch::StartsWith("OK"));
    } else {
      CHECK_THAT(result, Catch::StartsWith("ERROR create") &&
                             Catch::Contains("FTCOMM_TRANSPORT=shm: shared memory"));
    }
  }
}

TEST_CASE("shared memory: the direct algorithms are refused where peers cannot be read") {
  auto results = run("collectives", 2, {"FTCOMM_TRANSPORT=ucx", "FTCOMM_ALGO_ALLREDUCE=direct"});
  for (const auto& result : results) {
    CHECK_THAT(result, Catch::StartsWith("ERROR") &&
                           Catch::Contains("FTCOMM_ALGO_ALLREDUCE=direct reads the peers' memory"));
  }
}

TEST_CASE("shared memory: a rank stopped mid-read fails rather than return a buffer given back") {
  // Rank 1 stops inside a direct allgather before reading rank 0's block; rank 0 times out,
  // writes into its buffer again and wakes rank 1 (comm_peer_failures.cc, reclaimScenario): rank
  // 1's copy of rank 0's block is then wrong, and its allgather must fail. With the inline direct
  // form, and with the direct algorithm over messages (FTCOMM_INLINE=0). Unbound: mpirun binds
  // each of 2 ranks to a core of its own, and the watcher must not share rank 1's (there the
  // copy ran on for whole time slices, past the end of its own block and into the read of rank
  // 0's, before the watcher saw it: 2-6 runs in 8 failed so on a 2-core EPYC, Linux 6.18).
  //
  // On a loaded machine the watcher may be scheduled too late, after rank 1 read rank 0's block
  // (rank0=right): that run cannot tell, so the scenario runs again, up to 3 times. A copy that
  // was right may come back with any status; a wrong one never with OK.
  //
  // With buffers from allocMem too, which rank 1 copies from its own mapping of rank 0's memory
  // instead of with cross-memory attach: only the loan check after the copy can tell.
  for (const auto& [memory, inlineForm] : std::vector<std::pair<std::string, std::string>>{
           {"heap", "1"}, {"heap", "0"}, {"allocmem", "1"}, {"allocmem", "0"}}) {
    bool exercised = false;
    for (int attempt = 0; attempt < 3 && !exercised; ++attempt) {
      auto results = runWithMemory(memory, "reclaim", 2, {"FTCOMM_INLINE=" + inlineForm},
                                   {"--bind-to", "none"});
      INFO(memory << " memory, FTCOMM_INLINE=" << inlineForm << ", attempt " << attempt << ": "
                  << results[0] << " / " << results[1]);
      CHECK_THAT(results[0], Catch::StartsWith("OK status=Timeout") ||
                                 Catch::StartsWith("OK status=PeerFailed"));
      REQUIRE_THAT(results[1], Catch::StartsWith("OK status=") && Catch::Contains("stopped=yes"));
      if (results[1].find("rank0=right") != std::string::npos) continue;  // stopped too late
      exercised = true;
      CHECK_THAT(results[1], Catch::Contains("rank0=wrong"));
      if (inlineForm == "1") {
        // Only the read can tell: nothing else runs between the copy and the return.
        CHECK_THAT(results[1], Catch::StartsWith("OK status=Revoked") &&
                                   Catch::Contains("rank 0 took back the buffer being read"));
      } else {
        // The engine may see rank 0's failure notice before it finishes the task.
        CHECK_THAT(results[1], Catch::StartsWith("OK status=Revoked") ||
                                   Catch::StartsWith("OK status=Timeout"));
      }
    }
    INFO(memory << " memory, FTCOMM_INLINE=" << inlineForm);
    CHECK(exercised);  // the watcher stopped rank 1 before its read in one of the runs
  }
}

TEST_CASE(
    "shared memory: buffers from allocMem give every collective's right result at 2-4 ranks") {
  // Also with every collective whose posts are up to 16 MiB streamed through the inline slots,
  // as on AMD Zen 5 (inline_plan.cc): the all-to-alls (and 2-rank allgathers) lend their
  // allocMem inputs (whole, or chunk by chunk with FTCOMM_INLINE_LEND_WHOLE=0), every collective
  // with FTCOMM_INLINE_LEND=1, none with 0; the peers read the lent parts from there instead of
  // from the slots (inline_lend.cc), in place and not.
  const std::vector<std::vector<std::string>> settings = {
      {},
      {"FTCOMM_INLINE_MAX_KIB=16384"},
      {"FTCOMM_INLINE_MAX_KIB=16384", "FTCOMM_INLINE_LEND_WHOLE=0"},
      {"FTCOMM_INLINE_MAX_KIB=16384", "FTCOMM_INLINE_LEND=0"},
      {"FTCOMM_INLINE_MAX_KIB=16384", "FTCOMM_INLINE_LEND=1"}};
  for (const auto& env : settings) {
    for (int ranks : {2, 3, 4}) {
      for (const auto& result : runWithMemory("allocmem", "collectives", ranks, env)) {
        INFO("ranks=" << ranks << " " << (env.empty() ? "" : env.back()));
        CHECK_THAT(result, Catch::StartsWith("OK"));
      }
    }
  }
}

TEST_CASE(
    "shared memory: members of which some lend allocMem buffers and some copy heap ones get "
    "every collective's right result") {
  // The odd ranks' buffers are allocMem memory, the even ranks' heap memory: where a collective
  // streams, the odd ranks lend and the even ones copy through their slots, so nobody may take
  // the whole collective at once (InlineCollective::lendsWhole), and each reads every peer's
  // chunk from where that peer's post says it is.
  for (const std::string lend : {"", "1"}) {
    for (int ranks : {2, 3, 4}) {
      std::vector<std::string> env = {"FTCOMM_INLINE_MAX_KIB=16384"};
      if (!lend.empty()) env.push_back("FTCOMM_INLINE_LEND=" + lend);
      for (const auto& result : runWithMemory("mixed", "collectives", ranks, env)) {
        INFO("ranks=" << ranks << " " << env.back());
        CHECK_THAT(result, Catch::StartsWith("OK"));
      }
    }
  }
}

TEST_CASE(
    "shared memory: a collective lent whole right behind a streamed one, both posted without "
    "waiting, never leaves the members waiting on the next, and the recorder says which lent") {
  // The scenario posts 60 pairs. With allocMem buffers at 3-4 ranks the allgather streams and
  // the all-to-all lends whole (at 2 ranks the broadcast streams and the allgather lends whole);
  // mixed with FTCOMM_INLINE_LEND=1, the allgather and all-to-all stream and the broadcast lends
  // whole. Before the fix (302e9f2), 2 of its 12 runs at 3-4 ranks hung on the next collective
  // until its 30-second deadline. Each member's flight recorder must then name the collectives it
  // lent, and those lent whole.
  const std::vector<std::pair<std::string, std::vector<std::string>>> settings = {
      {"allocmem", {"FTCOMM_INLINE_MAX_KIB=16384"}},
      {"mixed", {"FTCOMM_INLINE_MAX_KIB=16384", "FTCOMM_INLINE_LEND=1"}}};
  for (const auto& [memory, env] : settings) {
    for (int ranks : {2, 3, 4}) {
      for (int run = 0; run < 3; ++run) {
        for (const auto& result : runWithMemory(memory, "pipelined", ranks, env)) {
          INFO(memory << " memory, ranks=" << ranks << " " << env.back() << ", run " << run);
          CHECK_THAT(result, Catch::StartsWith("OK"));
        }
      }
    }
  }
}

TEST_CASE(
    "shared memory: broadcasts streamed in place of the direct form give every member the root's "
    "data, read whole from an allocMem root and copied from a heap one") {
  // On AMD Zen 2 at 4 ranks, and at 3 to 4 MiB (on Intel at 3-4 ranks), a broadcast past one
  // slot streams where
  // the others go direct, and an allocMem root lends its buffer (InlineChunking::lends). Mixed:
  // the odd ranks' buffers are allocMem, the even ones' heap, so lent and copied broadcasts
  // alternate. On other processors these sizes go direct, or stream without lending; the results
  // are checked all the same.
  for (const std::string memory : {"allocmem", "mixed", "heap"}) {
    for (int ranks : {3, 4}) {
      for (const auto& result : runWithMemory(memory, "streamed-broadcast", ranks, {})) {
        INFO(memory << " memory, ranks=" << ranks);
        CHECK_THAT(result, Catch::StartsWith("OK"));
      }
    }
  }
}

TEST_CASE(
    "shared memory: a rank killed while the others read its buffers fails them, never with a "
    "wrong block") {
  // The others may already have read the victim's block of the allgather it died in; they then
  // wait for its word that it is done, which never comes. From allocMem's memory they read it
  // from their own mapping, which outlives the victim (no ESRCH, as cross-memory attach gives):
  // the victim's pidfd must fail them all the same. A survivor that sees the death first gives
  // its buffers back, so the other may fail with Revoked on its read of them instead (the
  // scenario accepts no other failure); one of them at least names the victim.
  // allocMem's memory streamed through the slots, and lent (FTCOMM_INLINE_LEND=1) where the
  // allgather streams (AMD Zen 5), and heap memory. Then the same with broadcasts from the
  // victim (killed-root), which on Zen 2 stream and, from allocMem, are lent whole.
  const std::vector<std::pair<std::string, std::vector<std::string>>> settings = {
      {"allocmem", {}}, {"allocmem", {"FTCOMM_INLINE_LEND=1"}}, {"heap", {}}};
  for (const std::string scenario : {"killed-lender", "killed-root"}) {
    for (const auto& [memory, env] : settings) {
      auto results = runWithMemory(memory, scenario, 3, env, {}, /*keepSurvivors=*/true);
      int named = 0;
      for (int r = 0; r < 2; ++r) {
        const std::string& result = results[static_cast<std::size_t>(r)];
        INFO(scenario << ", " << memory << " memory, rank " << r << ": " << result);
        CHECK_THAT(result, Catch::StartsWith("OK failed_at="));
        named += result.find("rank 2 failed") != std::string::npos ? 1 : 0;
      }
      INFO(scenario << ", " << memory << " memory: " << results[0] << " / " << results[1]);
      CHECK(named >= 1);
      CHECK(results[2] == "missing");
    }
  }
}
