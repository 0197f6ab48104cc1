#include "core/leave_at_exit.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "recorder/flight_recorder.h"

namespace ftcomm::detail {

namespace {

struct Registry {
  std::mutex mu;
  std::vector<std::weak_ptr<rendezvous::RendezvousClient>> clients;
  std::vector<std::weak_ptr<Engine>> engines;
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
  std::vector<std::shared_ptr<Engine>> engines;
  {
    std::lock_guard lock(registry().mu);
    for (const auto& weak : registry().clients) {
      if (auto client = weak.lock()) live.push_back(std::move(client));
    }
    for (const auto& weak : registry().engines) {
      if (auto engine = weak.lock()) engines.push_back(std::move(engine));
    }
  }
  // The members first, over the communicators' own connections; then the rendezvous.
  for (const auto& engine : engines) engine->leaveAtExit();
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

void leaveAtNormalExit(const std::shared_ptr<rendezvous::RendezvousClient>& client,
                       const std::shared_ptr<Engine>& engine) {
  static std::once_flag registered;
  std::call_once(registered, [] { ::on_exit(&atExit, nullptr); });
  std::lock_guard lock(registry().mu);
  auto& clients = registry().clients;
  std::erase_if(clients, [](const auto& weak) { return weak.expired(); });
  clients.push_back(client);
  auto& engines = registry().engines;
  std::erase_if(engines, [](const auto& weak) { return weak.expired(); });
  const bool known = std::any_of(engines.begin(), engines.end(),
                                 [&](const auto& weak) { return weak.lock() == engine; });
  if (!known) engines.push_back(engine);
}

}  // namespace ftcomm::detail
