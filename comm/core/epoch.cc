#include "core/epoch.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/direct/staging.h"
#include "algorithms/host_groups.h"
#include "core/submit.h"
#include "recorder/flight_recorder.h"
#include "transport/copy_bytes.h"
#include "transport/shm/mappable_memory.h"
#include "transport/shm/shm_access.h"
#include "tuning/plan_table.h"

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

// What each member publishes for an epoch: its receive channel and its shared-memory offer; and
// rank 0 its tuning profile.
struct Published {
  std::vector<std::uint16_t> channels;
  std::vector<std::optional<shm::ShmOffer>> offers;
  std::string tuning;  // rank 0's profile, as a rules file
};

// Every member's receive channel and offer for the epoch, by rank.
Result<Published> exchangeChannels(const WorldIdentity& world, std::uint64_t epoch, int rank,
                                   int size, std::uint16_t mine, const std::string& offer,
                                   Clock::time_point deadline) {
  rendezvous::RendezvousClient& client = *world.rendezvous;
  const std::string prefix = "ftcomm/channel/" + std::to_string(epoch) + "/";
  const std::string tuningKey = "ftcomm/tuning/" + std::to_string(epoch);
  if (rank == 0) FTCOMM_RETURN_IF_ERROR(client.kvSet(tuningKey, tuning::serialize(world.tuning)));
  FTCOMM_RETURN_IF_ERROR(
      client.kvSet(prefix + std::to_string(rank), std::to_string(mine) + " " + offer));
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back(prefix + std::to_string(r));
  keys.push_back(tuningKey);
  // In short slices: a member that died before publishing must not hold the others until the
  // deadline.
  auto published = client.kvWait(keys, std::min(timeLeft(deadline), kSlice));
  while (!published.ok() && published.status().code() == StatusCode::kTimeout &&
         Clock::now() < deadline) {
    FTCOMM_RETURN_IF_ERROR(epochFailed(world, epoch));
    published = client.kvWait(keys, std::min(timeLeft(deadline), kSlice));
  }
  if (!published.ok()) return published.status();
  Published result;
  result.tuning = published->back();
  published->pop_back();
  for (const std::string& value : *published) {
    char* end = nullptr;
    const unsigned long parsed = std::strtoul(value.c_str(), &end, 10);
    if (*end != ' ' || parsed == 0 || parsed > 0xffff) {
      return internalError("a malformed channel in the rendezvous: '" + value + "'");
    }
    result.channels.push_back(static_cast<std::uint16_t>(parsed));
    auto decoded = shm::ShmOffer::decode(end + 1);
    if (!decoded.ok()) return decoded.status();
    result.offers.push_back(std::move(decoded).value());
  }
  return result;
}

// This epoch's shared-memory domain, connected to the members on this host; null under
// FTCOMM_TRANSPORT=ucx or when no other member is here.
Result<std::shared_ptr<shm::ShmDomain>> connectDomain(const WorldIdentity& world,
                                                      std::shared_ptr<shm::ShmDomain> domain,
                                                      const Published& published) {
  if (!domain) return domain;
  const bool required = world.transport == TransportMode::kShm;
  FTCOMM_RETURN_IF_ERROR(domain->connect(published.offers, required));
  for (int m = 0; m < domain->size(); ++m) {
    if (m != domain->rank() && domain->local(m)) return domain;
  }
  return required ? domain : nullptr;
}

// CommState::hosts and spansHosts from the members' offers.
void assignHosts(CommState& state, const std::vector<std::optional<shm::ShmOffer>>& offers) {
  std::map<std::string, int> index;
  for (std::size_t m = 0; m < offers.size(); ++m) {
    const std::string key = offers[m] ? offers[m]->host : "no offer from rank " + std::to_string(m);
    state.hosts.push_back(index.emplace(key, static_cast<int>(index.size())).first->second);
  }
  state.spansHosts = algorithms::spansHosts(state.hosts);
  state.severalHosts = algorithms::severalHosts(state.hosts);
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

// Rank 0's profile, resolved for `size` members; a member whose own profile differs says so once.
Result<std::shared_ptr<const tuning::PlanTable>> agreeOnTuning(const WorldIdentity& world,
                                                               const std::string& rankZeros,
                                                               int size) {
  auto agreed = tuning::parseProfile(rankZeros, "rank 0's tuning profile");
  if (!agreed.ok()) return agreed.status();
  auto table = std::make_shared<const tuning::PlanTable>(*agreed, size);
  const std::string own = tuning::profileHash(world.tuning);
  if (own != table->hash()) {
    static std::once_flag told;
    std::call_once(told, [&] {
      std::cerr << "ftcomm: this member's tuning profile (" << world.tuning.name << " " << own
                << ") differs from rank 0's (" << table->name() << " " << table->hash()
                << "); every member plans with rank 0's\n";
    });
  }
  transport::CopyPolicy copies;
  const tuning::Settings& settings = table->settings();
  copies.loopFrom = settings.copyLoopFrom;
  copies.aroundCacheFrom = settings.copyAroundCacheFrom;
  copies.partAroundCacheFrom = settings.copyPartAroundCacheFrom;
  copies.piecesFrom = settings.copyPiecesFrom;
  copies.resultAroundCacheFrom = settings.resultAroundCacheFrom;
  transport::setCopyPolicy(copies);
  return table;
}

}  // namespace

