// `ftcomm-run --launch agents`: one agent per host (rank_agent.h) instead of mpirun, so that
// losing a whole host, its agent included, ends nothing but that host's ranks. OpenMPI 4.1's
// mpirun aborts the job when it loses a daemon and cannot add processes to a running job; here
// the launcher only watches, and the rendezvous decides who is in the job.
//
// Each agent is reached through a remote shell: ssh for real hosts, the simulated hosts'
// --host-agent, or /bin/sh on this host. Its command line carries the job's environment (every
// FTCOMM_* and UCX_* variable), as mpirun's -x does. The launcher reads each agent's standard
// error, passes the ranks' own lines on, and keeps its reports; it holds each agent's standard
// input open, and closing it is the order to stop.
//
// When an agent ends before reporting all its ranks, its host is lost: those ranks count as
// "lost", a failure the job survives. If a spare host is left, the launcher starts as many
// replacements there (FTCOMM_REPLACEMENT=1), which the job admits as it grows. They get new
// launch ranks, numbered on from the first launch's, so that no two processes share a launch
// rank in flight-recorder dumps or fault specs. A rank's error exit (not 0, not 75) ends the job,
// as under mpirun.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace ftcomm::launcher {

// How to run a command line on one host: `shell` followed by the line as its last word; and
// how many ranks the first launch starts there (0: none, a spare).
struct AgentHost {
  std::string name;
  std::vector<std::string> shell;
  int ranks = 0;
};

class AgentLaunch {
 public:
  // `agent`: this program's path on the hosts; `program`: what each rank runs. Each host gets
  // its `ranks`, numbered in the hosts' order; the last `spares` hosts stand by.
  AgentLaunch(std::vector<AgentHost> hosts, int spares, std::string agent,
              std::vector<std::string> program);

  // The agents send their hosts' dumps of the job at their end, and they are written to
  // `folder` (hosts that share no filesystem with this one).
  void gatherDumpsInto(std::string folder) { dumpFolder_ = std::move(folder); }
  ~AgentLaunch();

  // Starts the agents of the first hosts; false (with a message) if one cannot be started.
  bool start();

  // Waits up to `timeoutMs` for output or an ending, and deals with it. False once every agent
  // has ended.
  bool step(int timeoutMs);

  // Ends the job: every agent is told to stop its ranks; one still running 15 s later (its ranks
  // get 5 s) is killed.
  void stop(const std::string& why);

  // "ranks 0:exit 0 1:lost ...", and the replacements' endings when there were any.
  std::string summary() const;
  // 0 when every rank ended in a way the job survives; else the first error exit; 1 if no rank
  // ran or an agent of the first launch never started.
  int result() const;

 private:
  struct Agent {
    int host = -1;
    int first = 0;
    int count = 0;
    bool replacement = false;
    pid_t pid = -1;
    int input = -1;   // our end of its standard input
    int output = -1;  // our end of its standard error
    std::string pending;
    bool started = false;      // it said so: the remote shell reached the host
    bool outputEnded = false;  // its standard error reached its end
    bool ended = false;
  };
  struct Ending {
    std::string text;  // "exit 0", "signal 9", "lost"
    bool bad = false;
    int code = 0;
  };

  bool startAgent(int host, int first, int count, bool replacement);
  void readOutput(Agent& agent, bool toEnd);
  void takeLine(Agent& agent, const std::string& line);
  void agentEnded(Agent& agent, int status);
  std::string commandLine(const Agent& agent) const;

  std::vector<AgentHost> hosts_;
  int spares_;
  int worldSize_;
  std::string agentPath_;
  std::vector<std::string> program_;
  std::vector<Agent> agents_;
  std::vector<Ending> endings_;  // by launch rank: the first launch's, then replacements'
  int nextSpare_;
  bool stopping_ = false;
  // Past it, agents still running after stop() (a remote shell that hangs) are killed.
  std::chrono::steady_clock::time_point killAgentsAt_{};
  bool unreachable_ = false;  // an agent of the first launch never started
  std::string dumpFolder_;    // where shipped dumps go; empty: the agents ship none
};

}  // namespace ftcomm::launcher
