// Communicators over shared memory under real mpirun (tests/fixtures/comm_peer.cc): the
// transport's settings, reads of peers' buffers that fail rather than return what their owner
// took back, and buffers from allocMem lent to the peers, also when their owner dies.
#include <catch2/catch.hpp>

#include "comm_jobs.h"
#include "transport/shm/shm_access.h"

using namespace ftcomm::testing;
using namespace std::chrono_literals;

namespace {

// The environment of a 2-rank job whose members choose how to post (PostChoice: copies plain or
// around the cache, or lending) on any processor (the zen2 profile), with `setting` ("lend=none"
// or "lend=all", "around_cache=never" or "=always") settling part of it.
std::vector<std::string> choosing(const std::string& setting) {
  return {"FTCOMM_TUNING=zen2" + (setting.empty() ? "" : "," + setting)};
}

// This processor's profile with `overrides` of its settings.
std::vector<std::string> autoWith(const std::string& overrides) {
  return {"FTCOMM_TUNING=auto," + overrides};
}

}  // namespace

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
  // form, and with the direct algorithm over messages (the profile's `inline off`). Unbound: mpirun
  // binds each of 2 ranks to a core of its own, and the watcher must not share rank 1's (there the
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
           {"heap", "on"}, {"heap", "off"}, {"allocmem", "on"}, {"allocmem", "off"}}) {
    bool exercised = false;
    for (int attempt = 0; attempt < 3 && !exercised; ++attempt) {
      auto results = runWithMemory(memory, "reclaim", 2, autoWith("inline=" + inlineForm),
                                   {"--bind-to", "none"});
      INFO(memory << " memory, inline=" << inlineForm << ", attempt " << attempt << ": "
                  << results[0] << " / " << results[1]);
      CHECK_THAT(results[0], Catch::StartsWith("OK status=Timeout") ||
                                 Catch::StartsWith("OK status=PeerFailed"));
      REQUIRE_THAT(results[1], Catch::StartsWith("OK status=") && Catch::Contains("stopped=yes"));
      if (results[1].find("rank0=right") != std::string::npos) continue;  // stopped too late
      exercised = true;
      CHECK_THAT(results[1], Catch::Contains("rank0=wrong"));
      if (inlineForm == "on") {
        // Only the read can tell: nothing else runs between the copy and the return.
        CHECK_THAT(results[1], Catch::StartsWith("OK status=Revoked") &&
                                   Catch::Contains("rank 0 took back the buffer being read"));
      } else {
        // The engine may see rank 0's failure notice before it finishes the task.
        CHECK_THAT(results[1], Catch::StartsWith("OK status=Revoked") ||
                                   Catch::StartsWith("OK status=Timeout"));
      }
    }
    INFO(memory << " memory, inline=" << inlineForm);
    CHECK(exercised);  // the watcher stopped rank 1 before its read in one of the runs
  }
}

