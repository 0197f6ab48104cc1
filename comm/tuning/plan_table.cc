// Flattening a profile's rules (first match wins) into byte bands per collective.
#include "tuning/plan_table.h"

#include <algorithm>

namespace ftcomm::tuning {

namespace {

Band bandOf(const Rule& rule) {
  Band band;
  if (!rule.algorithm.empty() && !rule.collective.any) {
    band.algorithm = algorithms::findAlgorithm(rule.collective.collective, rule.algorithm);
  }
  band.way = rule.way;
  band.whole = rule.whole;
  band.chunk = rule.chunk;
  band.room = rule.room;
  band.lend = rule.lend;
  band.copy = rule.copy;
  band.segment = rule.segment;
  return band;
}

std::vector<Band> flatten(const Profile& profile, algorithms::Collective collective, int ranks) {
  std::vector<const Rule*> rules;
  std::vector<std::size_t> starts{0};
  for (const Rule& rule : profile.rules) {
    if ((!rule.collective.any && rule.collective.collective != collective) ||
        ranks < rule.minRanks || ranks > rule.maxRanks) {
      continue;
    }
    rules.push_back(&rule);
    starts.push_back(rule.minBytes);
    if (rule.maxBytes != kUnbounded) starts.push_back(rule.maxBytes + 1);
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  std::vector<Band> bands;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const std::size_t from = starts[i];
    Band band;  // no rule: Way::kDirect
    for (const Rule* rule : rules) {
      if (from >= rule->minBytes && from <= rule->maxBytes) {
        band = bandOf(*rule);
        break;
      }
    }
    band.maxBytes = i + 1 < starts.size() ? starts[i + 1] - 1 : kUnbounded;
    if (!bands.empty()) {
      Band last = bands.back();
      last.maxBytes = band.maxBytes;
      if (last == band) {
        bands.back().maxBytes = band.maxBytes;
        continue;
      }
    }
    bands.push_back(band);
  }
  return bands;
}

}  // namespace

PlanTable::PlanTable(const Profile& profile, int ranks)
    : profile_(profile), hash_(profileHash(profile)), ranks_(ranks) {
  for (std::size_t c = 0; c < kCollectives; ++c) {
    bands_[c] = flatten(profile_, static_cast<algorithms::Collective>(c), ranks);
  }
}

}  // namespace ftcomm::tuning
