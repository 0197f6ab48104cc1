// When a collective runs inline, and in what chunks (inline_collective.h): the limits measured
// per collective, rank count and processor maker, and the communicators that have inline areas.
#include <algorithm>

#include "core/environment.h"
#include "core/inline_choosing.h"
#include "core/inline_collective.h"
#include "core/inline_posts.h"
#include "transport/cpu_vendor.h"

namespace ftcomm::detail {

using algorithms::Collective;

namespace {

// The slot's size when the limits below were measured, before 2026-12-03 (256 KiB): the unit of
// inlineLimit's rules everywhere but on Zen 5.
constexpr std::size_t kMeasuredSlot = std::size_t{256} << 10;

// Collectives of up to this many bytes in all run inline in one chunk, choosing nothing: below
// every limit (the least, inlineLimit's directFromBytes at 2 ranks, is 32 KiB), every chunk
// (FTCOMM_INLINE_MAX_KIB and FTCOMM_INLINE_CHUNK_KIB count whole KiB) and every choice (from
// 8 KiB: inline_choosing.cc). inlineChunking decides them first, and InlineCollective asks
// nothing more of a collective that neither lends nor chooses: looking it all up took the
// 8-byte allreduce 0.39 against 0.35 us (2 ranks, Zen 2, fast hand-over: docs/BENCHMARKS.md).
constexpr std::size_t kSmallTotal = 1024;

// How much of a slot a collective uses: a post of up to `whole` bytes goes in one chunk; a larger
// one streams in chunks of `chunk` bytes of every block.
struct SlotUse {
  std::size_t whole = kMeasuredSlot;
  std::size_t chunk = std::size_t{64} << 10;
  // What a chunk of every block (all-to-all, reduce-scatter) may fill of the slot.
  std::size_t room = kMeasuredSlot;
};

// On Zen 5 at 2-4 ranks: a post of up to this many bytes goes in one chunk, a larger one
// streams in chunks of it.
constexpr std::size_t kZen5Chunk = std::size_t{512} << 10;

// 64 KiB chunks in 256 KiB slots everywhere until 2026-12-03, chosen so that each chunk stays in
// cache on both sides. On AMD Zen 5 (2 and 4 ranks, 2 vCPUs) the rounds cost more than the cache
// misses: every chunk is a post, a wait and a consumed mark, each a cache line handed between the
// cores (0.06-0.43 us a hand-over there, ftcomm-bench-handover). So there a post of up to 512 KiB
// goes in one chunk, and a larger one streams in chunks of 512 KiB (of every block, 128 KiB at 4
// ranks, for all-to-all and reduce-scatter). Against 64 KiB chunks in 256 KiB slots, 4
// alternating runs, medians of ftcomm / OpenMPI busbw (BENCHMARKS.md, "Fewer, larger chunks on
// Zen 5"):
//   - 4 ranks on 2 cores, 1-16 MiB: allreduce 0.81-1.17x -> 1.11-1.45x, reduce 0.85-1.86x ->
//     1.60-2.86x, broadcast 1.03-1.52x -> 1.48-2.75x, all-to-all 0.96-1.06x -> 1.06-1.25x,
//     allgather 1.50-2.25x -> 1.85-2.28x;
//   - 2 ranks, 512 KiB-8 MiB: broadcast 1.79-2.08x -> 2.13-2.49x, all-to-all 0.76-0.97x ->
//     0.83-1.09x, allgather 0.94-1.26x -> 1.00-1.30x, reduce even to 20% faster, allreduce
//     1.55x -> 1.97x at 512 KiB and within 6% either way at 1-8 MiB.
// The cost: at 2 ranks from 16 MiB, at the fast hand-over, 512 KiB chunks lost 10-20% (allreduce
// 2.38x -> 1.97x at 16 MiB, broadcast 2.13-2.72x -> 1.73-2.43x, reduce 2.24-2.46x ->
// 2.05-2.19x at 16-64 MiB). Going back to 64 KiB chunks there (3 alternating runs, 4-64 MiB) won
// at the fast hand-over (allreduce 16 MiB 2.63x against 2.05x) and lost at the slow one
// (broadcast 16-64 MiB 1.50-1.56x against 1.65-2.05x), so one chunk size stays. 256 KiB chunks in
// the old slots gained about half as much as 512 KiB ones; 1 MiB slots lost where a post of 1 MiB
// went in one chunk (a 1 MiB allreduce 0.80-0.86x: nothing overlaps in one chunk).
// A chunk of every block was as large as the others' chunk of one (512 KiB in all, 128 KiB of
// each block at 4 ranks) until 2026-12-04. Since then the slot holds 2 MiB and a chunk of every
// block takes 512 KiB of each to 4 ranks, so that a 4-rank all-to-all of 64 MiB goes in 32
// rounds instead of 128 (each round wakes and waits for 4 processes on 2 cores). 3 alternating
// runs, slow hand-over, medians of ftcomm / OpenMPI busbw, 1-64 MiB: 4-rank all-to-all
// 0.85-1.24x -> 1.12-1.43x (4 MiB 0.88 -> 1.21x, 32 MiB 0.85 -> 1.28x), reduce-scatter about
// even (40-85x -> 43-82x); 2-rank all-to-all 0.92-0.96x -> 0.97-1.04x at 1-8 MiB and 1.08-1.23x
// -> 1.05-1.09x at 16-64 MiB; the collectives of one block did not change (BENCHMARKS.md,
// "Larger chunks of every block").
// FTCOMM_INLINE_CHUNK_KIB sets the chunk (for measuring), and with it the most a post may put in
// one chunk and what a chunk of every block may fill, as on Zen 5. Until 2026-12-04 it set the
// chunk alone, which then took at most 256 KiB of one block (`whole`) beyond Zen 5.
// On Zen 2, a broadcast at 2-4 ranks streams where the direct form would run
// (streamsInPlaceOfDirect), in chunks of a whole slot (measured at 4 ranks; at 2 ranks the runs
// under choosesAt, below, used them): 256 KiB chunks against 64 KiB ones, 2 alternating runs, 4
// ranks, heap buffers, 512 KiB-64 MiB, 9-21% less time at each size (2 MiB 490 against 608 us, 16
// MiB 5.5 against 6.0 ms; BENCHMARKS.md, "Zen 2: the 4-rank broadcast streams").
SlotUse slotUse(Collective collective, int ranks) {
  static const int chunkKib = envInt("FTCOMM_INLINE_CHUNK_KIB", 0);
  static const bool zen5 = transport::amdZen5OrLater();
  SlotUse use;
  if (zen5 && ranks <= 4) {
    use.whole = use.chunk = kZen5Chunk;
    use.room = std::min(kZen5Chunk * static_cast<std::size_t>(ranks), shm::kInlineBytes);
  } else if (collective == Collective::kBroadcast && transport::amdZen2()) {
    use.chunk = use.whole;
  }
  if (chunkKib > 0) {  // as on Zen 5: a post of up to one chunk in one, a chunk of every block
    use.whole = use.chunk = std::min(static_cast<std::size_t>(chunkKib) << 10, shm::kInlineBytes);
    use.room = std::min(use.chunk * static_cast<std::size_t>(ranks), shm::kInlineBytes);
  }
  return use;
}

// The most bytes, counted as the algorithm choice counts them (algorithms/registry.h: the vector,
// or the whole result of an allgather, the whole input of a reduce-scatter or all-to-all), of a
// collective that runs inline. Past one slot a collective streams in chunks, in the calling
// thread up to 64 MiB a block (submit_inline.cc; from the engine beyond, reached only through
// FTCOMM_INLINE_MAX_KIB, which caps a member's post instead, for measuring). Measured against the
// direct algorithms in alternating runs (BENCHMARKS.md), and different on the two kinds of
// machine these benchmarks ran on.
//
// On AMD EPYC:
//   - reduce streams to 2 MiB: a direct reduce copies on one core only, streaming on both.
//     Streaming's speed depends on the run (BENCHMARKS.md, "Streaming is bimodal"); reduce
//     gained in the median of 8 alternating runs;
//   - broadcast beyond 2 ranks goes direct past one slot (it streamed to 2 MiB until
//     2026-12-02): with heap buffers the two were even at 512 KiB-2 MiB at 4 ranks (3-4
//     alternating runs: 1 MiB 250 against 266 us, 2 MiB 454 against 519, 512 KiB 122 against
//     133), and with buffers from allocMem, which the readers map, direct was 3.5-4.5x faster
//     (1 MiB 58-73 against 216-247 us); at 256 KiB heap buffers still streamed faster (50
//     against 69 us); on Zen 2 it streams again, in larger chunks (streamsInPlaceOfDirect);
//   - a 2-rank broadcast goes direct (the inline form) as soon as the registry allows it, as on
//     Intel: streamed, it read 0.55-0.68x OpenMPI from 128 KiB to 2 MiB (and 0.1-0.2x in a
//     run in streaming's slow mode), direct 0.86-1.19x (1 MiB: 88-104 against 138-190 us;
//     2026-12-01 20:00-20:15 UTC, 7 alternating runs in all); on Zen 2 it streams with its
//     root choosing how (choosesAt, below);
//   - reduce-scatter, and allreduce at 2 ranks, do not stream: since the direct algorithms
//     reduce straight into the result (2026-12-01), they beat streaming at 512 KiB-2 MiB in the
//     median of 8-10 alternating runs (allreduce 1.05-1.19x OpenMPI against 0.80-0.87x;
//     reduce-scatter 1.6-1.9x faster than streaming);
//   - allreduce beyond 2 ranks streams to 512 KiB: there the direct algorithm's two notice
//     rounds wait for every rank, which on a crowded host costs more than the copies streaming
//     adds (3 and 4 ranks on 2 cores, 512 KiB-1 MiB: streamed 14-20% faster in 4-6 runs each,
//     on an earlier EPYC VM). At 1 MiB it no longer did on the EPYC of 2026-12-01 21:10 UTC: 4
//     ranks, 7 alternating runs, direct 642 us median (0.94x OpenMPI) against 707 us (0.75x)
//     streamed; 512 KiB even (334 against 361 us, 0.90 against 0.94x);
//   - beyond 2 MiB, streamed from the engine, it was at par with the direct algorithms or
//     slower, except reduce, and that only with waiters that spin for as long as anything
//     moves, which put other runs into a slow mode (BENCHMARKS.md);
//   - allgather and all-to-all gain nothing past one slot; at 2 ranks the direct form (inline
//     posts as notices, below) beats a single slot from 128 KiB of all-to-all (11.2 against
//     12.0 us; 256 KiB even; 8 alternating runs, 2026-12-01 10:57 UTC) and from 64 KiB of
//     allgather (128 KiB: 9.6-12.1 against 16.5-18.7 us; 64 KiB even to 1.3x faster; at 32 KiB
//     the slot still wins, 4.0 against 4.5-5.0; 5 alternating runs, 20:00-20:15 UTC). On Zen 2
//     (family 0x17) at 2 ranks they go direct as soon as the registry allows it (32 KiB), as
//     broadcast does: a slot's 32-64 KiB, read while still in the writer's cache, depend there
//     on the hand-over's mode, and the direct form does not. 2026-12-04 16:00-16:27 UTC,
//     alternating runs, nearly all at the slow hand-over, each run's ftcomm / OpenMPI busbw:
//     all-to-all 32 KiB 1.08-1.35x direct (2.4-4.4 us, 14 runs) against 0.64-1.58x through the
//     slot (2.0-7.6 us, 17 runs), 64 KiB 1.09-1.24x (3.5-5.4 us) against 0.51-1.09x (3.6-11.4
//     us); allgather 32 KiB 1.21-1.41x (3.4-3.6 us) against 0.70-0.82x (5.6-6.6 us), 9 runs
//     each (64 KiB was direct already). BENCHMARKS.md, "Zen 2: 2-rank allgather and all-to-all
//     direct from 32 KiB".
// On AMD EPYC Zen 5 (family 0x1a), where copyBytes is memcpy (transport/copy_bytes.h), every
// collective streams to 64 MiB at 2-4 ranks. Streamed against the limits below (measured on
// Zen 3), 2026-12-02 14:00-14:20 UTC, 3-8 alternating runs each (BENCHMARKS.md, "Zen 5"):
//   - 2 ranks, to 2 MiB: broadcast 2.8-3.3x OpenMPI against 0.89-0.93x from 256 KiB (3.6-3.9x
//     against 0.95-0.98x from 32 to 128 KiB), allgather 1.05-1.14x against 0.89-0.97x,
//     all-to-all 1.08-1.30x against 0.91-0.99x, allreduce 1.38-1.54x against 1.16-1.25x,
//     reduce-scatter twice as fast; 4 ranks at 512 KiB-2 MiB: broadcast 2.0-2.2x against
//     0.89-1.15x, all-to-all 1.18-1.43x against 0.95-1.03x, allgather at 2 MiB 2.6x against
//     1.03x, reduce-scatter and allreduce at 2 MiB twice as fast, allreduce at 512 KiB-1 MiB
//     and reduce even;
//   - 4-16 MiB, streamed in the calling thread (submit_inline.cc): 2 ranks, broadcast
//     2.9-4.2x against 0.79-0.90x, allreduce 1.61-2.59x against 0.93-1.32x, allgather
//     1.16-1.55x against 0.69-0.88x, all-to-all 1.02-1.17x against 0.79-0.87x, reduce
//     2.7-3.4x against 1.2-1.3x; 4 ranks, broadcast 2.3-3.2x against 1.0-1.1x, all-to-all
//     1.01-1.10x against 0.82-0.94x, allreduce 1.5-1.9x against 1.0-1.2x;
//   - 32-64 MiB, past the 32 MiB L3, streamed from the engine (16 MiB was the calling thread's
//     limit until 2026-12-02 17:10 UTC), fell to 0.06-0.5x in 4 of 6 runs; from the calling
//     thread it did not, 8 alternating runs at 2 ranks, 16:59-17:05 UTC: broadcast 2.16-2.34x
//     against 0.96-0.99x, allgather 1.31-1.37x against 0.90-0.94x, all-to-all 1.04-1.17x
//     against 0.91-0.92x, allreduce 3.99-4.39x against 2.46-2.58x, reduce 2.4x against 1.3x;
//     4 ranks (3 runs) ahead or even at each (all-to-all 0.99-1.00x against 0.93-0.97x).
//     With allocMem buffers it is mixed (the 64 MiB allreduce 4.16x against the direct
//     algorithms' 5.21x, the allgather 1.41-1.69x against 1.33-1.41x), ahead of OpenMPI by 1.3x
//     or more either way. Beyond 64 MiB it was not measured: the direct algorithms take it.
// Beyond 4 ranks it was not measured, so the Zen 3 limits hold there.
// A broadcast at 3-4 ranks went direct past one slot from 2026-12-03 (3fec0bc) until the chunks
// grew to 512 KiB the same day (slotUse): with 64 KiB chunks, at the slow hand-over (the same VM
// moves a line between its two vCPUs in 0.06-0.08 us or in 0.29-0.43 us, from one minute to the
// next: ftcomm-bench-handover), streaming had read 0.76-0.80x OpenMPI at 512 KiB-4 MiB against
// 0.88-0.98x direct. With 512 KiB chunks, 4 alternating runs at the slow hand-over, streaming
// reads 1.48-2.75x from 512 KiB to 64 MiB against 0.84-1.52x for the build that went direct.
// On Intel Xeon (Sapphire Rapids) a core reads what another core just wrote (a post) at a
// fraction of the speed at which it reads a buffer at rest, which is what the direct algorithms
// read, so they win from smaller sizes (3 alternating runs each, 2026-12-01):
//   - at 2 ranks broadcast, allgather and all-to-all go direct as soon as the registry allows it
//     (32 KiB; at 64 KiB direct took 6.8-7.0 us against 10.7-11.2 us inline), reduce-scatter from
//     128 KiB (9.7 against 15.3 us);
//   - at 4 ranks allreduce goes direct from 256 KiB (139 against 187 us; 1 MiB 645 against
//     734 us), all-to-all and reduce-scatter from 256 KiB (53 against 87 us, 75 against 93 us),
//     allgather from 512 KiB;
//   - broadcast beyond 2 ranks and reduce stream to 2 MiB as on AMD (4 ranks, 1 MiB: broadcast
//     257 against 289 us direct, reduce 407 against 568 us), allreduce at 2 ranks inline to
//     256 KiB as on AMD.
// On the Xeon of 2026-12-02 (family 6 model 167, 105 MiB L3), streamed from the calling thread
// (to 64 MiB since then: submit_inline.cc), a broadcast at 3-4 ranks streams to 64 MiB and one
// at 2 ranks from 8 MiB to 64 MiB (intelStreamsBroadcast), with heap buffers, 2 alternating runs
// each (BENCHMARKS.md, "Xeon, 2026-12-02"): 2 ranks 8-64 MiB 1.12-1.47x OpenMPI against
// 0.92-1.01x direct (16 MiB 2.97 against 4.17 ms), at 1-4 MiB streaming lost (0.54-0.97x
// against 0.96-1.06x); 4 ranks 4-64 MiB 0.98-1.59x against 0.69-1.29x (8 MiB 3.43 against
// 5.27 ms). Allgather and all-to-all streamed lost at every size from 1 to 64 MiB at 2 ranks
// (0.46-0.95x against 0.94-1.04x), and so did allreduce (16 MiB 1.21x against 1.50x).

// The bands past inlineLimit that still run inline, streamed in place of the direct form: a
// broadcast on Intel (the comment above) and on Zen 2 at 2 and 4 ranks to 64 MiB, at 3 ranks to
// 4 MiB; on Zen 2 at 2 ranks an allgather and all-to-all from 512 KiB to 64 MiB
// (inline_choosing.cc).
// There a root whose buffer the peers map lends it whole (InlineChunking::lends), as the direct
// form reads it.
//
// On Zen 2 (AMD family 0x17: the EPYC of 2026-12-04, 16 MiB L3), at 4 ranks, 512 KiB to
// 64 MiB, medians of ftcomm / OpenMPI busbw (BENCHMARKS.md, "Zen 2: the 4-rank broadcast
// streams"):
//   - heap buffers, 3 alternating runs, all at the slow hand-over: streamed 1.26-2.35x against
//     0.74-1.51x direct (2 MiB 490 against 896 us, 16 MiB 5.3 against 7.0 ms, 64 MiB 21.5
//     against 23.5 ms); before, 2 runs at both speeds, 1.51-1.96x against 0.81-1.34x, and 4 at
//     the slow one, 1.25-2.21x against 0.78-1.20x;
//   - allocMem buffers, 3 alternating runs: lent whole 1.54-4.10x against 1.43-3.49x direct (1
//     MiB 92 against 78 us, 4 MiB 564 against 659); streamed through the slots without lending
//     it had read 1.48-2.48x (1 MiB 161 us).
// At 3 ranks (2 readers on the 2 cores, where 4 ranks have 3), heap buffers, 4 alternating runs,
// nearly all at the slow hand-over: streamed 1.07-1.28x from 1 to 4 MiB against 0.99-1.02x
// direct (2 MiB 443 against 577 us), but 0.75-1.09x from 8 to 64 MiB against 0.95-1.09x (16 MiB
// 5.2 against 4.0 ms, 64 MiB 19.8 against 15.1 ms).
// Zen and Zen+ (also family 0x17) were not measured, nor lending on Intel, where it reads what
// the direct form reads.
bool streamsInPlaceOfDirect(Collective collective, int ranks, std::size_t total) {
  constexpr std::size_t kFrom = std::size_t{8} << 20, kTo = std::size_t{64} << 20;
  if (total > kTo) return false;
  if (choosesAt(collective, ranks, total)) return true;
  if (collective != Collective::kBroadcast || ranks > 4) return false;
  constexpr std::size_t kZen2ThreeRanksTo = std::size_t{4} << 20;
  if (transport::amdProcessor())
    return transport::amdZen2() && (ranks == 4 || (ranks == 3 && total <= kZen2ThreeRanksTo));
  return ranks > 2 || total >= kFrom;
}

std::size_t inlineLimit(Collective collective, int ranks) {
  constexpr std::size_t kStreamBytes = std::size_t{2} << 20;
  constexpr std::size_t kZen5StreamBytes = std::size_t{64} << 20;
  constexpr std::size_t kSlot = kMeasuredSlot;
  const bool two = ranks <= 2;
  const std::size_t direct = algorithms::directFromBytes(ranks) - 1;
  if (transport::amdProcessor()) {
    if (transport::amdZen5OrLater() && ranks <= 4) {
      return kZen5StreamBytes;
    }
    switch (collective) {
      case Collective::kBroadcast:
        return two ? direct : kSlot;
      case Collective::kReduce:
        return kStreamBytes;
      case Collective::kAllReduce:
        return two ? kSlot : kStreamBytes / 4;
      case Collective::kAllGather:
        if (two && transport::amdZen2()) return direct;
        return two ? kSlot / 8 : kSlot * static_cast<std::size_t>(ranks);
      case Collective::kAllToAll:
        if (two && transport::amdZen2()) return direct;
        return two ? kSlot / 4 : kSlot;
      default:
        return kSlot;
    }
  }
  switch (collective) {
    case Collective::kBroadcast:
      return two ? direct : kStreamBytes;
    case Collective::kReduce:
      return kStreamBytes;
    case Collective::kAllReduce:
      return two ? kSlot : kSlot / 2;
    case Collective::kAllGather:
      return two ? direct : kSlot;
    case Collective::kAllToAll:
      return two ? direct : kSlot / 2;
    case Collective::kReduceScatter:
      return two ? kSlot / 4 : kSlot / 2;
    default:
      return kSlot;
  }
}

}  // namespace

std::shared_ptr<const InlineGroup> makeInlineGroup(const std::shared_ptr<shm::ShmDomain>& domain,
                                                   const std::vector<int>& members,
                                                   const std::vector<int>& areas,
                                                   const std::vector<std::uint16_t>& channels) {
  static const bool enabled = envSwitch("FTCOMM_INLINE", true);
  if (!enabled || !domain || members.size() != areas.size() || members.size() != channels.size())
    return nullptr;
  auto group = std::make_shared<InlineGroup>();
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

InlineChunking inlineChunking(Collective collective, std::size_t count, DataType dtype, int ranks,
                              bool peersReadable) {
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
  static const int overridden = envInt("FTCOMM_INLINE_MAX_KIB", 0);
  const bool pastLimit = total > inlineLimit(collective, ranks);
  const bool inPlaceOfDirect = pastLimit && streamsInPlaceOfDirect(collective, ranks, total);
  if (overridden > 0 ? bytes > static_cast<std::size_t>(overridden) * 1024
                     : pastLimit && !inPlaceOfDirect) {
    // Where the registry would pick the direct algorithm: its inline form.
    static const bool directForm = envSwitch("FTCOMM_INLINE_DIRECT", true);
    const bool movesOnly = collective == Collective::kBroadcast ||
                           collective == Collective::kAllGather ||
                           collective == Collective::kAllToAll;
    if (directForm && movesOnly && peersReadable && ranks > 1 &&
        total >= algorithms::directFromBytes(ranks)) {
      plan.direct = true;
      plan.block = plan.step = count * es;
      plan.chunks = 1;
    }
    return plan;
  }
  plan.block = *posts == Posts::kNothing ? 0 : count * es;
  const bool blocks = *posts == Posts::kBlocks;
  plan.lends = inPlaceOfDirect && overridden <= 0;
  plan.chooses = plan.lends && peersReadable && choosesAt(collective, ranks, total);
  plan.choosesCopy = choosesCopyAt(ranks, total);
  const SlotUse use = slotUse(collective, ranks);
  if (bytes <= use.whole) {  // one chunk (and no divisions: this runs on every call)
    plan.step = std::max(plan.block, es);
    plan.chunks = 1;
    return plan;
  }
  // Beyond that, a chunk of every block (all-to-all, reduce-scatter) of the same size as the
  // others' chunk of their one block while the slot holds them all (to 4 ranks). Against the
  // chunk split in pieces, 2 alternating runs, 256 KiB to 64 MiB: at 2 ranks the all-to-all up
  // to 20% faster (512 KiB-16 MiB) and the reduce-scatter 20-30% (to 16 MiB); at 4 ranks the
  // all-to-all 1.3-1.65x faster (0.43-0.73x OpenMPI -> 0.73-1.02x) and the reduce-scatter
  // 1.2-2.4x.
  const std::size_t pieces = blocks ? static_cast<std::size_t>(ranks) : 1;
  const std::size_t room = blocks ? use.room : use.whole;
  plan.step = std::max<std::size_t>(std::min(use.chunk, room / pieces) / es, 1) * es;
  plan.chunks = plan.block == 0 ? 1 : (plan.block + plan.step - 1) / plan.step;
  return plan;
}

}  // namespace ftcomm::detail
