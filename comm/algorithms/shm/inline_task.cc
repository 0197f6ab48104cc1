// InlineTask (inline_collective.h): an inline collective on the engine's progress thread, a
// few chunks per advance.
#include "algorithms/shm/inline_collective.h"

namespace ftcomm::detail {

Result<bool> InlineTask::advance() {
  // A few chunks at a time (4 of 64 KiB, or one larger one): the engine's mutex is
  // held meanwhile, and a long collective must not keep the calling threads of other operations
  // out for its whole duration.
  constexpr std::size_t kSmallChunk = std::size_t{64} << 10;
  const std::uint64_t before = run_.chunksDone();
  const std::uint64_t chunks = run_.step() > kSmallChunk ? 1 : 4;
  Result<bool> done = run_.poll(chunks);
  if (!done.ok() || *done) return done;
  auto now = std::chrono::steady_clock::now();
  // Streaming, the peers' next posts are due within microseconds: look for them here for up to
  // kStreamLook rather than go round the engine's loop (its other polls, its mutex) per look.
  if (eager_ && streaming_ && run_.chunksDone() == before) {
    const auto until = now + kStreamLook;
    for (unsigned polls = 1; run_.chunksDone() == before; ++polls) {
      done = run_.poll(chunks);
      if (!done.ok() || *done) return done;
      if (polls % 8 == 0 && (now = std::chrono::steady_clock::now()) >= until) break;
    }
    now = std::chrono::steady_clock::now();
  }
  if (run_.chunksDone() != before) moved_ = now;
  streaming_ = (eager_ || run_.chunksDone() > 0) && now - moved_ < kStreamPatience;
  return done;
}

}  // namespace ftcomm::detail
