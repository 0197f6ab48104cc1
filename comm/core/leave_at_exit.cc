#include "core/leave_at_exit.h"

#include <cstdlib>
#include <mutex>
#include <vector>

#include "recorder/flight_recorder.h"

namespace ftcomm::detail {

namespace {

struct Registry {
  std::mutex mu;
  std::vector<std::weak_ptr<rendezvous::RendezvousClient>> clients;
};

// Never destroyed: the exit handler may run after static destructors began.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// on_exit (glibc), not atexit: it tells the exit status, and only a status of 0 leaves.
void atExit(int status, void* /*unused*/) {
  if (status != 0) return;
  std::vector<std::shared_ptr<rendezvous::RendezvousClient>> live;
  {
    std::lock_guard lock(registry().mu);
    for (const auto& weak : registry().clients) {
      if (auto client = weak.lock()) live.push_back(std::move(client));
    }
  }
  for (const auto& client : live) (void)client->leave();
  // Where dumps are kept, a process that wrote none leaves one that says it finished, so that
  // ftcomm-fr does not take its missing dump for a crash.
  const char* dir = std::getenv("FTCOMM_FR_DIR");
  recorder::FlightRecorder& recorder = recorder::FlightRecorder::process();
  if (dir != nullptr && *dir != '\0' && !recorder.hasDumped()) {
    (void)recorder.dump(recorder::kFinishedNormally);
  }
}

}  // namespace

void leaveAtNormalExit(const std::shared_ptr<rendezvous::RendezvousClient>& client) {
  static std::once_flag registered;
  std::call_once(registered, [] { ::on_exit(&atExit, nullptr); });
  std::lock_guard lock(registry().mu);
  auto& clients = registry().clients;
  std::erase_if(clients, [](const auto& weak) { return weak.expired(); });
  clients.push_back(client);
}

}  // namespace ftcomm::detail
