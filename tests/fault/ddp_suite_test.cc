// The failure-injection suite: examples/ddp_train under ftcomm-run (real mpirun, a real
// rendezvous server), one row of the table per scenario: the faults (FTCOMM_FAULT specs), what
// the job must end with, and the rank ftcomm-fr analyze must name. Sequence numbers follow
// ddp_train.cc: step k's gradient allreduce is 3+4k, its broadcast 4+4k, its all-to-all 5+4k;
// the split at start is 2; reconfigure's is the epoch being left.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "child_process.h"
#include "rendezvous_server_process.h"
#include "temp_dir.h"

using namespace ftcomm::testing;
using namespace std::chrono_literals;

namespace {

struct Row {
  std::string name;
  int ranks;
  std::vector<std::string> faults;
  std::string worldSizes;  // the history ddp_train must end with
  int culprit;             // the rank the analysis must name; -1: it must find nothing
  std::vector<std::string> env = {};
  int nodes = 0;             // simulated hosts (ftcomm-run --nodes); 0: one host
  std::string endings = {};  // what ftcomm-run's summary must say of the ranks ("": no check)
  std::vector<std::string> launcher = {};  // more ftcomm-run flags (--launch agents, --spares)
};

const std::vector<Row> kTable = {
    {"kill during allreduce", 4, {"rank=2,op=allreduce,seq=43,action=kill"}, "4>3", 2},
    {"kill during broadcast", 4, {"rank=1,op=broadcast,seq=44,action=kill"}, "4>3", 1},
    {"kill during alltoall", 4, {"rank=3,op=alltoall,seq=45,action=kill"}, "4>3", 3},
    {"kill during split", 4, {"rank=0,op=split,seq=2,action=kill"}, "4>3", 0},
    {"kill during reconfigure",
     5,
     {"rank=1,op=allreduce,seq=43,action=kill", "rank=3,op=reconfigure,seq=1,action=kill"},
     "5>3",
     1},
    {"two kills at once",
     5,
     {"rank=1,op=allreduce,seq=43,action=kill", "rank=4,op=allreduce,seq=43,action=kill"},
     "5>3",
     4},
    // The hung rank heartbeats on, so the agreement round's deadline is what leaves it out; a
    // survivor starved past that deadline (tests run 2 at a time on 2 cores) would be left out
    // too, so the round gets 5 s.
    {"a hung rank",
     4,
     {"rank=2,op=allreduce,seq=43,action=hang"},
     "4>3",
     2,
     {"FTCOMM_TIMEOUT_MS=2000", "FTCOMM_AGREEMENT_TIMEOUT_MS=5000"}},
    {"a slow rank (no false failure)",
     4,
     {"rank=1,op=allreduce,seq=43,action=delay:700"},
     "4",
     -1,
     {"FTCOMM_TIMEOUT_MS=5000"}},
    {"a dropped connection", 4, {"rank=3,op=allreduce,seq=43,action=drop-conn"}, "4>3", 3},
    // Host 1 of 2 (ranks 2 and 3) cut off: its data link goes down while the control link (and
    // so mpirun) stays up. Its ranks fence themselves (exit 75), also when the link comes back
    // after the rest of the job has gone on; a cut shorter than the lease costs nobody.
    {"a host's data link cut",
     4,
     {"rank=3,op=allreduce,seq=43,action=cut-link"},
     "4>2",
     2,
     {},
     2,
     "ranks 0:exit 0 1:exit 0 2:exit 75 3:exit 75"},
    {"a host's data link cut, back after the lease",
     4,
     {"rank=3,op=allreduce,seq=43,action=cut-link:2500"},
     "4>2",
     2,
     {},
     2,
     "ranks 0:exit 0 1:exit 0 2:exit 75 3:exit 75"},
    {"a host's data link cut for less than a lease (no false failure)",
     4,
     {"rank=3,op=allreduce,seq=43,action=cut-link:800"},
     "4",
     -1,
     {},
     2,
     "ranks 0:exit 0 1:exit 0 2:exit 0 3:exit 0"},
    // The rendezvous's own data link cut for less than a lease: heartbeats and the watch stream
    // stall, and nobody is declared dead.
    {"the rendezvous's host cut off for less than a lease (no false failure)",
     4,
     {"rank=0,op=allreduce,seq=43,action=cut-rendezvous:700"},
     "4",
     -1,
     {},
     2,
     "ranks 0:exit 0 1:exit 0 2:exit 0 3:exit 0"},
    {"a silent host: link cut, then its ranks killed",
     4,
     {"rank=3,op=allreduce,seq=43,action=silent"},
     "4>2",
     2,
     {},
     2,
     "ranks 0:exit 0 1:exit 0 2:signal 9 3:signal 9"},
    // A whole host lost, its launcher daemon with it: mpirun 4.1 would abort the job, so these
    // rows launch one agent per host. The lost ranks report nothing: ftcomm-run counts them lost.
    {"a whole host lost, its agent included (one agent per host)",
     4,
     {"rank=3,op=allreduce,seq=43,action=lose-host"},
     "4>2",
     2,
     {},
     2,
     "ranks 0:exit 0 1:exit 0 2:lost 3:lost",
     {"--launch", "agents"}},
    {"kill during allreduce, one agent on one host",
     4,
     {"rank=2,op=allreduce,seq=43,action=kill"},
     "4>3",
     2,
     {},
     0,
     "ranks 0:exit 0 1:exit 0 2:signal 9 3:exit 0",
     {"--launch", "agents"}},
};

struct Outcome {
  std::string transcript;
  std::string analysis;
  std::string launcher;  // ftcomm-run's stderr: how each rank ended
  int exitCode = -1;
};

// `rendezvous`: a server of the test's (else ftcomm-run starts its own), and the job's name.
// `during`: runs while the job does, with the launcher's output.
Outcome runRow(const Row& row, const std::string& rendezvous = "",
               const std::function<void(LineProcess&)>& during = nullptr,
               const std::vector<std::string>& trainArgs = {"--steps", "30", "--step-ms", "0"}) {
  TempDir dir;
  std::vector<std::string> argv = {"/usr/bin/env", "FTCOMM_FR_DIR=" + dir.path.string(),
                                   "UCX_LOG_LEVEL=error"};
  argv.insert(argv.end(), row.env.begin(), row.env.end());
  argv.push_back(binary("ftcomm-run"));
  argv.insert(argv.end(), row.launcher.begin(), row.launcher.end());
  argv.push_back("-np");
  argv.push_back(std::to_string(row.ranks));
  if (row.nodes > 0) {
    argv.push_back("--nodes");
    argv.push_back(std::to_string(row.nodes));
  }
  if (!rendezvous.empty()) {
    for (const std::string& a : {std::string("--rendezvous"), rendezvous, std::string("--job"),
                                 std::string("suite-job")}) {
      argv.push_back(a);
    }
  }
  for (const auto& f : row.faults) {
    argv.push_back("--fault");
    argv.push_back(f);
  }
  argv.push_back("--");
  argv.push_back(binary("ddp_train"));
  argv.insert(argv.end(), trainArgs.begin(), trainArgs.end());
  Outcome out;
  {
    LineProcess run(argv, (dir.path / "stderr.log").string());
    if (during) during(run);
    (void)run.waitFor("no line starts like this", 180s);
    auto status = run.child().waitExit(30s);
    out.exitCode = status && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
    std::ifstream log(dir.path / "stderr.log");
    out.launcher.assign(std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>());
    out.transcript = run.transcript();
  }
  LineProcess fr({binary("ftcomm-fr"), "analyze", dir.path.string()});
  (void)fr.waitFor("no line starts like this", 60s);
  out.analysis = fr.transcript();
  return out;
}

// The analysis names `rank`: as failed, as a likely culprit, or among the missing dumps.
bool namesRank(const std::string& analysis, int rank) {
  const std::string r = std::to_string(rank);
  if (analysis.find("rank " + r + " failed") != std::string::npos) return true;
  for (const std::string lead : {"likely culprits): rank", "missing dumps: rank", "fenced: rank"}) {
    const auto at = analysis.find(lead);
    if (at == std::string::npos) continue;
    std::string line = analysis.substr(at, analysis.find('\n', at) - at);
    line = line.substr(line.find(':') + 1);
    for (char& c : line) {
      if (c == '(') c = '\0';
    }
    if ((" " + std::string(line.c_str()) + " ").find(" " + r + " ") != std::string::npos)
      return true;
  }
  return false;
}

double fieldValue(const std::string& line, const std::string& key) {
  const std::string v = field(line, key);
  return v.empty() ? -1 : std::stod(v);
}

}  // namespace

