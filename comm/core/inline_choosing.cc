// Where the members of a 2-rank inline collective choose, call by call, how to post
// (InlineChunking::chooses and choosesCopy; PostChoice decides): the bands, and the measurements
// behind them.
#include "core/inline_choosing.h"

#include "core/environment.h"
#include "transport/cpu_vendor.h"

namespace ftcomm::detail {

using algorithms::Collective;

namespace {

// 2 ranks on Zen 2; FTCOMM_INLINE_CHOOSE=1 lets them choose on any processor, 0 on none.
bool twoRanksChoose(int ranks) {
  static const int setting = envInt("FTCOMM_INLINE_CHOOSE", -1);
  return ranks == 2 && (setting == 1 || (setting < 0 && transport::amdZen2()));
}

}  // namespace

// At 2 ranks on Zen 2 a broadcast streams from 32 KiB to 64 MiB, in 256 KiB chunks, and a root
// whose buffer the peer cannot map chooses, call by call, between lending it (the peer reads it
// whole with process_vm_readv, as the direct form did) and copying it through its slot
// (InlineChunking::chooses, PostChoice). Neither wins every run: the VM moves a line from one
// vCPU to the other either fast (0.04 us, ftcomm-bench-handover) or slowly (0.19-0.25 us), from
// one minute to the next, and a copy through the slots is read from lines the other vCPU has
// just written (the lent buffer was written long before). Heap
// buffers, 2026-12-04 18:30-18:56 UTC, each run's ftcomm / OpenMPI busbw (BENCHMARKS.md, "Zen 2:
// the 2-rank broadcast's root chooses"):
//   - copied (FTCOMM_INLINE_LEND=0): 1 MiB 51-54 us, 1.86-2.22x, at the fast hand-over,
//     against 200-240 us, 0.64-0.69x, at the slow one; 4 MiB 193-223 us (2.16-2.55x) against
//     800-900 (0.66-0.86x);
//   - direct (FTCOMM_INLINE_CHOOSE=0, as before): 1 MiB 116-170 us and 4 MiB 476-615 us
//     at both, 0.89-1.01x;
//   - chosen, 10 runs alternating with direct: at the fast hand-over (2 runs) 1 MiB 60-68 us,
//     1.76-1.83x, and 4 MiB 210-298 us, 1.79-2.41x, where direct read 0.93-0.97x in its one fast
//     run; at the slow one (8 runs) 0.88-0.99x at 1 MiB and 0.95-1.00x at 4 MiB, against
//     direct's 0.89-0.98x and 0.94-1.01x.
// A root whose buffer comes from allocMem lends it whole, as it was read direct: 3 alternating
// runs, 32 KiB-64 MiB, the same within the noise (1 MiB 36.9 against 43.4 us).
// The allgather and all-to-all at 2 ranks on Zen 2 stream from 512 KiB (of the whole result, or
// input) too, rank 0 choosing for both (InlineCollective::agrees); they go direct below, where the
// choosing cost more than it gained (32 KiB 3.9-4.0 us against 3.5-3.6 direct, 64 KiB 5.4-5.9
// against 5.0-5.2, in both modes). Copying gains less than for a broadcast, since each member
// copies its block in and the other's out: at the fast hand-over all-to-all 1.31-1.46x at 512 KiB-2
// MiB (0.78-0.84x at 4 MiB), allgather 1.03-1.33x at 512 KiB-16 MiB, against 0.91-1.07x direct; at
// the slow one 0.49-0.82x. Chosen, alternating with direct (BENCHMARKS.md, "Zen 2: allgather and
// all-to-all choose too"): at the fast hand-over all-to-all 1.14-1.36x at 512 KiB-2 MiB and
// 0.96-0.99x at 4-8 MiB (one run), allgather 1.06-1.28x at 2-4 MiB and 1.09-1.15x at 16-64 MiB
// (2 runs), against 0.86-1.06x direct; at the slow one 0.92-1.08x against 0.91-1.15x, 6 runs
// each.
// FTCOMM_INLINE_CHOOSE: twoRanksChoose (for measuring, and the tests).
bool choosesAt(Collective collective, int ranks, std::size_t total) {
  constexpr std::size_t kExchangesFrom = std::size_t{512} << 10;
  const bool exchanges =
      collective == Collective::kAllGather || collective == Collective::kAllToAll;
  const bool moves = collective == Collective::kBroadcast || (exchanges && total >= kExchangesFrom);
  return moves && twoRanksChoose(ranks);
}

// At 2 ranks on Zen 2 a member that copies its input into its slots chooses, call by call,
// between plain stores and stores around the cache (InlineChunking::choosesCopy, PostChoice),
// from 8 KiB of input or result. At the slow hand-over a plain store into a line that the other
// vCPU read the round before first takes the line back from it, which costs more than the copy;
// stores around the cache do not (a 1 MiB copy 223 us plain against 59 around the cache). At the
// fast one plain stores are faster (a 1 MiB broadcast copied through the slots 53 us against 80).
// Forced around the cache at the slow hand-over (BENCHMARKS.md, "Zen 2: posts copied around the
// cache"): allreduce 16-256 KiB 3.4-35 us against 5.7-74, reduce 16 KiB-1 MiB 0.70-0.94x OpenMPI
// -> 1.48-2.10x, a broadcast copied through the slots 1 MiB 69 us against 221 (lent: 149); 4 KiB
// the same either way, so it starts at 8 KiB.
// Chosen against plain copies only (FTCOMM_INLINE_AROUND_CACHE=0), 3 alternating runs at the
// slow hand-over: allreduce 16-256 KiB 2.40-3.32x OpenMPI against 1.12-2.10x, reduce 16 KiB-2
// MiB 1.40-2.05x against 0.66-0.94x, broadcast 256 KiB-16 MiB 1.52-2.03x against 0.92-0.97x; at
// the fast one within 10% of plain copies at almost every size, since it copies plain there.
// At 4 ranks around the cache won for some collectives and sizes and lost for others (the
// 16-512 KiB allreduce 1.06-2.84x against 1.51-3.36x), so the choice stays at 2 ranks.
// FTCOMM_INLINE_CHOOSE: twoRanksChoose.
bool choosesCopyAt(int ranks, std::size_t total) {
  constexpr std::size_t kFrom = std::size_t{8} << 10;
  return total >= kFrom && twoRanksChoose(ranks);
}

}  // namespace ftcomm::detail
