// The job's key-value store on the rendezvous service, for what a framework needs beside the
// communicator: c10d's Store (torch's init methods, new_group's barriers), checkpoints' names.
// It lives as long as the job on the rendezvous, not on any rank, so it survives the loss of
// any member (rank 0 included) and a replacement reaches it. Keys are at most 256 bytes, values
// at most 1 MiB; the rendezvous's own keys (UCX addresses) share the store, so applications
// keep theirs under a prefix of their own.
//
// Obtained from a world communicator (Communicator::store()); calls go through its rendezvous
// client, so they fail with that member's verdict once it was expelled or has left.
//
// Thread-safety: any thread; each call is one request to the rendezvous.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ftcomm/export.h"
#include "ftcomm/status.h"

namespace ftcomm {

namespace detail {
struct WorldIdentity;
}

class FTCOMM_API JobStore {
 public:
  explicit JobStore(std::shared_ptr<detail::WorldIdentity> world);

  Status set(const std::string& key, const std::string& value);
  // The value, or none when the key does not exist; does not wait.
  Result<std::optional<std::string>> get(const std::string& key);
  // The values of `keys`, in order, once all exist; Timeout naming the missing ones.
  Result<std::vector<std::string>> wait(const std::vector<std::string>& keys,
                                        std::chrono::milliseconds timeout);
  // Adds `delta` to a counter (an absent key counts as 0; values are decimal text) and returns
  // the sum. Not repeated after a lost connection, since it may have been applied.
  Result<std::int64_t> add(const std::string& key, std::int64_t delta);
  // Sets `desired` when the key holds `expected` (absent counts as ""), and returns the value
  // afterwards; c10d's compareSet.
  Result<std::string> compareSet(const std::string& key, const std::string& expected,
                                 const std::string& desired);
  // True when the key existed.
  Result<bool> remove(const std::string& key);
  // How many keys start with `prefix`.
  Result<std::uint64_t> count(const std::string& prefix);

 private:
  std::shared_ptr<detail::WorldIdentity> world_;  // its rendezvous client
};

}  // namespace ftcomm
