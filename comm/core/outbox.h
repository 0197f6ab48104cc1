// Calls to the rendezvous that the progress engine decides on but must not make itself: a
// failure report or a revocation is an RPC that can take milliseconds (seconds while the server
// restarts), and the engine decides under its mutex, on the progress thread. The outbox runs
// them in order on a thread of its own.
//
// Thread-safety: post() may be called from any thread, also with the engine's mutex held.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace ftcomm::detail {

class RendezvousOutbox {
 public:
  RendezvousOutbox();
  // Stops after the call in progress; calls not yet started are dropped.
  ~RendezvousOutbox();
  RendezvousOutbox(const RendezvousOutbox&) = delete;
  RendezvousOutbox& operator=(const RendezvousOutbox&) = delete;

  void post(std::function<void()> call);

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> calls_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ftcomm::detail
