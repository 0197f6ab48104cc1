#include "core/epoch.h"

#include <cstdlib>
#include <vector>

#include "core/submit.h"
#include "recorder/flight_recorder.h"
#include "transport/ucx/ucx_transport.h"

namespace ftcomm::detail {

namespace {

constexpr std::chrono::milliseconds kSlice{200};

// A member of `epoch` failed (or it was revoked) since it was agreed.
Status epochFailed(const WorldIdentity& world, std::uint64_t epoch) {
  if (world.watch->failedEpoch.load() < epoch) return Status::Ok();
  return Status(StatusCode::kPeerFailed, "a member of epoch " + std::to_string(epoch) +
                                             " failed (or the epoch was revoked) while it was "
                                             "being set up");
}

// Every member's receive channel for the epoch, by rank.
Result<std::vector<std::uint16_t>> exchangeChannels(const WorldIdentity& world, std::uint64_t epoch,
                                                    int rank, int size, std::uint16_t mine,
                                                    Clock::time_point deadline) {
  rendezvous::RendezvousClient& client = *world.rendezvous;
  const std::string prefix = "ftcomm/channel/" + std::to_string(epoch) + "/";
  FTCOMM_RETURN_IF_ERROR(client.kvSet(prefix + std::to_string(rank), std::to_string(mine)));
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back(prefix + std::to_string(r));
  // In short slices: a member that died before publishing must not hold the others until the
  // deadline.
  auto published = client.kvWait(keys, std::min(timeLeft(deadline), kSlice));
  while (!published.ok() && published.status().code() == StatusCode::kTimeout &&
         Clock::now() < deadline) {
    FTCOMM_RETURN_IF_ERROR(epochFailed(world, epoch));
    published = client.kvWait(keys, std::min(timeLeft(deadline), kSlice));
  }
  if (!published.ok()) return published.status();
  std::vector<std::uint16_t> channels;
  for (const std::string& value : *published) {
    char* end = nullptr;
    const unsigned long parsed = std::strtoul(value.c_str(), &end, 10);
    if (*end != '\0' || parsed == 0 || parsed > 0xffff) {
      return internalError("a malformed channel in the rendezvous: '" + value + "'");
    }
    channels.push_back(static_cast<std::uint16_t>(parsed));
  }
  return channels;
}

// One message between every pair, so that every endpoint is wired up before the epoch is used.
Status wireUp(const std::shared_ptr<CommState>& state, Clock::time_point deadline) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(state->size)), in(out.size());
  CollectiveCall c;
  c.name = "allToAll";
  c.kind = transport::OpKind::kAllToAll;
  c.recordOp = recorder::v1::ALL_TO_ALL;
  c.collective = algorithms::Collective::kAllToAll;
  c.args.dtype = DataType::kUint8;
  c.args.send = out.data();
  c.args.recv = in.data();
  c.args.count = 1;
  c.args.root = -1;
  c.choiceBytes = out.size();
  c.countIn = c.countOut = out.size();
  OpOptions options;
  options.timeout = timeLeft(deadline);
  Status s = submitCollective(state, std::move(c), options, Status::Ok()).wait();
  if (!s.ok()) return Status(s.code(), "connecting to every member: " + s.message());
  return Status::Ok();
}

}  // namespace

Result<std::shared_ptr<CommState>> connectEpoch(const WorldIdentity& world,
                                                const rendezvous::EpochView& view,
                                                Clock::time_point deadline) {
  auto state = std::make_shared<CommState>();
  state->engine = world.engine;
  state->rendezvous = world.rendezvous;
  state->watch = world.watch;
  state->name = world.name;
  state->id = world.id;
  state->opTimeout = world.opTimeout;
  state->launchRank = world.launchRank;
  state->epoch = view.view.epoch();
  state->rank = view.rank;
  state->size = view.view.members_size();
  for (const auto& member : view.view.members()) {
    state->worldRanks.push_back(member.rank());
    state->memberIds.push_back(member.member_id());
    state->addresses.push_back(member.process().transport_address());
  }
  state->parentRanks = state->worldRanks;

  auto channel = world.engine->allocateChannel();
  if (!channel.ok()) return channel.status();
  state->channel = *channel;
  auto channels =
      exchangeChannels(world, state->epoch, state->rank, state->size, state->channel, deadline);
  if (!channels.ok()) return channels.status();
  state->channels = std::move(channels).value();
  {
    std::lock_guard<std::mutex> lock(world.engine->mutex());
    auto connected = ucx::UcxTransport::connect(world.engine->workerLocked(), state->rank,
                                                state->addresses, state->channels);
    if (!connected.ok()) return connected.status();
    state->transport = std::move(connected).value();
    world.engine->attachLocked(state);
    if (Status failed = epochFailed(world, state->epoch); !failed.ok()) {
      world.engine->breakLocked(*state, failed, 0, false);
    }
  }
  state->registerWithRecorder();
  recorder::FlightRecorder::process().setIdentity(
      {world.job, world.launchRank, world.launchSize, state->epoch});
  if (Status s = wireUp(state, deadline); !s.ok()) {
    std::lock_guard<std::mutex> lock(world.engine->mutex());
    world.engine->closeLocked(*state);
    return s;
  }
  return state;
}

}  // namespace ftcomm::detail
