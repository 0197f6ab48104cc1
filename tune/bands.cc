#include "tune/bands.h"

#include <bit>

namespace ftcomm::tune {

std::vector<Candidate> candidatesFor(int ranks) {
  const std::size_t n = static_cast<std::size_t>(ranks < 1 ? 1 : ranks);
  constexpr std::size_t k64 = std::size_t{64} << 10, k256 = std::size_t{256} << 10;
  constexpr std::size_t k512 = std::size_t{512} << 10;
  return {
      {"inline", tuning::Way::kInline, k64, k64, n * k64 > k256 ? n * k64 : k256},
      {"inline-512K", tuning::Way::kInline, k512, k512, n * k512},
      {"direct", tuning::Way::kDirect, 0, 0, 0},
      {"message", tuning::Way::kMessage, 0, 0, 0},
  };
}

std::vector<int> winners(const std::vector<Point>& points, double margin) {
  std::vector<int> out;
  int previous = -1;
  for (const Point& point : points) {
    int fastest = -1;
    for (std::size_t i = 0; i < point.micros.size(); ++i) {
      if (point.micros[i] < 0) continue;
      if (fastest < 0 || point.micros[i] < point.micros[fastest]) fastest = static_cast<int>(i);
    }
    int winner = fastest;
    if (previous >= 0 && fastest >= 0 && static_cast<std::size_t>(previous) < point.micros.size() &&
        point.micros[previous] >= 0 &&
        point.micros[previous] <= point.micros[fastest] * (1 + margin)) {
      winner = previous;
    }
    out.push_back(winner);
    if (winner >= 0) previous = winner;
  }
  return out;
}

namespace {

// 2^ceil((log2 a + log2 b) / 2) for a < b: the power of two halfway between them.
std::size_t halfway(std::size_t a, std::size_t b) {
  const int low = std::bit_width(a == 0 ? std::size_t{1} : a) - 1;
  const int high = std::bit_width(b) - 1;
  return std::size_t{1} << ((low + high + 1) / 2);
}

}  // namespace

std::vector<tuning::Rule> bandsOf(const tuning::CollectiveMatch& collective, int ranks,
                                  const std::vector<Point>& points,
                                  const std::vector<Candidate>& candidates, double margin) {
  const std::vector<int> won = winners(points, margin);
  std::vector<tuning::Rule> rules;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (won[i] < 0) continue;
    if (!rules.empty() && i > 0 && won[i] == won[i - 1]) continue;
    tuning::Rule rule;
    rule.collective = collective;
    rule.minRanks = rule.maxRanks = ranks;
    rule.minBytes = rules.empty() ? 0 : halfway(points[i - 1].bytes, points[i].bytes);
    const Candidate& c = candidates[static_cast<std::size_t>(won[i])];
    rule.way = c.way;
    if (c.way == tuning::Way::kInline) {
      rule.whole = c.whole;
      rule.chunk = c.chunk;
      rule.room = c.room;
    }
    if (!rules.empty()) rules.back().maxBytes = rule.minBytes - 1;
    rules.push_back(rule);
  }
  return rules;
}

}  // namespace ftcomm::tune
