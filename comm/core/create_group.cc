// createGroup: a child made by its members alone. Each member publishes its receive channel and
// inline area in the job's store under a key of the parent, its epoch, the tag, the rank list's
// hash and its parent rank, then waits for the others' keys; the child follows from those values
// alone, as a split's follows from its gathered table.
#include <charconv>
#include <cstdio>
#include <string>
#include <vector>

#include "core/engine.h"
#include "core/hash.h"
#include "core/split_child.h"

namespace ftcomm {

namespace {

constexpr std::size_t kMaxTagBytes = 128;

std::string groupKey(const detail::CommState& parent, const std::string& tag,
                     std::uint64_t listHash, int parentRank) {
  char prefix[64];
  std::snprintf(prefix, sizeof prefix, "ftcomm/group/%016llx/%llu/",
                static_cast<unsigned long long>(parent.id),
                static_cast<unsigned long long>(parent.epoch));
  char suffix[48];
  std::snprintf(suffix, sizeof suffix, "/%016llx/%d", static_cast<unsigned long long>(listHash),
                parentRank);
  return prefix + tag + suffix;
}

// "CHANNEL AREA", as published.
bool parseEntry(const std::string& text, std::uint16_t& channel, int& area) {
  const char* end = text.data() + text.size();
  unsigned value = 0;
  auto [mid, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || mid == end || *mid != ' ' || value == 0 || value > 0xffff) return false;
  channel = static_cast<std::uint16_t>(value);
  auto [last, ec2] = std::from_chars(mid + 1, end, area);
  return ec2 == std::errc() && last == end;
}

}  // namespace

Result<std::unique_ptr<Communicator>> Communicator::createGroup(std::span<const int> ranks,
                                                                const std::string& tag,
                                                                const OpOptions& options) {
  const auto& parent = state_;
  if (tag.empty() || tag.size() > kMaxTagBytes || tag.find('/') != std::string::npos) {
    return invalidArgument("createGroup: the tag must be 1.." + std::to_string(kMaxTagBytes) +
                           " bytes without '/'; got '" + tag + "'");
  }
  std::uint64_t hash = detail::kHashSeed;
  std::vector<bool> seen(static_cast<std::size_t>(size()), false);
  int myIndex = -1;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    if (r < 0 || r >= size() || seen[static_cast<std::size_t>(r)]) {
      return invalidArgument("createGroup: rank list entry " + std::to_string(r) +
                             " is out of range (size " + std::to_string(size()) + ") or repeated");
    }
    seen[static_cast<std::size_t>(r)] = true;
    hash = detail::hashMix(hash, static_cast<std::uint64_t>(r));
    if (r == rank()) myIndex = static_cast<int>(i);
  }
  if (myIndex < 0) {
    return invalidArgument("createGroup: rank " + std::to_string(rank()) + " of " + name() +
                           " is not in the rank list; only the members call it");
  }
  FTCOMM_RETURN_IF_ERROR(health());
  if (!parent->rendezvous) return failedPrecondition("createGroup: " + name() + " has no job");

  auto channel = parent->engine->allocateChannel();
  if (!channel.ok()) return channel.status();
  int area = -1;
  if (parent->inlineGroup) {
    std::lock_guard<std::mutex> lock(parent->engine->mutex());
    area = parent->shm->allocateArea();
  }
  FTCOMM_RETURN_IF_ERROR(parent->rendezvous->kvSet(
      groupKey(*parent, tag, hash, rank()), std::to_string(*channel) + " " + std::to_string(area)));
  std::vector<std::string> keys;
  for (int r : ranks) keys.push_back(groupKey(*parent, tag, hash, r));
  const auto timeout = options.timeout.count() > 0 ? options.timeout : parent->opTimeout;
  auto values = parent->rendezvous->kvWait(keys, timeout);
  if (!values.ok()) {
    return Status(values.status().code(),
                  "createGroup '" + tag + "' of " + name() + ": " + values.status().message());
  }

  std::vector<int> members(ranks.begin(), ranks.end());
  std::vector<std::uint16_t> channels(members.size());
  std::vector<int> areas(members.size());
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (!parseEntry((*values)[i], channels[i], areas[i])) {
      return internalError("createGroup: rank " + std::to_string(members[i]) +
                           " published a malformed entry '" + (*values)[i] + "'");
    }
  }
  // The same on every member: the parent, the rank list, and the first member's channel.
  const std::uint64_t id = detail::hashMix(detail::hashMix(parent->id, hash), channels.front()) | 1;
  return detail::makeChild(parent, "/" + tag, id, members, channels, areas, *channel);
}

}  // namespace ftcomm
