// A tuning profile: how the shared-memory collectives run on a kind of machine, as data. Rules
// (per collective, rank count and size range, first match wins, as in Open MPI's dynamic rules
// files) say which way a collective takes and in what chunks; settings say how bulk copies are
// cut and how members lend their buffers. Profiles are text rules files (comm/tuning/profiles/,
// built into the library, or any file named by FTCOMM_TUNING); docs/tuning.md gives the format
// and each shipped profile's measurements.
//
// Thread-safety: plain values; parse and serialize are functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "ftcomm/status.h"

namespace ftcomm::tuning {

inline constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();

// How a shared-memory collective runs.
enum class Way : std::uint8_t {
  // Through the inline slots: in one chunk, or streamed in chunks past `whole` bytes.
  kInline,
  // A broadcast, allgather or all-to-all reads the peers' buffers with the slots as notices (the
  // direct algorithms' inline form); any other collective takes the registry's algorithm.
  kDirect,
  // The registry's message algorithm (algorithms/registry.h): the one the rule names with
  // `algorithm=`, else the registry's default among those that do not read the peers.
  kMessage,
};

// Where members of a collective run inline lend their input to the peers instead of copying it.
enum class Lend : std::uint8_t {
  // By the collective: an all-to-all's members, and an allgather's at 2 ranks, lend buffers the
  // peers map (allocMem).
  kDefault,
  // As kDefault, and every member whose buffer the peers map lends it; where all lend, each reads
  // its whole result at once, as the direct form does. For bands streamed in place of it.
  kMapped,
  // As kMapped, and a member whose buffer the peers cannot map chooses per call between lending
  // it (read with cross-memory attach) and copying it, as it measured fastest (PostChoice).
  kChoose,
};

// How a member copies its input into its slots.
enum class Copy : std::uint8_t {
  kPlain,   // plain stores
  kChoose,  // plain stores or stores around the cache, per call, as measured fastest
};

// Which collective(s) a rule covers: one, or every collective that can run inline.
struct CollectiveMatch {
  bool any = true;
  algorithms::Collective collective = algorithms::Collective::kAllReduce;
};

struct Rule {
  CollectiveMatch collective;
  int minRanks = 1, maxRanks = std::numeric_limits<int>::max();
  // Bytes as the algorithm choice counts them (the vector; an allgather's whole result; a
  // reduce-scatter's or all-to-all's whole input): minBytes <= bytes <= maxBytes.
  std::size_t minBytes = 0, maxBytes = kUnbounded;
  Way way = Way::kInline;
  // A post of up to `whole` bytes of its block goes in one chunk; a larger one streams in chunks
  // of `chunk` bytes of every block, of which a chunk of all blocks fills at most `room`.
  std::size_t whole = std::size_t{256} << 10;
  std::size_t chunk = std::size_t{64} << 10;
  std::size_t room = std::size_t{256} << 10;
  Lend lend = Lend::kDefault;
  Copy copy = Copy::kPlain;
  // Way::kMessage: the registry algorithm's pipeline segment in bytes (CollectiveArgs::
  // segmentBytes: the ring allreduce's segments); 0: the algorithm's default.
  std::size_t segment = 0;
  // Way::kMessage: the registry's algorithm of this name for the rule's collective (empty: the
  // registry's default). Only in rules for one collective.
  std::string algorithm;
  int line = 0;  // in its file, for messages
};

// Settings that hold for every collective of a profile.
struct Settings {
  bool inlineCollectives = true;  // shared-memory collectives run inline at all
  bool inlineDirect = true;       // Way::kDirect takes the inline form (else the registry's)
  // Lending beyond the rules: kAuto as each rule says, kAll every collective's input, kNone none.
  enum class LendAll : std::uint8_t { kAuto, kAll, kNone } lendAll = LendAll::kAuto;
  bool lendWhole = true;  // where every member lends, each reads its result whole
  // At 2 ranks a post of one chunk lends from this many bytes of input (the peers map it).
  std::size_t lendOneChunkFrom = std::size_t{16} << 10;
  // Where members choose how to copy: kChoose measures, kAlways copies around the cache, kNever
  // with plain stores.
  enum class AroundCache : std::uint8_t {
    kChoose,
    kAlways,
    kNever
  } aroundCache = AroundCache::kChoose;
  // Posts of more than this many bytes of their block skip the rules' inline bands (0: no cap).
  std::size_t inlinePostMax = 0;
  // The calling thread runs a collective inline up to this many bytes of its block; a larger one
  // returns its Work at once and progresses on the engine (and in wait()).
  std::size_t callerBytes = std::size_t{1} << 20;
  // Every collective progresses in the calling thread (no progress-thread streaming).
  bool callerOnly = false;
  // A broadcast root of one chunk returns once its post is written, as MPI allows (its buffer
  // may be reused), instead of once every member posted; a receiver's failure or a mismatch
  // then surfaces at the root's next use of the slot. Its next post first checks the peers'
  // posts of the round before, a wait the members' exchange otherwise hides.
  bool rootReturnsAtPost = false;
  // A broadcast of at most 16 bytes goes through the broadcast queue (shm/inline_area.h): its
  // root posts and returns, up to 64 collectives ahead of a member that has yet to read.
  bool broadcastQueue = true;
  // A communicator whose members span hosts, with several on some host, runs its allreduce,
  // broadcast, allgather and reduce-scatter node-aware (algorithms "hierarchical"): within each
  // host over shared memory, across hosts once per host.
  bool nodeAware = true;
  // From this many bytes a node-aware allreduce reduce-scatters within each host and allreduces
  // the pieces across hosts from every member ("hierarchical_split"), instead of reducing to one
  // member per host and broadcasting from it. kUnbounded: never, the default, as measured where
  // the members of a host share its cores (docs/tuning.md).
  std::size_t nodeAwareSplitFrom = kUnbounded;
  // Bulk copies (transport/copy_bytes.h): from `copyLoopFrom` the AVX2 loop instead of memcpy,
  // from `copyAroundCacheFrom` (and within a larger move from `copyPartAroundCacheFrom`) stores
  // around the cache, from `copyPiecesFrom` memcpy in 512 KiB pieces. kUnbounded: never.
  std::size_t copyLoopFrom = kUnbounded;
  std::size_t copyAroundCacheFrom = kUnbounded;
  std::size_t copyPartAroundCacheFrom = kUnbounded;
  std::size_t copyPiecesFrom = kUnbounded;
  // A direct reduction writes its result around the cache from this many bytes of its slice.
  std::size_t resultAroundCacheFrom = kUnbounded;
};

struct Profile {
  std::string name;
  std::string description;
  Settings settings;
  std::vector<Rule> rules;  // first match wins; past the last, Way::kDirect
};

// A size as rules files write it: "64", "64K", "2M", "1G", and "off" (kUnbounded) where
// `offAllowed`. nullopt for anything else.
std::optional<std::size_t> parseBytes(const std::string& text, bool offAllowed = false);
// The inverse: "8", "4K", "64M", "off" for kUnbounded, plain digits where no unit divides it.
std::string formatBytes(std::size_t bytes);

// Parses a rules file's text; `source` names it in errors ("FILE:LINE: ...").
Result<Profile> parseProfile(const std::string& text, const std::string& source);
// Applies "key=value" overrides (settings, as in a rules file's `set` lines), comma-separated.
Status applyOverrides(Profile& profile, const std::string& overrides, const std::string& source);
// The profile as a rules file that parses back to the same profile: what members agree on.
std::string serialize(const Profile& profile);
// A 16-hex-digit hash of serialize(profile).
std::string profileHash(const Profile& profile);

// The text of a profile built into the library, by name (generic, zen2, zen3, zen5, xeon).
const char* builtinProfileText(const std::string& name);
std::vector<std::string> builtinProfileNames();

}  // namespace ftcomm::tuning
