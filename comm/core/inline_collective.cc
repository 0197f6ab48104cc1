#include "core/inline_collective.h"

#include <algorithm>
#include <cstring>
#include <iostream>
#include <string>

#include "algorithms/reduction.h"
#include "core/environment.h"
#include "transport/copy_bytes.h"
#include "transport/cpu_vendor.h"

namespace ftcomm::detail {

using algorithms::Collective;

namespace {

// What each collective's members post: the whole input, one block per member, or only the
// root's data (the others post an empty slot, which still says they arrived).
enum class Posts { kInput, kBlocks, kRoot, kNothing };

std::optional<Posts> postsOf(Collective collective) {
  switch (collective) {
    case Collective::kAllReduce:
    case Collective::kReduce:
    case Collective::kAllGather:
      return Posts::kInput;
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return Posts::kBlocks;
    case Collective::kBroadcast:
      return Posts::kRoot;
    case Collective::kBarrier:
      return Posts::kNothing;
    default:
      return std::nullopt;  // gather, scatter and the V collectives go by messages
  }
}

std::size_t postBytes(Posts posts, std::size_t count, std::size_t elementBytes, int ranks) {
  switch (posts) {
    case Posts::kInput:
    case Posts::kRoot:
      return count * elementBytes;
    case Posts::kBlocks:
      return static_cast<std::size_t>(ranks) * count * elementBytes;
    case Posts::kNothing:
      return 0;
  }
  return 0;
}

void packSignature(const transport::OpSignature& signature, std::uint64_t (&words)[3]) {
  static_assert(sizeof words == sizeof signature);
  std::memcpy(words, &signature, sizeof words);
}

std::string describeWords(const std::uint64_t (&words)[3]) {
  transport::OpSignature signature;
  std::memcpy(&signature, words, sizeof signature);
  return transport::describe(signature);
}

bool sameWords(const std::uint64_t (&a)[3], const std::uint64_t (&b)[3]) {
  return a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
}

// Beyond a slot, a collective streams through the slots in chunks of this size (per member's
// post), while that beats the direct algorithms (measured: inlineLimit).
std::size_t streamChunkBytes() {
  static const std::size_t bytes = [] {
    const int kib = envInt("FTCOMM_INLINE_CHUNK_KIB", 64);
    return std::min(static_cast<std::size_t>(kib > 0 ? kib : 64) * 1024, shm::kInlineBytes);
  }();
  return bytes;
}

// The most bytes, counted as the algorithm choice counts them (algorithms/registry.h: the vector,
// or the whole result of an allgather, the whole input of a reduce-scatter or all-to-all), of a
// collective that runs inline. Past one slot a collective streams in chunks, in the calling
// thread up to 2 MiB (submit_inline.cc; from the engine beyond, reached only through
// FTCOMM_INLINE_MAX_KIB, which caps a member's post instead, for measuring). Measured against the
// direct algorithms in alternating runs (BENCHMARKS.md), and different on the two kinds of
// machine these benchmarks ran on.
//
// On AMD EPYC:
//   - broadcast and reduce stream to 2 MiB: a direct reduce or broadcast copies on one core
//     only, streaming on both. Streaming's speed depends on the run (BENCHMARKS.md, "Streaming
//     is bimodal"); reduce gained in the median of 8 alternating runs, broadcast came out about
//     even over two days;
//   - reduce-scatter, and allreduce at 2 ranks, do not stream: since the direct algorithms
//     reduce straight into the result (2026-12-01), they beat streaming at 512 KiB-2 MiB in the
//     median of 8-10 alternating runs (allreduce 1.05-1.19x OpenMPI against 0.80-0.87x;
//     reduce-scatter 1.6-1.9x faster than streaming);
//   - allreduce beyond 2 ranks streams to 1 MiB: there the direct algorithm's two notice rounds
//     wait for every rank, which on a crowded host costs more than the copies streaming adds
//     (3 and 4 ranks on 2 cores, 512 KiB-1 MiB: streamed 14-20% faster in 4-6 runs each);
//   - beyond 2 MiB, streamed from the engine, it was at par with the direct algorithms or
//     slower, except reduce, and that only with waiters that spin for as long as anything
//     moves, which put other runs into a slow mode (BENCHMARKS.md);
//   - allgather and all-to-all gain nothing past one slot.
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
std::size_t inlineLimit(Collective collective, int ranks) {
  constexpr std::size_t kStreamBytes = std::size_t{2} << 20;
  constexpr std::size_t kSlot = shm::kInlineBytes;
  const bool two = ranks <= 2;
  if (transport::amdProcessor()) {
    switch (collective) {
      case Collective::kBroadcast:
      case Collective::kReduce:
        return kStreamBytes;
      case Collective::kAllReduce:
        return two ? kSlot : kStreamBytes / 2;
      case Collective::kAllGather:
        return kSlot * static_cast<std::size_t>(ranks);
      default:
        return kSlot;
    }
  }
  const std::size_t direct = algorithms::directFromBytes(ranks) - 1;
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
                                                   const std::vector<int>& areas) {
  static const bool enabled = [] {
    const int value = envInt("FTCOMM_INLINE", 1);
    if (value == -2)
      std::cerr << "ftcomm: FTCOMM_INLINE is not 0 or 1; inline collectives stay on\n";
    return value != 0;
  }();
  if (!enabled || !domain || members.size() != areas.size()) return nullptr;
  auto group = std::make_shared<InlineGroup>();
  group->domain = domain;
  group->members = members;
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
  static const int overridden = envInt("FTCOMM_INLINE_MAX_KIB", 0);
  if (overridden > 0 ? bytes > static_cast<std::size_t>(overridden) * 1024
                     : total > inlineLimit(collective, ranks)) {
    // Where the registry would pick the direct algorithm: its inline form.
    static const bool directForm = envInt("FTCOMM_INLINE_DIRECT", 1) != 0;
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
  // One chunk while it fits a slot; beyond, pieces that stay in cache on both sides.
  const std::size_t pieces = *posts == Posts::kBlocks ? static_cast<std::size_t>(ranks) : 1;
  const std::size_t chunk = bytes <= shm::kInlineBytes ? shm::kInlineBytes : streamChunkBytes();
  plan.step = std::max<std::size_t>(chunk / pieces / es, 1) * es;
  plan.chunks = plan.block == 0 ? 1 : (plan.block + plan.step - 1) / plan.step;
  return plan;
}

void announceCollective(const InlineGroup& group, int rank, std::uint64_t seq,
                        const transport::OpSignature& signature) {
  shm::InlineArea& area = *group.areas[static_cast<std::size_t>(rank)];
  // A sequence lock: 0 while the signature is rewritten, then the sequence number.
  std::uint64_t words[3];
  packSignature(signature, words);
  area.announced.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (int i = 0; i < 3; ++i) area.announcedSignature[i].store(words[i], std::memory_order_relaxed);
  area.announced.store(seq, std::memory_order_release);
}

InlineCollective::InlineCollective(const InlineGroup& group, int rank, Collective collective,
                                   const algorithms::CollectiveArgs& args,
                                   const InlineChunking& plan, std::uint64_t firstIndex,
                                   std::uint64_t seq, const transport::OpSignature& signature)
    : group_(group),
      rank_(rank),
      n_(static_cast<int>(group.areas.size())),
      collective_(collective),
      args_(args),
      plan_(plan),
      seq_(seq),
      index_(firstIndex),
      slot_(static_cast<int>(firstIndex % 2)) {
  packSignature(signature, signature_);
  const bool blocks = postsOf(collective) == Posts::kBlocks;
  near_ = plan.chunks <= 1 && plan.block * (blocks ? n_ : 1) <= shm::kNearBytes;
}

std::size_t InlineCollective::chunkBytes() const {
  const std::size_t offset = chunk_ * plan_.step;
  return offset >= plan_.block ? 0 : std::min(plan_.step, plan_.block - offset);
}

bool InlineCollective::keepsInput() const {
  // Not in place: folding into the result would overwrite the input before its turn.
  return collective_ == Collective::kReduce && rank_ == args_.root && args_.send != args_.recv;
}

const std::byte* InlineCollective::payload(int rank) const {
  const shm::InlineSlot& slot = group_.areas[static_cast<std::size_t>(rank)]->slots[slot_];
  return near_ ? slot.near : slot.payload;
}

bool InlineCollective::mayPost() const {
  if (index_ <= 2) return true;
  // Every member must have read this member's previous post in this slot (index - 2): the
  // peers, and this member itself (its own result comes from its post too). A peer's last post,
  // in the other slot, usually says so already.
  const std::uint64_t needed = index_ - 2;
  for (int p = 0; p < n_; ++p) {
    const shm::InlineArea& area = *group_.areas[static_cast<std::size_t>(p)];
    const shm::InlineSlot& last = area.slots[1 - slot_];
    if (p != rank_ && last.index.load(std::memory_order_acquire) == index_ - 1 &&
        last.consumedOther.load(std::memory_order_relaxed) >= needed) {
      continue;
    }
    if (area.consumed[slot_].load(std::memory_order_acquire) < needed) return false;
  }
  return true;
}

void InlineCollective::post() {
  shm::InlineArea& mine = *group_.areas[static_cast<std::size_t>(rank_)];
  shm::InlineSlot& slot = mine.slots[slot_];
  const auto posts = *postsOf(collective_);
  const std::size_t offset = chunk_ * plan_.step, length = chunkBytes();
  const auto* in = static_cast<const std::byte*>(args_.send);
  std::byte* to = near_ ? slot.near : slot.payload;
  if (plan_.direct) {
    const std::uint64_t addresses[2] = {reinterpret_cast<std::uint64_t>(args_.send),
                                        reinterpret_cast<std::uint64_t>(args_.recv)};
    std::memcpy(slot.near, addresses, sizeof addresses);
  } else if (keepsInput()) {
    // A reduce's root reads its own input where it is; its post only says it arrived.
  } else if (length > 0 &&
             (posts == Posts::kInput || (posts == Posts::kRoot && rank_ == args_.root))) {
    // A broadcast's data is in its one buffer (send and recv are the same).
    transport::copyBytes(to, in + offset, length);
  } else if (length > 0 && posts == Posts::kBlocks) {
    // This chunk of every block, packed.
    for (int p = 0; p < n_; ++p) {
      const auto at = static_cast<std::size_t>(p);
      transport::copyBytes(to + at * length, in + at * plan_.block + offset, length);
    }
  }
  slot.seq = seq_;
  std::memcpy(slot.signature, signature_, sizeof signature_);
  slot.consumedOther.store(mine.consumed[1 - slot_].load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
  slot.index.store(index_, std::memory_order_release);
  posted_ = true;
  woken_ = false;
}

void InlineCollective::wakePeers() {
  if (woken_) return;
  woken_ = true;
  // Nothing else announces a post: wake the peers that sleep. Done once this member has looked
  // at the peers' posts (and, when they are all there, computed its result) rather than right
  // after its own: the check's fence waits for the post to reach the peers' caches, which by
  // then has mostly happened (an 8-byte allreduce spent 12% of its time in that fence).
  for (int p = 0; p < n_; ++p) {
    if (p != rank_) group_.domain->wakeMember(group_.members[static_cast<std::size_t>(p)]);
  }
}

Status InlineCollective::checkPosted(int peer, const shm::InlineSlot& slot) const {
  if (slot.seq == seq_ && sameWords(slot.signature, signature_)) return Status::Ok();
  return Status(StatusCode::kMismatch,
                "rank " + std::to_string(peer) + " called " + describeWords(slot.signature) +
                    " (#" + std::to_string(slot.seq) + ") where rank " + std::to_string(rank_) +
                    " called " + describeWords(signature_) + " (#" + std::to_string(seq_) + ")");
}

Status InlineCollective::checkAnnounced(int peer) const {
  const shm::InlineArea& area = *group_.areas[static_cast<std::size_t>(peer)];
  if (area.announced.load(std::memory_order_acquire) != seq_) return Status::Ok();
  std::uint64_t words[3];
  for (int i = 0; i < 3; ++i) words[i] = area.announcedSignature[i].load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (area.announced.load(std::memory_order_relaxed) != seq_) return Status::Ok();  // rewritten
  return Status(StatusCode::kMismatch, "rank " + std::to_string(peer) + " runs " +
                                           describeWords(words) + " (#" + std::to_string(seq_) +
                                           ") with messages where rank " + std::to_string(rank_) +
                                           " runs " + describeWords(signature_) +
                                           " in shared memory (inline): their sizes differ");
}

Result<bool> InlineCollective::poll(std::uint64_t chunks) {
  stoppedAtLimit_ = false;
  for (std::uint64_t done = 0; chunk_ < plan_.chunks; ++done) {
    if (done == chunks) {
      stoppedAtLimit_ = true;
      return false;
    }
    if (!posted_) {
      if (!mayPost()) return false;
      post();
    }
    for (; next_ < n_; ++next_) {
      if (next_ == rank_) continue;
      const shm::InlineSlot& slot = group_.areas[static_cast<std::size_t>(next_)]->slots[slot_];
      if (slot.index.load(std::memory_order_acquire) != index_) {
        wakePeers();
        FTCOMM_RETURN_IF_ERROR(checkAnnounced(next_));
        return false;
      }
      FTCOMM_RETURN_IF_ERROR(checkPosted(next_, slot));
    }
    if (!finished_) {
      Status finished = plan_.direct ? readPeers() : finish();
      wakePeers();
      FTCOMM_RETURN_IF_ERROR(finished);
      // Nothing of the peers' posts (or, in the direct form, of their buffers) is read any
      // more: they may post into this slot again.
      group_.areas[static_cast<std::size_t>(rank_)]->consumed[slot_].store(
          index_, std::memory_order_release);
      finished_ = true;
      if (plan_.direct) {
        // The peers wait for this (released()), and nothing else may come to wake them: a
        // large one hands the wait to a progress thread that sleeps.
        woken_ = false;
        wakePeers();
      }
    }
    if (plan_.direct) {
      if (!released()) return false;
      if (staged_) {  // an all-to-all in place: its blocks, now that nobody reads the input
        for (int p = 0; p < n_; ++p) {
          const auto at = static_cast<std::size_t>(p) * plan_.block;
          if (p != rank_)
            transport::copyBytes(static_cast<std::byte*>(args_.recv) + at, staged_.get() + at,
                                 plan_.block);
        }
        staged_ = algorithms::Staging();
      }
    }
    ++chunk_;
    ++index_;
    slot_ = 1 - slot_;
    posted_ = false;
    finished_ = false;
    next_ = 0;
  }
  return true;
}

Status InlineCollective::finish() {
  const std::size_t es = dataTypeSize(args_.dtype);
  const std::size_t offset = chunk_ * plan_.step, length = chunkBytes();
  if (length == 0) return Status::Ok();
  auto* out = static_cast<std::byte*>(args_.recv);
  // Member r's part of the chunk: its post, or this member's own input where it kept it.
  const auto* own = static_cast<const std::byte*>(args_.send) + offset;
  auto posted = [&](int r) { return r == rank_ && keepsInput() ? own : payload(r); };
  // Folds piece `piece` of every member's post into `into`, in rank order.
  auto fold = [&](std::byte* into, std::size_t piece) -> Status {
    const std::size_t at = piece * length, count = length / es;
    if (n_ == 1) transport::copyBytes(into, posted(0) + at, length);
    for (int r = 1; r < n_; ++r) {  // the first reduction also copies: into = post 0 OP post 1
      const std::byte* so_far = r == 1 ? posted(0) + at : into;
      FTCOMM_RETURN_IF_ERROR(
          algorithms::reduceFrom(args_.dtype, args_.op, into, so_far, posted(r) + at, count));
    }
    if (args_.op == ReduceOp::kAvg) return algorithms::finishAverage(args_.dtype, into, count, n_);
    return Status::Ok();
  };
  const auto self = static_cast<std::size_t>(rank_);
  switch (collective_) {
    case Collective::kAllReduce:
      return fold(out + offset, 0);
    case Collective::kReduce:
      return rank_ == args_.root ? fold(out + offset, 0) : Status::Ok();
    case Collective::kReduceScatter:
      return fold(out + offset, self);
    case Collective::kBroadcast:
      if (rank_ != args_.root) transport::copyBytes(out + offset, payload(args_.root), length);
      return Status::Ok();
    case Collective::kAllGather:
      for (int r = 0; r < n_; ++r) {
        transport::copyBytes(out + static_cast<std::size_t>(r) * plan_.block + offset, payload(r),
                             length);
      }
      return Status::Ok();
    case Collective::kAllToAll:
      for (int r = 0; r < n_; ++r) {
        transport::copyBytes(out + static_cast<std::size_t>(r) * plan_.block + offset,
                             payload(r) + self * length, length);
      }
      return Status::Ok();
    case Collective::kBarrier:
      return Status::Ok();
    default:
      return internalError("inline collective: not an inline collective");
  }
}

Status InlineCollective::readPeers() {
  const std::size_t block = plan_.block;
  auto address = [&](int peer, int which) {
    std::uint64_t addresses[2];
    std::memcpy(addresses, group_.areas[static_cast<std::size_t>(peer)]->slots[slot_].near,
                sizeof addresses);
    return addresses[which];
  };
  auto read = [&](int peer, std::byte* into, std::uint64_t from) {
    return block == 0 ? Status::Ok()
                      : group_.domain->readMember(group_.members[static_cast<std::size_t>(peer)],
                                                  into, from, block);
  };
  auto* out = static_cast<std::byte*>(args_.recv);
  if (collective_ == Collective::kBroadcast) {
    if (rank_ != args_.root) return read(args_.root, out, address(args_.root, 0));
    return Status::Ok();  // one buffer: send is recv
  }
  const auto self = static_cast<std::size_t>(rank_);
  if (collective_ == Collective::kAllToAll) {
    // In place, the blocks gather apart until every peer has read its own out of this buffer
    // (InlineCollective::poll copies them over once released).
    std::byte* target = out;
    if (args_.send == args_.recv) {
      staged_ = algorithms::Staging::take(block * static_cast<std::size_t>(n_));
      target = staged_.get();
    } else if (block > 0) {
      transport::copyBytes(out + self * block,
                           static_cast<const std::byte*>(args_.send) + self * block, block);
    }
    for (int i = 1; i < n_; ++i) {  // starting with the next rank, as the allgather does
      const int p = (rank_ + i) % n_;
      FTCOMM_RETURN_IF_ERROR(
          read(p, target + static_cast<std::size_t>(p) * block, address(p, 0) + self * block));
    }
    return Status::Ok();
  }
  // Allgather: this member's block, then each peer's, starting with the next rank (so that the
  // peers do not all read from rank 0 first).
  std::byte* own = out + self * block;
  if (args_.send != own && block > 0) transport::copyBytes(own, args_.send, block);
  for (int i = 1; i < n_; ++i) {
    const int p = (rank_ + i) % n_;
    FTCOMM_RETURN_IF_ERROR(read(p, out + static_cast<std::size_t>(p) * block, address(p, 0)));
  }
  return Status::Ok();
}

bool InlineCollective::released() const {
  // A broadcast's non-root lends nothing; every other member's send buffer is read by all.
  if (collective_ == Collective::kBroadcast && rank_ != args_.root) return true;
  for (int p = 0; p < n_; ++p) {
    if (p == rank_) continue;
    const shm::InlineArea& area = *group_.areas[static_cast<std::size_t>(p)];
    if (area.consumed[slot_].load(std::memory_order_acquire) < index_) return false;
  }
  return true;
}

Result<bool> InlineTask::advance() {
  if (!failed_.ok()) return failed_;
  for (int p = 0; p < transport_.size(); ++p) {
    if (p == transport_.rank()) continue;
    if (Status s = transport_.peerStatus(p); !s.ok()) {
      return Status(s.code(), "rank " + std::to_string(p) + ": " + s.message());
    }
  }
  // A few chunks at a time (256 KiB per member by default): the engine's mutex is held
  // meanwhile, and a long collective must not keep the calling threads of other operations out
  // for its whole duration.
  return run_.poll(4);
}

}  // namespace ftcomm::detail