TEST_CASE(
    "shared memory: buffers from allocMem give every collective's right result at 2-4 ranks") {
  // Also with every collective whose posts are up to 16 MiB streamed through the inline slots
  // (inline_post_max=16M): the all-to-alls (and 2-rank allgathers) lend their allocMem inputs
  // (whole, or chunk by chunk with lend_whole=off), every collective with lend=all, none with
  // lend=none; the peers read the lent parts from there instead of from the slots
  // (inline_lend.cc), in place and not.
  const std::vector<std::vector<std::string>> settings = {
      {},
      autoWith("inline_post_max=16M"),
      autoWith("inline_post_max=16M,lend_whole=off"),
      autoWith("inline_post_max=16M,lend=none"),
      autoWith("inline_post_max=16M,lend=all")};
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
    "shared memory: every shipped profile gives every collective's right result at 2 and 4 "
    "ranks, from heap, allocMem and mixed buffers") {
  // Whatever processor runs the tests: each profile's bands (the generic profile's 2-rank
  // members that choose per call between lending and copying, zen5's streaming to 64 MiB, zen2's
  // choosing, the direct forms of zen3 and xeon) with every kind of buffer, the odd ranks'
  // allocMem and the even ranks' heap in the mixed case.
  for (const std::string profile : {"generic", "zen2", "zen3", "zen5", "xeon"}) {
    for (const std::string memory : {"heap", "allocmem", "mixed"}) {
      for (int ranks : {2, 4}) {
        if (ranks == 4 && memory != "mixed") continue;
        for (const auto& result :
             runWithMemory(memory, "collectives", ranks, {"FTCOMM_TUNING=" + profile})) {
          INFO(profile << ", " << memory << " memory, ranks=" << ranks);
          CHECK_THAT(result, Catch::StartsWith("OK"));
        }
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
  for (const std::string lend : {"", ",lend=all"}) {
    for (int ranks : {2, 3, 4}) {
      const std::vector<std::string> env = autoWith("inline_post_max=16M" + lend);
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
  // mixed with lend=all, the allgather and all-to-all stream and the broadcast lends
  // whole. A member that marks the second's rounds read over the first's last round leaves
  // the next collective waiting until its 30-second deadline. Each member's flight recorder must
  // then name the collectives it lent, and those lent whole.
  const std::vector<std::pair<std::string, std::vector<std::string>>> settings = {
      {"allocmem", autoWith("inline_post_max=16M")},
      {"mixed", autoWith("inline_post_max=16M,lend=all")}};
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
  // Under the zen2 profile at 4 ranks, and at 3 to 4 MiB, a broadcast past one slot streams where
  // the others go direct, and an allocMem root lends its buffer (InlineChunking::lends). Mixed:
  // the odd ranks' buffers are allocMem, the even ones' heap, so lent and copied broadcasts
  // alternate. The scenario checks what the recorder names against the plan.
  for (const std::string memory : {"allocmem", "mixed", "heap"}) {
    for (int ranks : {3, 4}) {
      for (const auto& result :
           runWithMemory(memory, "streamed-broadcast", ranks, {"FTCOMM_TUNING=zen2"})) {
        INFO(memory << " memory, ranks=" << ranks);
        CHECK_THAT(result, Catch::StartsWith("OK"));
      }
    }
  }
}

TEST_CASE(
    "shared memory: a 2-rank broadcast's root lends or copies its heap buffer as it measured "
    "faster, and the other member reads it either way") {
  // Under the zen2 profile a 2-rank broadcast past the inline limit streams, and a heap root
  // chooses per call between lending its buffer (read whole with cross-memory attach) and
  // copying it through its slot, plain or around the cache (PostChoice): its first calls of a
  // size go each way twice. lend=all lends every time, lend=none never; around_cache=always
  // copies around the cache when it copies.
  const std::vector<std::pair<std::string, std::string>> settings = {
      {"heap", ""},  {"heap", "lend=all"}, {"heap", "lend=none"}, {"heap", "around_cache=always"},
      {"mixed", ""}, {"allocmem", ""}};
  for (const auto& [memory, lend] : settings) {
    for (const auto& result : runWithMemory(memory, "streamed-broadcast", 2, choosing(lend))) {
      INFO(memory << " memory, " << (lend.empty() ? "chosen" : lend) << ": " << result);
      REQUIRE_THAT(result, Catch::StartsWith("OK"));
      const bool heapLends = memory != "allocmem" && lend != "lend=none";
      CHECK((result.find(" 0 heap roots lent") == std::string::npos) == heapLends);
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
  // allocMem's memory streamed through the slots, and lent (lend=all) where the allgather
  // streams (the zen5 profile), and heap memory. Then the same with broadcasts from the victim
  // (killed-root), which under zen2 stream and, from allocMem, are lent whole.
  const std::vector<std::pair<std::string, std::vector<std::string>>> settings = {
      {"allocmem", {"FTCOMM_TUNING=zen5"}},
      {"allocmem", {"FTCOMM_TUNING=zen5,lend=all"}},
      {"allocmem", {"FTCOMM_TUNING=zen2"}},
      {"heap", {}}};
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

TEST_CASE(
    "shared memory: a 2-rank broadcast's root killed while its heap buffer is lent or copied "
    "fails the other member, never with a wrong block") {
  // The root chooses per call (the zen2 profile), or always lends its heap buffer to be read
  // with cross-memory attach (lend=all), or always copies it (lend=none), or copies it around
  // the cache when it copies (around_cache=always).
  for (const std::string lend : {"", "lend=all", "lend=none", "around_cache=always"}) {
    auto results =
        runWithMemory("heap", "killed-root", 2, choosing(lend), {}, /*keepSurvivors=*/true);
    INFO((lend.empty() ? "chosen" : lend) << ": " << results[0]);
    CHECK_THAT(results[0], Catch::StartsWith("OK failed_at="));
    CHECK(results[0].find("rank 1 failed") != std::string::npos);
    CHECK(results[1] == "missing");
  }
}

TEST_CASE(
    "shared memory: 2-rank collectives whose members choose per call how to post (lent, copied, "
    "copied around the cache) give every right result") {
  // Under the zen2 profile: past the inline limit the broadcast, and from 512 KiB
  // the allgather and all-to-all, stream, and each member whose buffer the other cannot map
  // lends it (read with cross-memory attach) or copies it through its slot, as it measured
  // faster (PostChoice; in an allgather or all-to-all rank 1 takes rank 0's way), and each reads
  // the other's part from where its post says. From 8 KiB every member that copies its input into
  // its slots copies it plain or around the cache, as it measured faster. Every dtype, in place and
  // not; heap buffers chosen, always lent, never lent, copied around the cache, plain, and mixed
  // with allocMem ones.
  const std::vector<std::pair<std::string, std::string>> settings = {
      {"heap", ""},
      {"heap", "lend=all"},
      {"heap", "lend=none"},
      {"heap", "around_cache=always"},
      {"heap", "around_cache=never"},
      {"mixed", ""}};
  for (const auto& [memory, lend] : settings) {
    for (const auto& result : runWithMemory(memory, "collectives", 2, choosing(lend))) {
      INFO(memory << " memory, " << (lend.empty() ? "chosen" : lend));
      CHECK_THAT(result, Catch::StartsWith("OK"));
    }
  }
}

TEST_CASE(
    "shared memory: the members of a 2-rank allgather or all-to-all that may lend take rank 0's "
    "way of posting, and lend whole when it lends") {
  // Both plan with the zen2 profile. Rank 1 asks for copies around the cache only (the scenario
  // sets FTCOMM_TUNING=zen2,around_cache=always on it), is told that rank 0's profile differs,
  // and plans with rank 0's. Following rank 0, both copy at the first 4 calls (rank 0 tries plain
  // copies, then copies around the cache), both lend whole at the 5th and 6th, and then take the
  // same way at every call.
  const auto results = run("agreed-exchanges", 2, {"FTCOMM_TUNING=zen2"});
  REQUIRE(results.size() == 2);
  for (const auto& result : results) {
    CHECK_THAT(result, Catch::Matches("OK allgather CCCCWW[CW]{6} alltoall CCCCWW[CW]{6} "
                                      "profile zen2 [0-9a-f]{16}"));
  }
  CHECK(results[0] == results[1]);
}
