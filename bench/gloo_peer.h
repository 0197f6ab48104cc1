// Gloo as a peer of ftcomm-bench (--compare gloo): Debian's libgloo, its TCP transport on the
// interface ftcomm takes between hosts (loopback on one host), bootstrapped through a FileStore
// in a directory every rank can see (one host, or simulated hosts, which share /tmp). Gloo's
// algorithms bind their buffers when they are built, so each size builds its own and the timed body
// only runs it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ftcomm/status.h"

namespace gloo::rendezvous {
class Context;
}

namespace ftcomm::bench {

class GlooPeer {
 public:
  // Connects every rank to every other (collective: all ranks call it with the same dir); an
  // error names where Gloo listened and what Gloo said.
  static Result<std::unique_ptr<GlooPeer>> connect(int rank, int size, const std::string& storeDir);

  // The variants Gloo offers for `op`: allreduce has "ring" and "hd" (halving-doubling), the others
  // one each.
  static std::vector<std::string> variants(const std::string& op);
  // One call of `op` (variant `variant`) on float32 buffers laid out as ftcomm-bench lays them
  // out (count per block; send and recv sized for the op). Gloo works in place where it does:
  // it may overwrite `send`.
  std::function<void()> bind(const std::string& op, const std::string& variant, float* send,
                             float* recv, std::size_t count);

 private:
  std::shared_ptr<gloo::rendezvous::Context> context_;
  int rank_ = 0;
  int size_ = 1;
  std::uint32_t tag_ = 1;
};

}  // namespace ftcomm::bench
