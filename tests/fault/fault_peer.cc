// ftcomm-test-fault: one member of a fault-tolerance test, run under mpirun (or, for a
// replacement, started by a survivor). Every member runs an allreduce loop; victims die (or
// stop) at a chosen step; the survivors must see errors, reconfigure in place and go on with
// correct results for the new world size. One line at the end: "RESULT rank=R OK ..." or
// "RESULT rank=R ERROR ...", R being mpirun's rank (a replacement reports under its victim's).
//
//   --scenario kill          the victims SIGKILL themselves right after posting step S's
//                            allreduce (--victims 2 or --victims 0,3)
//   --scenario kill-in-reconfigure   victim 1 dies at step S; victim 2 dies while it is in the
//                            reconfigure that follows
//   --scenario stop          the victim SIGSTOPs itself at step S; a child process of it sends
//                            SIGCONT 8 s later; the survivors find it through its lease, and it
//                            must then find itself fenced
//   --scenario replace       the victim dies at step S; once the survivors reconfigured, rank 0
//                            starts a replacement, which the next reconfigure admits and which
//                            catches up through shareState
//   --scenario stale         rank 0 sends rank 1 a message that is never received; a victim
//                            dies; after the reconfigure the same tag carries a new message,
//                            which rank 1 must get instead of the stale one
//   --scenario revoke        the victim calls revoke() at step S instead of dying; everyone
//                            reconfigures at the same size
//   --scenario split         members also hold a split child (color rank % 2); after the
//                            reconfigure the old child must refuse with Revoked, and a new split
//                            of the reconfigured world must work
//   --scenario injected      no fault of the test's own: FTCOMM_FAULT (set by the test) acts;
//                            at the end the new rank 0 SIGKILLs the victims still alive (hung)
//   (FTCOMM_MIN_WORLD_SIZE set by the test: the survivors' reconfigure must refuse)
//   --steps N (default 30), --step S (default 10)
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "ftcomm/communicator.h"
#include "loop_member.h"

extern char** environ;

using namespace ftcomm;
using namespace ftcomm::testing;
using namespace std::chrono_literals;

namespace {

struct Args {
  std::string scenario = "kill";
  std::vector<int> victims = {1};
  int steps = 30;
  int step = 10;
  bool replacement = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--scenario") {
      a.scenario = value;
    } else if (flag == "--victims") {
      a.victims.clear();
      for (std::size_t at = 0; at < value.size();) {
        const std::size_t comma = value.find(',', at);
        a.victims.push_back(std::stoi(value.substr(at, comma - at)));
        at = comma == std::string::npos ? value.size() : comma + 1;
      }
    } else if (flag == "--steps") {
      a.steps = std::stoi(value);
    } else if (flag == "--step") {
      a.step = std::stoi(value);
    } else if (flag == "--replacement") {
      a.replacement = value == "1";
    }
  }
  return a;
}

// Starts this program again as a replacement; it reports under `label`.
pid_t startReplacement(const char* self, const Args& a, int label) {
  std::vector<std::string> args = {
      self,     "--scenario",           a.scenario,      "--steps", std::to_string(a.steps),
      "--step", std::to_string(a.step), "--replacement", "1"};
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (entry.rfind("OMPI_COMM_WORLD_RANK=", 0) == 0) continue;
    env.push_back(entry);
  }
  env.push_back("OMPI_COMM_WORLD_RANK=" + std::to_string(label));
  env.push_back("FTCOMM_REPLACEMENT=1");
  std::vector<char*> envp;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  if (::posix_spawn(&pid, self, nullptr, nullptr, argv.data(), envp.data()) != 0) return -1;
  return pid;
}

// The stale-message check of --scenario stale, before and after the reconfigure.
std::string staleBefore(Communicator& c, std::int32_t* sent) {
  if (c.rank() != 0) return "";
  *sent = 111;
  // Never received in this epoch; the Work is dropped, the message stays in flight.
  (void)c.send(sent, 1, DataType::kInt32, 1, 5);
  return "";
}

// An allreduce of ones over a child gives its size.
std::string childSum(Communicator& child) {
  std::int32_t one = 1, sum = 0;
  if (Status s = child.allReduce(&one, &sum, 1, DataType::kInt32, ReduceOp::kSum).wait(); !s.ok())
    return s.toString();
  if (sum != child.size())
    return "sum " + std::to_string(sum) + " != " + std::to_string(child.size());
  return "";
}