TEST_CASE("failure-injection suite: ddp_train under ftcomm-run survives every row of the table") {
  for (const Row& row : kTable) {
    SECTION(row.name) {
      const Outcome out = runRow(row);
      INFO(row.name << "\n" << out.transcript << "\n" << out.analysis);
      if (row.nodes > 0 && out.exitCode == 77) {
        WARN("skipped: ftcomm-run cannot make simulated hosts here");
        return;
      }
      CHECK(out.exitCode == 0);
      if (!row.endings.empty()) CHECK_THAT(out.launcher, Catch::Contains(row.endings));
      const auto at = out.transcript.find("FINAL ");
      REQUIRE(at != std::string::npos);
      const std::string final = out.transcript.substr(at, out.transcript.find('\n', at) - at);
      CHECK(field(final, "world_sizes") == row.worldSizes);
      CHECK(field(final, "replicas_identical") == "yes");
      CHECK(fieldValue(final, "loss") < fieldValue(final, "first_loss"));
      if (row.culprit >= 0) {
        CHECK(namesRank(out.analysis, row.culprit));
      } else {
        CHECK_THAT(out.analysis, !Catch::Contains("first incomplete collective"));
      }
    }
  }
}

TEST_CASE("failure-injection suite: the rendezvous server restarted mid-training costs no rank") {
  RendezvousServerProcess server;
  const Row row{"server restart", 4, {}, "4", -1};
  const Outcome out = runRow(row, server.address(),
                             [&](LineProcess& run) {
                               (void)run.waitFor("step   5", 60s);
                               server.restart();
                             },
                             {"--steps", "60", "--step-ms", "30"});
  INFO(out.transcript << "\n" << out.analysis << "\n" << server.log());
  CHECK(out.exitCode == 0);
  CHECK_THAT(out.transcript,
             Catch::Contains("world_sizes=4 ") && Catch::Contains("replicas_identical=yes"));
}

