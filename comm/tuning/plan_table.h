// A profile resolved for one communicator: its rules flattened, per collective, into the byte
// bands of its rank count, once at creation. The hot path indexes the collective and scans a few
// bands; it reads no environment, no CPU id and no function-local static.
//
// Thread-safety: immutable once resolved; shared by a communicator and its operations.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "tuning/profile.h"

namespace ftcomm::tuning {

// What the rules say for one collective of one size at this rank count.
struct Band {
  std::size_t maxBytes = kUnbounded;  // the band covers sizes up to this, from the last's end
  Way way = Way::kDirect;
  std::size_t whole = std::size_t{256} << 10;
  std::size_t chunk = std::size_t{64} << 10;
  std::size_t room = std::size_t{256} << 10;
  Lend lend = Lend::kDefault;
  Copy copy = Copy::kPlain;
  std::size_t segment = 0;                               // Rule::segment
  const algorithms::AlgorithmInfo* algorithm = nullptr;  // Way::kMessage's named algorithm
  bool operator==(const Band&) const = default;
};

class PlanTable {
 public:
  PlanTable(const Profile& profile, int ranks);

  const Band& band(algorithms::Collective collective, std::size_t bytes) const {
    const auto& bands = bands_[static_cast<std::size_t>(collective)];
    for (const Band& b : bands) {
      if (bytes <= b.maxBytes) return b;
    }
    return bands.back();
  }
  const Settings& settings() const { return profile_.settings; }
  const Profile& profile() const { return profile_; }
  const std::string& name() const { return profile_.name; }
  const std::string& hash() const { return hash_; }
  int ranks() const { return ranks_; }

 private:
  static constexpr std::size_t kCollectives =
      static_cast<std::size_t>(algorithms::Collective::kAllToAllV) + 1;
  Profile profile_;
  std::string hash_;
  int ranks_;
  std::array<std::vector<Band>, kCollectives> bands_;
};

}  // namespace ftcomm::tuning
