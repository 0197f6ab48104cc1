// The inline areas of a shared-memory segment (shm_segment.h): where small collectives run
// without messages (algorithms/inline/). Each communicator of an epoch whose members are all on
// this host owns one area in every member's segment; a member writes only into its own area
// and reads the others'.
//
// An area has two slots, used in turn by the communicator's inline collectives (the k-th uses
// slot k % 2). A member posts its input into its slot and publishes the slot's `index` (k) last,
// with release order; the others wait for `index` to reach k, check the signature, and read.
// Before a member posts the k-th, every member (itself included: in place, its own part may be
// read from its post) must have finished reading its (k-2)-th, the last one in that slot: each
// member publishes, per slot, the last index it finished reading (`consumed`), and a post carries
// the poster's value for the other slot, which is usually all the next poster needs to look at.
//
// `announced` names the collective a member is in when it runs one the ordinary way (messages):
// a member waiting in an inline collective with the same sequence number then reports Mismatch
// instead of waiting for a post that will never come.
//
// Thread-safety: shared between processes; fields are atomics, or written before a release
// store that readers acquire.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ftcomm::shm {

// The most bytes one member posts for one inline collective, or for one chunk of a streamed one;
// how much of it a collective uses is the tuning profile's (chunk, whole and room of its band).
// Only the headers of a segment's areas are
// written when it is made, so the payloads take memory only where a communicator posts.
constexpr std::size_t kInlineBytes = std::size_t{2} << 20;
// Inline areas per segment: the world of the epoch has area 0, split children take the next.
constexpr int kInlineAreas = 32;
// The most bytes of a post that its slot's first cache line holds (InlineSlot::head).
constexpr std::size_t kHeadBytes = 16;

struct alignas(64) InlineSlot {
  std::atomic<std::uint64_t> index{0};  // the inline collective posted here, published last
  std::uint64_t seq = 0;                // its sequence number on the communicator
  std::uint64_t signature[3] = {};      // transport::OpSignature, as laid out
  // The poster's consumed[] of the other slot, at post time. Atomic: a reader may look at it
  // while the poster already writes its next post here (a later value is still a lower bound).
  std::atomic<std::uint64_t> consumedOther{0};
  union {
    // A post of at most kHeadBytes: in the line that holds `index`, so that a reader has it as
    // soon as it sees the index, instead of waiting for a second line from the poster's core
    // (an 8-byte allreduce did so at every call).
    std::byte head[kHeadBytes] = {};
    // The direct form's post (algorithms/shm/inline_collective.h), or a lendable one's: the address
    // of the poster's send buffer, which the others read, and the mark it is lent under
    // (shm_domain.h, Loan). `streamed`: this chunk of a lendable collective is not in the slot
    // but in the send buffer (from allocMem, which the others map), to be read there.
    struct {
      std::uint64_t sendAddress;
      std::uint32_t loanMark;
      std::uint32_t streamed;
    } lent;
  };
  alignas(64) std::byte payload[kInlineBytes];
};
static_assert(offsetof(InlineSlot, payload) == 64, "a slot's header is one cache line");

// The broadcast queue (algorithms/shm/inline_queue.cc): one-line slots for broadcasts of at most
// kHeadBytes, the k-th collective of a communicator in slot k % kQueueSlots. The root posts its
// data there and returns, as an MPI root may; the others read it when they get there. The root
// runs up to kQueueSlots collectives ahead of a member that has yet to read.
constexpr int kQueueSlots = 64;

struct alignas(64) QueueSlot {
  std::atomic<std::uint64_t> seq{0};  // the collective posted here, published last
  std::uint64_t signature[3] = {};    // transport::OpSignature, as laid out
  std::byte head[kHeadBytes] = {};
};
static_assert(sizeof(QueueSlot) == 64, "a queue slot is one cache line");

struct alignas(64) InlineArea {
  // The last index of each slot whose posts this member finished reading.
  std::atomic<std::uint64_t> consumed[2] = {};
  // By slot, the last round this member posted without reading the others' posts (a
  // broadcast's root that returned at its post); its next post into that slot reads them first.
  // Written and read by this member only.
  std::atomic<std::uint64_t> postedOnly[2] = {};
  // A collective this member runs with messages: its sequence number (0 while being written)
  // and signature.
  alignas(64) std::atomic<std::uint64_t> announced{0};
  std::atomic<std::uint64_t> announcedSignature[3] = {};
  // Rank 0's way of posting the collective whose first round is in each slot, where the members
  // of an exchange agree on it (algorithms/shm/inline_collective.h, followsLeader_): index << 2 |
  // way (algorithms/shm/post_choice.h, PostChoice::Way), written before that round's post.
  std::atomic<std::uint64_t> chosen[2] = {};
  // The broadcast queue. Written by this member only:
  // - queueWaiting: the collective whose root's post this member waits for (seen while waiting);
  // - queueRead: by slot, the last collective whose post in the root's slot this member read;
  // - queuePosted, queueConfirmed: by slot, the last collective this member posted there as a
  //   root, and the last one it saw every peer read (it posts there again only once they match);
  // - queueTickets, queuePostedTickets: this member's posts in sequence order, one ticket each;
  // - queueReadTickets, queueReadDone: its reads in sequence order likewise, so that queueRead
  //   only grows: reads of one slot from two roots, both pending, would otherwise mark the later
  //   read before the earlier one, and the later root would wait in vain for its slot.
  alignas(64) std::atomic<std::uint64_t> queueWaiting{0};
  std::atomic<std::uint64_t> queueReadTickets{0};
  std::atomic<std::uint64_t> queueReadDone{0};
  alignas(64) std::atomic<std::uint64_t> queueRead[kQueueSlots] = {};
  alignas(64) std::atomic<std::uint64_t> queuePosted[kQueueSlots] = {};
  std::atomic<std::uint64_t> queueConfirmed[kQueueSlots] = {};
  std::atomic<std::uint64_t> queueTickets{0};
  std::atomic<std::uint64_t> queuePostedTickets{0};
  QueueSlot queue[kQueueSlots];
  InlineSlot slots[2];
};

}  // namespace ftcomm::shm
