#include "core/comm_state.h"

#include "recorder/flight_recorder.h"
#include "tuning/plan_table.h"

namespace ftcomm::detail {

CommState::~CommState() {
  if (transport && engine) {
    std::lock_guard<std::mutex> lock(engine->mutex());
    transport.reset();
  }
}

std::string CommState::describe(const char* op, std::uint64_t seq) const {
  return std::string(op) + " #" + std::to_string(seq) + " of " + name + " (epoch " +
         std::to_string(epoch) + ")";
}

void CommState::registerWithRecorder() const {
  recorder::pb::Communicator entry;
  entry.set_comm_id(id);
  entry.set_name(name);
  entry.set_parent_comm_id(parentId);
  entry.set_epoch(epoch);
  entry.set_rank(rank);
  for (int worldRank : worldRanks) entry.add_world_ranks(worldRank);
  if (tuning) entry.set_tuning_profile(tuning->name() + " " + tuning->hash());
  recorder::FlightRecorder::process().upsertCommunicator(entry);
}

}  // namespace ftcomm::detail