TEST_CASE("failure-injection suite: a replacement joins mid-training and gets the model") {
  RendezvousServerProcess server;
  const Row row{"replacement", 4, {"rank=2,op=allreduce,seq=43,action=kill"}, "4>3>4", 2};
  std::unique_ptr<LineProcess> replacement;
  const Outcome out =
      runRow(row, server.address(),
             [&](LineProcess& run) {
               (void)run.waitFor("reconfigured:", 60s);
               replacement = std::make_unique<LineProcess>(std::vector<std::string>{
                   "/usr/bin/env", "FTCOMM_RENDEZVOUS=" + server.address(), "FTCOMM_JOB=suite-job",
                   "FTCOMM_REPLACEMENT=1", "UCX_LOG_LEVEL=error", binary("ddp_train"), "--steps",
                   "60", "--step-ms", "30"});
             },
             {"--steps", "60", "--step-ms", "30"});
  INFO(out.transcript << "\n" << out.analysis);
  CHECK(out.exitCode == 0);
  CHECK_THAT(out.transcript,
             Catch::Contains("world_sizes=4>3>4 ") && Catch::Contains("replicas_identical=yes"));
  REQUIRE(replacement);
  CHECK(replacement->child().waitExit(60s) == 0);
}

TEST_CASE(
    "failure-injection suite: a whole host lost is replaced by a spare host, whose ranks join "
    "as replacements") {
  const Row row{"host replaced",
                4,
                {"rank=3,op=allreduce,seq=43,action=lose-host"},
                "4>2>4",
                2,
                {},
                2,
                "ranks 0:exit 0 1:exit 0 2:lost 3:lost; replacements 4:exit 0 5:exit 0",
                {"--launch", "agents", "--spares", "1"}};
  const Outcome out = runRow(row, "", nullptr, {"--steps", "60", "--step-ms", "30"});
  INFO(out.transcript << "\n" << out.launcher << "\n" << out.analysis);
  if (out.exitCode == 77) {
    WARN("skipped: ftcomm-run cannot make simulated hosts here");
    return;
  }
  CHECK(out.exitCode == 0);
  CHECK_THAT(out.launcher, Catch::Contains(row.endings));
  CHECK_THAT(out.launcher, Catch::Contains("host 2: agent started for ranks 4..5 (replacements)"));
  // The two replacements may be admitted at one step boundary or at two, or already in the
  // round that leaves the lost host out, when they reach the rendezvous before it ends.
  CHECK_THAT(out.transcript,
             (Catch::Contains("world_sizes=4>2>4 ") || Catch::Contains("world_sizes=4>2>3>4 ") ||
              Catch::Contains("world_sizes=4>4 ")) &&
                 Catch::Contains("replicas_identical=yes"));
  CHECK(namesRank(out.analysis, 2));
}

TEST_CASE(
    "failure-injection suite: under mpirun a whole host lost ends the job, and ftcomm-run fails "
    "it") {
  // OpenMPI 4.1's mpirun aborts when it loses a daemon: the row that --launch agents survives.
  const Row row{
      "host lost under mpirun", 4, {"rank=3,op=allreduce,seq=43,action=lose-host"}, "", -1, {}, 2};
  const Outcome out = runRow(row, "", nullptr, {"--steps", "200", "--step-ms", "30"});
  INFO(out.launcher);
  if (out.exitCode == 77) {
    WARN("skipped: ftcomm-run cannot make simulated hosts here");
    return;
  }
  CHECK(out.exitCode != 0);
  CHECK_THAT(out.launcher, Catch::Contains("mpirun ended the job itself"));
  CHECK_THAT(out.transcript, !Catch::Contains("FINAL "));
}