std::string staleAfter(Communicator& c) {
  std::int32_t fresh = 222, got = 0;
  if (c.rank() == 0) {
    if (Status s = c.send(&fresh, 1, DataType::kInt32, 1, 5).wait(); !s.ok())
      return "send in the new epoch: " + s.toString();
  } else if (c.rank() == 1) {
    if (Status s = c.recv(&got, 1, DataType::kInt32, 0, 5).wait(); !s.ok())
      return "recv in the new epoch: " + s.toString();
    if (got != 222) return "the new epoch's receive got " + std::to_string(got);
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  const char* rankText = std::getenv("OMPI_COMM_WORLD_RANK");
  const int launchRank = rankText ? std::atoi(rankText) : -1;
  auto finish = [&](const std::string& line) {
    std::cout << "RESULT rank=" << launchRank << " " << line << std::endl;
    return line.rfind("OK", 0) == 0 ? 0 : 1;
  };
  auto created = Communicator::create();
  if (!created.ok()) return finish("ERROR create: " + created.status().toString());
  Communicator& c = **created;

  // Every member's pid by launch rank, to clean up hung victims at the end (one host).
  std::vector<std::int64_t> pids(static_cast<std::size_t>(c.size()), 0);
  const std::int64_t myPid = ::getpid();
  if (!a.replacement) {
    if (Status s = c.allGather(&myPid, pids.data(), 1, DataType::kInt64).wait(); !s.ok())
      return finish("ERROR pids: " + s.toString());
  }
  LoopMember member(c, a.replacement ? 1000 : launchRank + 1);
  if (a.replacement) {
    if (!c.joinedAsReplacement()) return finish("ERROR not admitted as a replacement");
    if (auto e = member.catchUp(); !e.empty()) return finish("ERROR catch-up: " + e);
  }
  const bool victim = !a.replacement &&
                      std::find(a.victims.begin(), a.victims.end(), launchRank) != a.victims.end();
  const bool secondVictim = a.scenario == "kill-in-reconfigure" && launchRank == a.victims.back();
  std::int32_t staleValue = 0;
  if (a.scenario == "stale") staleBefore(c, &staleValue);
  pid_t replacement = -1;

  LoopHooks hooks;
  std::unique_ptr<Communicator> child;
  bool revoked = false;
  if (a.scenario == "split") {
    auto made = c.split(c.rank() % 2, c.rank());
    if (!made.ok()) return finish("ERROR split: " + made.status().toString());
    child = std::move(made).value();
    if (auto e = childSum(*child); !e.empty()) return finish("ERROR first child: " + e);
  }
  hooks.atStep = [&](int step) {
    if (step != a.step || !victim || secondVictim) return;
    if (a.scenario == "revoke") {
      if (!revoked) (void)c.revoke("the test revokes at step " + std::to_string(step));
      revoked = true;  // the step runs again after the reconfigure
      return;
    }
    if (a.scenario == "stop") {
      if (::fork() == 0) {
        std::this_thread::sleep_for(8s);
        ::kill(::getppid(), SIGCONT);
        ::_exit(0);
      }
      ::raise(SIGSTOP);
      return;  // woken: the loop goes on and must find itself fenced
    }
  };
  hooks.afterPost = [&](int step) {
    if (step == a.step && victim && !secondVictim && a.scenario != "stop" && a.scenario != "revoke")
      ::raise(SIGKILL);
  };
  hooks.beforeReconfigure = [&] {
    // Dies a few milliseconds into its reconfigure: in the agreement, or in the new epoch's
    // set-up, whichever it has reached.
    if (secondVictim) {
      std::thread([] {
        std::this_thread::sleep_for(5ms);
        ::raise(SIGKILL);
      }).detach();
    }
  };
  bool replacing = a.scenario == "replace" && !a.replacement;
  hooks.afterReconfigure = [&](const Reconfiguration& r) -> std::string {
    if (secondVictim) std::this_thread::sleep_for(60s);  // the SIGKILL comes first
    if (a.scenario == "stale") return staleAfter(c);
    if (a.scenario == "split" && child) {
      // The old child belonged to the epoch that was left: it refuses, and says what to do.
      std::int32_t x = 1;
      Status old = child->allReduce(&x, &x, 1, DataType::kInt32, ReduceOp::kSum).wait();
      if (old.code() != StatusCode::kRevoked ||
          old.message().find("split the reconfigured parent again") == std::string::npos)
        return "the old child gave " + old.toString();
      auto made = c.split(c.rank() % 2, c.rank());
      if (!made.ok()) return "split after reconfigure: " + made.status().toString();
      child = std::move(made).value();
      if (auto e = childSum(*child); !e.empty()) return "new child: " + e;
    }
    if (replacing && r.admitted.empty()) {
      replacing = false;
      if (c.rank() == 0) {
        replacement = startReplacement(argv[0], a, a.victims.front());
        if (replacement < 0) return "could not start a replacement";
      }
      // Everyone holds the step until the replacement waits, so that it is admitted mid-run.
      const auto deadline = std::chrono::steady_clock::now() + 60s;
      while (c.replacementsWaiting() == 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(10ms);
      }
      if (c.replacementsWaiting() == 0) return "no replacement showed up within 60 s";
    }
    return "";
  };
  const std::string outcome = member.run(a.steps, hooks);
  if (a.scenario == "injected" && c.rank() == 0) {
    for (int v : a.victims) {
      if (v >= 0 && v < static_cast<int>(pids.size())) ::kill(static_cast<pid_t>(pids[v]), SIGKILL);
    }
  }
  if (replacement > 0) ::waitpid(replacement, nullptr, 0);
  if (victim && a.scenario == "stop") {
    // Woken after the others declared it dead: it must be fenced, never back in their epoch.
    return finish(outcome.rfind("REFUSED", 0) == 0 ? "OK fenced: " + outcome : "ERROR " + outcome);
  }
  return finish(outcome);
}
