// When a collective runs inline, and in what chunks (inline_collective.h): the tuning profile's
// band for the collective and its size (comm/tuning/plan_table.h), and the communicators that
// have inline areas.
#include <algorithm>

#include "algorithms/shm/inline_collective.h"
#include "algorithms/shm/inline_posts.h"

namespace ftcomm::detail {

using algorithms::Collective;

namespace {

// Collectives of up to this many bytes in all run inline in one chunk, choosing nothing: below
// every band a profile may sensibly give (slots hold far more) and every choice. inlineChunking
// decides them first, and InlineCollective asks nothing more of a collective that neither lends
// nor chooses, so that an 8-byte collective pays for no lookup.
constexpr std::size_t kSmallTotal = 1024;

}  // namespace

std::shared_ptr<const InlineGroup> makeInlineGroup(
    const std::shared_ptr<const tuning::PlanTable>& tuning,
    const std::shared_ptr<shm::ShmDomain>& domain, const std::vector<int>& members,
    const std::vector<int>& areas, const std::vector<std::uint16_t>& channels) {
  if (!tuning || !tuning->settings().inlineCollectives || !domain ||
      members.size() != areas.size() || members.size() != channels.size())
    return nullptr;
  auto group = std::make_shared<InlineGroup>();
  group->tuning = tuning;
  group->domain = domain;
  group->members = members;
  group->channels = channels;
  for (std::size_t r = 0; r < members.size(); ++r) {
    if (areas[r] < 0 || areas[r] >= shm::kInlineAreas) return nullptr;
    shm::InlineArea* area = domain->area(members[r], areas[r]);
    if (area == nullptr) return nullptr;
    group->areas.push_back(area);
  }
  return group;
}

InlineChunking inlineChunking(const tuning::PlanTable& tuning, Collective collective,
                              std::size_t count, DataType dtype, int ranks, bool peersReadable) {
  InlineChunking plan;
  const auto posts = postsOf(collective);
  if (!posts) return plan;
  const std::size_t es = dataTypeSize(dtype);
  const std::size_t bytes = postBytes(*posts, count, es, ranks);
  const std::size_t total = collective == Collective::kAllGather ? bytes * ranks : bytes;
  // Up to kSmallTotal: one chunk, decided without the lookups below.
  if (total <= kSmallTotal) {
    plan.block = *posts == Posts::kNothing ? 0 : count * es;
    plan.step = std::max(plan.block, es);
    plan.chunks = 1;
    return plan;
  }
  const tuning::Settings& settings = tuning.settings();
  const tuning::Band& band = tuning.band(collective, total);
  // inline_post_max (for measuring) replaces the bands' ways by a cap on a member's post.
  const std::size_t cap = settings.inlinePostMax;
  if (cap > 0 ? bytes > cap : band.way != tuning::Way::kInline) {
    const bool movesOnly = collective == Collective::kBroadcast ||
                           collective == Collective::kAllGather ||
                           collective == Collective::kAllToAll;
    const bool direct = cap > 0 || band.way == tuning::Way::kDirect;
    if (direct && settings.inlineDirect && movesOnly && peersReadable && ranks > 1 &&
        total >= algorithms::directFromBytes(ranks)) {
      plan.direct = true;
      plan.block = plan.step = count * es;
      plan.chunks = 1;
    }
    return plan;
  }
  plan.block = *posts == Posts::kNothing ? 0 : count * es;
  const bool blocks = *posts == Posts::kBlocks;
  plan.lends = cap == 0 && band.lend != tuning::Lend::kDefault;
  plan.chooses = plan.lends && peersReadable && band.lend == tuning::Lend::kChoose;
  plan.choosesCopy = band.copy == tuning::Copy::kChoose;
  const std::size_t whole = std::min(band.whole, shm::kInlineBytes);
  if (bytes <= whole) {  // one chunk (and no divisions: this runs on every call)
    plan.step = std::max(plan.block, es);
    plan.chunks = 1;
    return plan;
  }
  // Beyond that, a chunk of every block (all-to-all, reduce-scatter) fills at most `room` of the
  // slot, and a chunk of one block is `chunk` bytes.
  const std::size_t chunk = std::min(band.chunk, shm::kInlineBytes);
  const std::size_t pieces = blocks ? static_cast<std::size_t>(ranks) : 1;
  const std::size_t room = blocks ? std::min(band.room, shm::kInlineBytes) : whole;
  plan.step = std::max<std::size_t>(std::min(chunk, room / pieces) / es, 1) * es;
  plan.chunks = plan.block == 0 ? 1 : (plan.block + plan.step - 1) / plan.step;
  return plan;
}

}  // namespace ftcomm::detail