TEST_CASE(
    "ftcomm-run: bad usage exits 2, --help 0, and a rank's non-zero exit code becomes the "
    "job's") {
  auto exitOf = [](std::vector<std::string> args) {
    args.insert(args.begin(), binary("ftcomm-run"));
    LineProcess run(args);
    (void)run.waitFor("no line starts like this", 120s);
    auto status = run.child().waitExit(30s);
    return status && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
  };
  CHECK(exitOf({"-np", "0", "--", "true"}) == 2);
  CHECK(exitOf({"-np", "2"}) == 2);
  CHECK(exitOf({"-np", "2", "--bogus", "--", "true"}) == 2);
  CHECK(exitOf({"-np", "2", "--fault", "a;b", "--", "true"}) == 2);
  CHECK(exitOf({"-np", "2", "--", "sh", "-c", "exit 0"}) == 0);
  CHECK(exitOf({"-np", "2", "--", "sh", "-c", "exit 3"}) == 3);
  CHECK(exitOf({"-np", "2", "--", "/nonexistent/program"}) == 127);
  // The same with one agent per host; a rank's error ends the others (they would sleep on).
  CHECK(exitOf({"--launch", "agents", "-np", "2", "--", "sh", "-c", "exit 0"}) == 0);
  CHECK(exitOf({"--launch", "agents", "-np", "2", "--", "sh", "-c",
                "[ $FTCOMM_RANK = 1 ] && exit 3; exec sleep 600"}) == 3);
  CHECK(exitOf({"--launch", "agents", "-np", "2", "--", "/nonexistent/program"}) == 127);
  CHECK(exitOf({"--launch", "bogus", "-np", "2", "--", "true"}) == 2);
  CHECK(exitOf({"--spares", "1", "--nodes", "2", "-np", "2", "--", "true"}) == 2);
  CHECK(exitOf({"--launch", "agents", "--spares", "1", "-np", "2", "--", "true"}) == 2);
  {
    // A hostfile's slots: malformed, or fewer than -np.
    TempDir dir;
    std::ofstream(dir.path / "bad") << "node1 slots=many\n";
    std::ofstream(dir.path / "small") << "node1 slots=1\nnode2 slots=1\n";
    for (const char* file : {"bad", "small"}) {
      CHECK(exitOf({"--launch", "agents", "--hostfile", (dir.path / file).string(), "--rendezvous",
                    "127.0.0.1:1", "-np", "3", "--", "true"}) == 2);
    }
  }
  {
    // A host the remote shell cannot reach ends the job at once, naming the host.
    TempDir dir;
    std::ofstream(dir.path / "hosts") << "unreachable-host slots=1\n";
    LineProcess run(
        {binary("ftcomm-run"), "--launch", "agents", "--hostfile", (dir.path / "hosts").string(),
         "--rsh", "/bin/false", "--rendezvous", "127.0.0.1:1", "-np", "1", "--", "true"},
        (dir.path / "err").string());
    (void)run.waitFor("no line starts like this", 60s);
    CHECK(run.child().waitExit(30s) == 1 << 8);
    std::ifstream err(dir.path / "err");
    const std::string text((std::istreambuf_iterator<char>(err)), {});
    CHECK_THAT(text, Catch::Contains("the agent for host unreachable-host did not start"));
  }
  {
    // SIGTERM ends a job of agents: its ranks are stopped, and the job is not reported done.
    LineProcess run({binary("ftcomm-run"), "--launch", "agents", "-np", "2", "--", "sh", "-c",
                     "echo up; exec sleep 600"});
    REQUIRE(run.waitFor("up", 60s).has_value());
    REQUIRE(run.waitFor("up", 60s).has_value());
    run.child().signal(SIGTERM);
    const auto status = run.child().waitExit(30s);
    REQUIRE(status.has_value());
    CHECK((WIFEXITED(*status) && WEXITSTATUS(*status) == 128 + SIGTERM));
  }

  // --help: the usage on standard output, exit 0, nothing started.
  LineProcess help({binary("ftcomm-run"), "--help"});
  CHECK(help.waitFor("usage: ftcomm-run -np N", 30s).has_value());
  CHECK(help.child().waitExit(30s) == 0);
}
