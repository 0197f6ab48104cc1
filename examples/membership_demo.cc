// membership_demo: a job that loses a process and carries on, with membership agreed through
// the rendezvous service. Each process joins (rank from mpirun), runs steps, and when the server
// reports a member failed, calls reconfigure(): every survivor gets the same new epoch, ranks
// renumbered. At the end the survivors meet at a key-value barrier and leave cleanly.
//
//   export FTCOMM_RENDEZVOUS=HOST:PORT FTCOMM_JOB=NAME
//   mpirun --enable-recovery -np 4 membership_demo [--steps N] [--crash-rank R --crash-step S]
//
// The communicator layer builds on exactly this sequence; here it is bare, to show it.
#include <signal.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "rendezvous/client.h"

using namespace ftcomm::rendezvous;
using namespace std::chrono_literals;

namespace {

std::string env(const char* name, const std::string& fallback = "") {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}

std::string describe(const pb::MembershipView& view) {
  std::string text;
  for (const auto& m : view.members()) {
    text += (text.empty() ? "" : " ") + std::to_string(m.member_id()) + "@" + m.process().host() +
            ":" + std::to_string(m.process().pid());
  }
  return "[" + text + "]";
}

int fail(const std::string& what, const ftcomm::Status& status) {
  std::cerr << "membership_demo: " << what << ": " << status.toString() << std::endl;
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 12, crashRank = -1, crashStep = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    int value = std::atoi(argv[i + 1]);
    if (flag == "--steps")
      steps = value;
    else if (flag == "--crash-rank")
      crashRank = value;
    else if (flag == "--crash-step")
      crashStep = value;
    else {
      std::cerr << "usage: membership_demo [--steps N] [--crash-rank R --crash-step S]\n";
      return 2;
    }
  }
  ClientOptions options;
  options.address = env("FTCOMM_RENDEZVOUS");
  options.jobId = env("FTCOMM_JOB", "membership-demo");
  options.token = env("FTCOMM_TOKEN");
  JoinOptions join;
  join.worldSize = std::atoi(env("OMPI_COMM_WORLD_SIZE", env("FTCOMM_WORLD_SIZE", "1")).c_str());
  if (auto rank = env("OMPI_COMM_WORLD_RANK", env("FTCOMM_RANK")); !rank.empty()) {
    join.desiredRank = std::atoi(rank.c_str());
  }
  auto client = RendezvousClient::create(options);
  if (!client.ok()) return fail("rendezvous client", client.status());
  auto joined = (*client)->join(join);
  if (!joined.ok()) return fail("join", joined.status());
  const int firstRank = joined->rank();
  const std::string me = "[world rank " + std::to_string(firstRank) + "] ";
  std::cout << me << "joined epoch " << joined->epoch() << " as rank " << joined->rank() << " of "
            << joined->view().members_size() << std::endl;

  for (int step = 0; step < steps; ++step) {
    if (firstRank == crashRank && step == crashStep) {
      std::cout << me << "crashing at step " << step << " (SIGKILL, no goodbye)" << std::endl;
      ::raise(SIGKILL);
    }
    // A step of "work"; membership events are checked between steps, as a training loop would.
    std::this_thread::sleep_for(150ms);
    auto event = (*client)->nextEvent(0ms);
    if (!event.ok() || event->kind() != pb::Event::MEMBER_FAILED) continue;
    std::cout << me << "step " << step << ": rank " << event->rank() << " of epoch "
              << event->epoch() << " failed (" << event->reason() << ")" << std::endl;
    auto next = (*client)->reconfigure(30s);
    if (!next.ok()) return fail("reconfigure", next.status());
    std::cout << me << "epoch " << next->view.epoch() << ": now rank " << next->rank << " of "
              << next->view.members_size() << " " << describe(next->view) << std::endl;
  }

  // Everyone still here meets at a barrier before leaving, so nobody mistakes a departure for
  // a failure mid-step.
  const std::string prefix = "done/" + std::to_string((*client)->epoch()) + "/";
  if (auto s = (*client)->kvSet(prefix + std::to_string((*client)->rank()), "1"); !s.ok()) {
    return fail("barrier", s);
  }
  std::vector<std::string> keys;
  const auto view = (*client)->view();
  for (int r = 0; r < view.members_size(); ++r) keys.push_back(prefix + std::to_string(r));
  if (auto all = (*client)->kvWait(keys, 30s); !all.ok()) return fail("barrier", all.status());
  std::cout << me << "finished: epoch " << view.epoch() << ", rank " << (*client)->rank() << " of "
            << view.members_size() << " " << describe(view) << std::endl;
  if (auto s = (*client)->leave(); !s.ok()) return fail("leave", s);
  return 0;
}