Result<std::shared_ptr<CommState>> connectEpoch(const WorldIdentity& world,
                                                const rendezvous::EpochView& view,
                                                Clock::time_point deadline, bool keepIfPeerFailed) {
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
  std::shared_ptr<shm::ShmDomain> domain;
  // Where processes may not reach into each other, auto offers no shared memory (every pair
  // involving this process then agrees on UCX); shm refuses.
  const Status& access =
      world.transport == TransportMode::kUcx ? Status::Ok() : shm::processAccess();
  if (world.transport == TransportMode::kShm && !access.ok()) {
    return Status(access.code(), "FTCOMM_TRANSPORT=shm: " + access.message());
  }
  if (world.transport == TransportMode::kAuto && !access.ok()) {
    static std::once_flag told;
    std::call_once(told, [&] {
      std::cerr << "ftcomm: " << access.message() << "; peers on this host use UCX\n";
    });
  }
  if (world.transport != TransportMode::kUcx && access.ok()) {
    // The direct algorithms' staging buffers (a direct reduce's non-root slice, which its root
    // reads) in memory that the peers map, read without cross-memory attach.
    static std::once_flag staging;
    std::call_once(staging, [] {
      algorithms::setStagingMemory(
          {[](std::size_t bytes) -> void* {
             auto memory = shm::MappableMemory::process().allocate(bytes);
             return memory.ok() ? *memory : nullptr;
           },
           [](void* memory) { (void)shm::MappableMemory::process().free(memory); }});
    });
    auto created =
        shm::ShmDomain::create(state->rank, state->size, state->epoch, world.engine->wakeFd());
    if (!created.ok()) return created.status();
    domain = std::move(created).value();
  }
  auto published = exchangeChannels(world, state->epoch, state->rank, state->size, state->channel,
                                    domain ? domain->offer().encode() : "none", deadline);
  if (!published.ok()) return published.status();
  state->channels = published->channels;
  auto tuned = agreeOnTuning(world, published->tuning, state->size);
  if (!tuned.ok()) return tuned.status();
  state->tuning = std::move(tuned).value();
  auto connected = connectDomain(world, std::move(domain), *published);
  if (!connected.ok()) return connected.status();
  state->shm = std::move(connected).value();
  for (int r = 0; r < state->size; ++r) state->shmMembers.push_back(r);
  assignHosts(*state, published->offers);
  {
    std::lock_guard<std::mutex> lock(world.engine->mutex());
    auto transport = makeTransportLocked(*world.engine, state->shm, state->shmMembers, state->rank,
                                         state->addresses, state->channels);
    if (!transport.ok()) return transport.status();
    state->transport = std::move(transport).value();
    state->peersReadable = everyPeerReadable(*state->transport);
    if (state->shm) {
      world.engine->addDomainLocked(state->shm);
      // The world is the epoch's first communicator: area 0 on every member.
      const int area = state->shm->allocateArea();
      state->inlineGroup = makeInlineGroup(
          state->tuning, state->shm, state->shmMembers,
          std::vector<int>(static_cast<std::size_t>(state->size), area), state->channels);
    }
    // Read once: each collective consults the environment only for the algorithms named here.
    state->forcedAlgorithms = algorithms::forcedAlgorithms();
    world.engine->attachLocked(state);
    if (Status failed = epochFailed(world, state->epoch); !failed.ok()) {
      world.engine->breakLocked(*state, failed, 0, false);
    }
  }
  state->registerWithRecorder();
  recorder::FlightRecorder::process().setIdentity(
      {world.job, world.launchRank, world.launchSize, state->epoch});
  if (Status s = wireUp(state, deadline); !s.ok()) {
    const bool peerLost = s.code() == StatusCode::kPeerFailed || s.code() == StatusCode::kRevoked;
    if (keepIfPeerFailed && peerLost) {
      std::lock_guard<std::mutex> lock(world.engine->mutex());
      // The failed wire-up broke the state already; say so again in case it did not.
      world.engine->breakLocked(*state, s, 0, false);
      return state;
    }
    std::lock_guard<std::mutex> lock(world.engine->mutex());
    world.engine->closeLocked(*state);
    return s;
  }
  // Every member has mapped this process's segment (it sent its wire-up message after).
  if (state->shm) {
    std::lock_guard<std::mutex> lock(world.engine->mutex());
    state->shm->sealed();
  }
  return state;
}

}  // namespace ftcomm::detail
