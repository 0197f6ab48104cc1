// The C++ client of the rendezvous service, used by communicators (and the tests and demo).
//
// Every call has a deadline. Calls ride out a server restart: the channel reconnects by itself
// (short backoff) and a call that fails UNAVAILABLE is retried until its deadline; every RPC is
// safe to retry (Join by instance id, Reconfigure by epoch). Given several replicas
// ("a:1,b:2", sharing an etcd store), a call that fails UNAVAILABLE moves on to the next one;
// a standby's answer names the replica that serves, and the client keeps going round. After join()
// the client keeps the member alive by itself: a heartbeat thread renews the lease and a watch
// thread holds the Watch stream open, reopening it after a restart (resuming after the last event
// it saw, Event.revision), and delivers membership events to the onEvent callback or, without one,
// to a queue read by nextEvent(). Once the server says this member is expelled, or has answered no
// heartbeat for 1.5 leases (it has then declared the member failed: a cut link), every call fails
// fast with that status (fencing).
//
// Thread-safety: all methods may be called from any thread. onEvent runs on the watch thread
// and must not block for long.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ftcomm/proto/rendezvous.grpc.pb.h"
#include "ftcomm/status.h"
#include "rendezvous/tls.h"

namespace ftcomm::rendezvous {

namespace pb = ::ftcomm::rendezvous::v1;

struct ClientOptions {
  std::string address;  // HOST:PORT of the server, or of its replicas: "HOST:PORT,HOST:PORT"
  ClientTls tls;        // empty: plaintext
  std::string jobId;
  std::string token;
  // Deadline of each call that does not wait by design (KvSet, Heartbeat, ...), retries included.
  std::chrono::milliseconds callTimeout{10000};
  std::function<void(const pb::Event&)> onEvent;  // null: events are queued for nextEvent()
  // Called once, on a background thread or the caller's, when the server says this member is
  // expelled (declared failed): from then on every call fails with that status.
  std::function<void(const Status&)> onExpelled;
};

// A member's epoch: the full membership (every member's ProcessInfo) and its own rank.
struct EpochView {
  pb::MembershipView view;
  int rank = -1;
};

struct JoinOptions {
  int worldSize = 0;
  std::optional<int> desiredRank;
  std::string host;     // empty: this machine's host name
  std::string address;  // the data network's address to advertise (may be empty)
  std::string transportAddress;
  std::chrono::milliseconds timeout{60000};
};

class RendezvousClient {
 public:
  static Result<std::unique_ptr<RendezvousClient>> create(ClientOptions options);
  ~RendezvousClient();  // stops the background threads; does not Leave
  RendezvousClient(const RendezvousClient&) = delete;
  RendezvousClient& operator=(const RendezvousClient&) = delete;

  // Joins and waits for the first epoch (or, for a running job, for admission); then starts
  // heartbeats and the watch stream.
  Result<pb::JoinResponse> join(const JoinOptions& options);

  Status kvSet(const std::string& key, const std::string& value);
  Result<std::optional<std::string>> kvGet(const std::string& key);
  // The values of `keys`, in order, once all exist.
  Result<std::vector<std::string>> kvWait(const std::vector<std::string>& keys,
                                          std::chrono::milliseconds timeout);

  // c10d's atomic updates (KvUpdateRequest): the value after the update and whether the key
  // exists. An add is not repeated after a lost connection, as it may have been applied.
  Result<pb::KvUpdateResponse> kvUpdate(pb::KvUpdateRequest request);
  Result<std::uint64_t> kvCount(const std::string& prefix);

  // In the member's current epoch.
  Status reportFailure(int suspectRank, const std::string& reason);
  Status revoke(const std::string& reason);
  // Waits until the next epoch is agreed; the client's epoch and rank follow it.
  Result<EpochView> reconfigure(std::chrono::milliseconds timeout);
  // Leaves the job for good. The heartbeats stop first, so that none reaches the server after
  // the Leave (its "has left" answer would read as a verdict). Once done, later calls return Ok
  // at once; any thread.
  Status leave();
  // Fault injection (drop-conn): closes the watch stream as a lost connection would, so the
  // server declares this member failed; the client learns its verdict when it reconnects.
  void dropWatchStream();

  // The next membership event (only when no onEvent callback was given).
  Result<pb::Event> nextEvent(std::chrono::milliseconds timeout);

  // The membership of the member's current epoch, with every member's ProcessInfo.
  pb::MembershipView view() const;
  std::uint64_t memberId() const { return memberId_.load(); }
  std::uint64_t epoch() const { return epoch_.load(); }
  int rank() const { return rank_.load(); }
  const std::string& instanceId() const { return instanceId_; }
  // Ok while this member is in good standing; the server's verdict once it was expelled.
  Status standing() const;

 private:
  using Clock = std::chrono::steady_clock;

  RendezvousClient(ClientOptions options, std::vector<std::string> addresses,
                   std::shared_ptr<grpc::ChannelCredentials> credentials);

  struct Replica {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<pb::Rendezvous::Stub> stub;
  };
  // The replica calls go to now, and its place in the list (for moveOn).
  std::pair<Replica*, std::size_t> current();
  // After a call to the replica at `at` failed UNAVAILABLE: the next one, unless another thread
  // has moved on already.
  void moveOn(std::size_t at);

  pb::Caller caller() const;
  template <typename Request, typename Response, typename Rpc>
  Status invoke(const char* name, Rpc rpc, Request& request, Response* response,
                Clock::time_point deadline, bool waitsByDesign, bool repeatable = true);
  Status noteVerdict(const Status& status);
  // Records the server's verdict (the first one wins) and tells onExpelled.
  void expel(const Status& why);
  void startBackgroundThreads(std::chrono::milliseconds lease);
  void heartbeatLoop(std::chrono::milliseconds lease);
  void watchLoop();
  void deliver(const pb::Event& event);
  bool sleepUnlessStopping(std::chrono::milliseconds duration);

  ClientOptions options_;
  std::string instanceId_;
  std::vector<Replica> replicas_;
  std::atomic<std::size_t> current_{0};
  std::atomic<std::uint64_t> lastRevision_{0};  // of the last event delivered

  std::atomic<std::uint64_t> memberId_{0};
  std::atomic<std::uint64_t> epoch_{0};
  std::atomic<int> rank_{-1};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool leaving_ = false;  // leave() began: the heartbeat thread ends
  bool left_ = false;     // leave() succeeded
  std::mutex leaveMu_;    // one leave() at a time
  Status standing_;
  pb::MembershipView view_;
  grpc::ClientContext* watchContext_ = nullptr;
  std::deque<pb::Event> events_;
  std::thread heartbeatThread_;
  std::thread watchThread_;
};

}  // namespace ftcomm::rendezvous
