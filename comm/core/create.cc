// Communicator::create: who this process is (options, FTCOMM_*, mpirun's OMPI_COMM_WORLD_*),
// joining through the rendezvous with this process's UCX worker address, agreeing on a channel,
// connecting every endpoint and exchanging one message with every peer (eager).
#include <cstdlib>
#include <future>

#include "core/comm_state.h"
#include "core/environment.h"
#include "core/epoch.h"
#include "core/fault_injection.h"
#include "core/hash.h"
#include "core/leave_at_exit.h"
#include "core/pending.h"
#include "ftcomm/communicator.h"
#include "recorder/flight_recorder.h"
#include "tuning/select.h"

namespace ftcomm {

namespace {

using detail::Clock;
using detail::envInt;
using detail::envString;

std::uint64_t hashOf(const std::string& text) {
  return detail::hashText(text) | 1;  // never 0: 0 means "no parent" in the recorder
}

// Joins with the engine's UCX address and advertised address, and the view of the epoch this
// process enters: the first one, or for a replacement the one that admitted it (rank and size
// then come from the rendezvous).
Result<rendezvous::EpochView> joinJob(rendezvous::RendezvousClient& client, int rank, int size,
                                      const detail::Engine& engine, Clock::time_point deadline,
                                      bool* admittedAsReplacement) {
  rendezvous::JoinOptions join;
  join.worldSize = std::max(size, 0);
  if (rank >= 0) join.desiredRank = rank;
  join.transportAddress = engine.address();
  join.address = engine.advertisedAddress();
  join.timeout = detail::timeLeft(deadline);
  auto joined = client.join(join);
  if (!joined.ok()) return joined.status();
  *admittedAsReplacement = joined->replacement();
  if (!joined->replacement() && joined->rank() != rank) {
    return failedPrecondition("the rendezvous gave rank " + std::to_string(joined->rank()) +
                              " to this process, which asked for rank " + std::to_string(rank));
  }
  return rendezvous::EpochView{joined->view(), joined->rank()};
}

// The rendezvous client of a world: membership events reach the engine and the job watch, and
// the last communicator state of the world to go leaves the job cleanly (a member that exits
// without leaving is declared failed).
Result<std::shared_ptr<rendezvous::RendezvousClient>> connectRendezvous(
    const CommOptions& options, const std::string& address, const std::string& job,
    const std::shared_ptr<detail::Engine>& engine, const std::shared_ptr<detail::JobWatch>& watch) {
  // The client itself, for the callbacks, which run on its own threads: a raw pointer, because
  // a callback holding the last reference would make the client join its own thread.
  auto self = std::make_shared<const rendezvous::RendezvousClient*>(nullptr);
  std::weak_ptr<detail::Engine> weakEngine = engine;
  rendezvous::ClientOptions client;
  client.address = address;
  client.jobId = job;
  client.token = options.token.empty() ? envString("FTCOMM_TOKEN", "") : options.token;
  auto setting = [](const std::string& given, const char* variable) {
    return given.empty() ? envString(variable, "") : given;
  };
  client.tls.caFile = setting(options.rendezvousCa, "FTCOMM_RENDEZVOUS_CA");
  client.tls.certFile = setting(options.rendezvousCert, "FTCOMM_RENDEZVOUS_CERT");
  client.tls.keyFile = setting(options.rendezvousKey, "FTCOMM_RENDEZVOUS_KEY");
  client.onEvent = [self, weakEngine, watch](const rendezvous::pb::Event& event) {
    using Event = rendezvous::pb::Event;
    if (event.kind() == Event::REPLACEMENT_WAITING || event.kind() == Event::SNAPSHOT) {
      watch->replacementsWaiting.store(event.replacements_waiting());
    } else if (event.kind() == Event::EPOCH_COMMITTED) {
      watch->replacementsWaiting.store(0);
    }
    if (event.kind() == Event::MEMBER_FAILED || event.kind() == Event::EPOCH_REVOKED ||
        (event.kind() == Event::SNAPSHOT && event.revoked())) {
      std::uint64_t seen = watch->failedEpoch.load();
      while (seen < event.epoch() &&
             !watch->failedEpoch.compare_exchange_weak(seen, event.epoch())) {
      }
    }
    if (auto e = weakEngine.lock(); e && *self != nullptr) e->rendezvousEvent(*self, event);
  };
  client.onExpelled = [self, weakEngine](const Status& why) {
    if (auto e = weakEngine.lock(); e && *self != nullptr) e->expelled(*self, why);
  };
  auto created = rendezvous::RendezvousClient::create(client);
  if (!created.ok()) return created.status();
  std::shared_ptr<rendezvous::RendezvousClient> shared(created->release(),
                                                       [](rendezvous::RendezvousClient* c) {
                                                         (void)c->leave();
                                                         delete c;
                                                       });
  *self = shared.get();
  detail::leaveAtNormalExit(shared, engine);
  return shared;
}

Result<std::unique_ptr<Communicator>> createBlocking(const CommOptions& options) {
  const int createMs = envInt("FTCOMM_CREATE_TIMEOUT_MS", -1);
  const auto deadline =
      Clock::now() + (createMs > 0 ? std::chrono::milliseconds(createMs) : options.timeout);
  const bool replacement = options.replacement || envInt("FTCOMM_REPLACEMENT", 0) == 1;
  const int size = options.size >= 0
                       ? options.size
                       : envInt("FTCOMM_WORLD_SIZE", envInt("OMPI_COMM_WORLD_SIZE", -1));
  const int rank =
      options.rank >= 0 ? options.rank : envInt("FTCOMM_RANK", envInt("OMPI_COMM_WORLD_RANK", -1));
  if (!replacement && size < 1) {
    return invalidArgument(
        "the world size is unknown or malformed: set CommOptions::size or FTCOMM_WORLD_SIZE, or "
        "run under mpirun");
  }
  if (!replacement && (rank < 0 || rank >= size)) {
    return invalidArgument("rank " + std::to_string(rank) + " is unknown or outside 0.." +
                           std::to_string(size - 1) +
                           ": set CommOptions::rank or FTCOMM_RANK, or run under mpirun");
  }
  const std::string address =
      options.rendezvous.empty() ? envString("FTCOMM_RENDEZVOUS", "") : options.rendezvous;
  if (address.empty()) {
    return invalidArgument(
        "no rendezvous service: set FTCOMM_RENDEZVOUS=HOST:PORT or CommOptions::rendezvous");
  }
  const std::string job = options.job.empty() ? envString("FTCOMM_JOB", "ftcomm") : options.job;
  const int timeoutMs = envInt("FTCOMM_TIMEOUT_MS", 300000);
  if (options.opTimeout.count() <= 0 && timeoutMs < 1) {
    return invalidArgument("FTCOMM_TIMEOUT_MS must be a positive number of milliseconds");
  }

  if (const Status& fault = detail::FaultInjector::process().status(); !fault.ok()) return fault;
  auto engine = detail::Engine::instance();
  if (!engine.ok()) return engine.status();
  detail::WorldIdentity world;
  world.engine = *engine;
  world.watch = std::make_shared<detail::JobWatch>();
  world.job = job;
  world.name = options.name;
  world.id = hashOf("world/" + job);
  world.opTimeout =
      options.opTimeout.count() > 0 ? options.opTimeout : std::chrono::milliseconds(timeoutMs);
  world.minSize = options.minSize > 0 ? options.minSize : envInt("FTCOMM_MIN_WORLD_SIZE", 1);
  const int reconfigureMs = envInt("FTCOMM_RECONFIGURE_TIMEOUT_MS", 60000);
  const int agreementMs = envInt("FTCOMM_AGREEMENT_TIMEOUT_MS", 10000);
  if (world.minSize < 1 || reconfigureMs < 1 || agreementMs < 1) {
    return invalidArgument(
        "FTCOMM_MIN_WORLD_SIZE, FTCOMM_RECONFIGURE_TIMEOUT_MS and FTCOMM_AGREEMENT_TIMEOUT_MS must "
        "be positive numbers");
  }
  auto profile = tuning::selectProfile(options.tuning);
  if (!profile.ok()) return profile.status();
  world.tuning = std::move(profile).value();
  auto transportMode = detail::transportModeFromEnv();
  if (!transportMode.ok()) return transportMode.status();
  world.transport = *transportMode;
  world.reconfigureTimeout = std::chrono::milliseconds(reconfigureMs);
  world.agreementTimeout = std::chrono::milliseconds(agreementMs);
  auto client = connectRendezvous(options, address, job, *engine, world.watch);
  if (!client.ok()) return client.status();
  world.rendezvous = *client;

  bool admitted = false;
  auto view = joinJob(*world.rendezvous, replacement ? -1 : rank, replacement ? 0 : size, **engine,
                      deadline, &admitted);
  if (!view.ok()) return view.status();
  // SIGUSR1 dumps a live process's recorder (the handler only posts; a thread writes).
  if (Status s = recorder::FlightRecorder::process().enableSignalDump(); !s.ok()) return s;
  // A replacement keeps the launch rank its launcher gave it, when it has one.
  world.launchRank = rank >= 0 ? rank : view->rank;
  world.launchSize = size > 0 ? size : view->view.members_size();
  auto state = detail::connectEpoch(world, *view, deadline, /*keepIfPeerFailed=*/true);
  if (!state.ok()) return state.status();
  (*state)->admittedAsReplacement = admitted;
  return std::make_unique<Communicator>(*state, std::make_shared<detail::WorldIdentity>(world));
}

class PendingCreation final : public PendingCommunicator::Impl {
 public:
  explicit PendingCreation(CommOptions options)
      : future_(std::async(std::launch::async, [options] { return createBlocking(options); })) {}
  bool ready() override {
    return future_.valid() &&
           future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }
  Result<std::unique_ptr<Communicator>> take(std::chrono::milliseconds timeout) override {
    if (!future_.valid()) return failedPrecondition("this communicator was already taken");
    if (future_.wait_for(timeout) != std::future_status::ready) {
      return timeoutError("the communicator is still being created");
    }
    return future_.get();
  }

 private:
  std::future<Result<std::unique_ptr<Communicator>>> future_;
};

}  // namespace

Result<std::unique_ptr<Communicator>> Communicator::create(const CommOptions& options) {
  return createBlocking(options);
}

PendingCommunicator Communicator::createAsync(const CommOptions& options) {
  return PendingCommunicator(std::make_shared<PendingCreation>(options));
}

bool PendingCommunicator::test() {
  return impl_ == nullptr || impl_->ready();
}

Result<std::unique_ptr<Communicator>> PendingCommunicator::wait(std::chrono::milliseconds timeout) {
  if (impl_ == nullptr) return failedPrecondition("an empty PendingCommunicator");
  return impl_->take(timeout);
}

Communicator::~Communicator() {
  std::lock_guard<std::mutex> lock(state_->engine->mutex());
  state_->engine->closeLocked(*state_, true);
}

Result<std::string> Communicator::dumpFlightRecorder(const std::string& reason) {
  auto path = recorder::FlightRecorder::process().dump(reason);
  if (!path.ok()) return path.status();
  return path->string();
}

}  // namespace ftcomm
