// Communicator::create: who this process is (options, FTCOMM_*, mpirun's OMPI_COMM_WORLD_*),
// joining through the rendezvous with this process's UCX worker address, agreeing on a channel,
// connecting every endpoint and exchanging one message with every peer (eager).
#include <cstdlib>
#include <future>

#include "core/comm_state.h"
#include "core/hash.h"
#include "core/pending.h"
#include "ftcomm/communicator.h"
#include "recorder/flight_recorder.h"
#include "transport/ucx/ucx_transport.h"

namespace ftcomm {

namespace {

using detail::Clock;

int envInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  if (*end != '\0' || parsed < 0 || parsed > (1 << 20)) return -2;  // malformed: refused below
  return static_cast<int>(parsed);
}

std::string envString(const char* name, std::string fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

std::uint64_t hashOf(const std::string& text) {
  return detail::hashText(text) | 1;  // never 0: 0 means "no parent" in the recorder
}

std::chrono::milliseconds left(Clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
}

// Joins, and the view of the first epoch.
Result<rendezvous::EpochView> joinJob(rendezvous::RendezvousClient& client, int rank, int size,
                                      const std::string& address, Clock::time_point deadline) {
  rendezvous::JoinOptions join;
  join.worldSize = size;
  join.desiredRank = rank;
  join.transportAddress = address;
  join.timeout = left(deadline);
  auto joined = client.join(join);
  if (!joined.ok()) return joined.status();
  if (joined->rank() != rank) {
    return failedPrecondition("the rendezvous gave rank " + std::to_string(joined->rank()) +
                              " to this process, which asked for rank " + std::to_string(rank));
  }
  return rendezvous::EpochView{joined->view(), joined->rank()};
}

Result<std::unique_ptr<Communicator>> createBlocking(const CommOptions& options) {
  const int createMs = envInt("FTCOMM_CREATE_TIMEOUT_MS", -1);
  const auto deadline =
      Clock::now() + (createMs > 0 ? std::chrono::milliseconds(createMs) : options.timeout);
  const int size = options.size >= 0
                       ? options.size
                       : envInt("FTCOMM_WORLD_SIZE", envInt("OMPI_COMM_WORLD_SIZE", -1));
  const int rank =
      options.rank >= 0 ? options.rank : envInt("FTCOMM_RANK", envInt("OMPI_COMM_WORLD_RANK", -1));
  if (size < 1) {
    return invalidArgument(
        "the world size is unknown or malformed: set CommOptions::size or FTCOMM_WORLD_SIZE, or "
        "run under mpirun");
  }
  if (rank < 0 || rank >= size) {
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

  auto engine = detail::Engine::instance();
  if (!engine.ok()) return engine.status();
  auto state = std::make_shared<detail::CommState>();
  state->engine = *engine;
  state->name = options.name;
  state->opTimeout =
      options.opTimeout.count() > 0 ? options.opTimeout : std::chrono::milliseconds(timeoutMs);

  // The rendezvous client: membership events reach the engine, and the last communicator
  // of the world to go leaves the job cleanly (a member that exits without leaving is failed).
  auto self = std::make_shared<std::weak_ptr<rendezvous::RendezvousClient>>();
  std::weak_ptr<detail::Engine> weakEngine = *engine;
  rendezvous::ClientOptions client;
  client.address = address;
  client.jobId = job;
  client.token = options.token.empty() ? envString("FTCOMM_TOKEN", "") : options.token;
  client.onEvent = [self, weakEngine](const rendezvous::pb::Event& event) {
    if (event.kind() != rendezvous::pb::Event::MEMBER_FAILED) return;
    auto e = weakEngine.lock();
    auto c = self->lock();
    if (e && c)
      e->memberFailed(
          c, event.rank(),
          "rank " + std::to_string(event.rank()) + " failed (rendezvous): " + event.reason());
  };
  auto created = rendezvous::RendezvousClient::create(client);
  if (!created.ok()) return created.status();
  state->rendezvous = std::shared_ptr<rendezvous::RendezvousClient>(
      created->release(), [](rendezvous::RendezvousClient* c) {
        (void)c->leave();
        delete c;
      });
  *self = state->rendezvous;

  auto view = joinJob(*state->rendezvous, rank, size, (*engine)->address(), deadline);
  if (!view.ok()) return view.status();
  state->epoch = view->view.epoch();
  state->rank = rank;
  state->size = size;
  for (const auto& member : view->view.members()) {
    state->worldRanks.push_back(member.rank());
    state->addresses.push_back(member.process().transport_address());
  }
  state->parentRanks = state->worldRanks;
  state->id = hashOf("world/" + job);

  // Receive channels: each member picks its own and publishes it (UcxTransport::connect).
  auto channel = (*engine)->allocateChannel();
  if (!channel.ok()) return channel.status();
  state->channel = *channel;
  const std::string prefix = "ftcomm/channel/" + std::to_string(state->epoch) + "/";
  FTCOMM_RETURN_IF_ERROR(
      state->rendezvous->kvSet(prefix + std::to_string(rank), std::to_string(*channel)));
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back(prefix + std::to_string(r));
  auto published = state->rendezvous->kvWait(keys, left(deadline));
  if (!published.ok()) return published.status();
  for (const std::string& value : *published) {
    char* end = nullptr;
    const unsigned long parsed = std::strtoul(value.c_str(), &end, 10);
    if (*end != '\0' || parsed == 0 || parsed > 0xffff) {
      return internalError("a malformed channel in the rendezvous: '" + value + "'");
    }
    state->channels.push_back(static_cast<std::uint16_t>(parsed));
  }

  {
    std::lock_guard<std::mutex> lock((*engine)->mutex());
    auto connected = ucx::UcxTransport::connect((*engine)->workerLocked(), rank, state->addresses,
                                                state->channels);
    if (!connected.ok()) return connected.status();
    state->transport = std::move(connected).value();
    (*engine)->attachLocked(state);
  }
  state->registerWithRecorder();
  recorder::FlightRecorder::process().setIdentity({job, rank, size, state->epoch});
  // SIGUSR1 dumps a live process's recorder (the handler only posts; a thread writes).
  if (Status s = recorder::FlightRecorder::process().enableSignalDump(); !s.ok()) return s;

  auto comm = std::make_unique<Communicator>(state);
  // Eager: one message between every pair, so every endpoint is wired up now.
  std::vector<std::uint8_t> out(static_cast<std::size_t>(size)), in(out.size());
  OpOptions wireup;
  wireup.timeout = left(deadline);
  if (Status s = comm->allToAll(out.data(), in.data(), 1, DataType::kUint8, wireup).wait();
      !s.ok()) {
    return Status(s.code(), "connecting to every member: " + s.message());
  }
  return comm;
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
  state_->engine->closeLocked(*state_);
}

Result<std::string> Communicator::dumpFlightRecorder(const std::string& reason) {
  auto path = recorder::FlightRecorder::process().dump(reason);
  if (!path.ok()) return path.status();
  return path->string();
}

}  // namespace ftcomm
