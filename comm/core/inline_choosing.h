// Where the members of a 2-rank inline collective choose how to post (inline_choosing.cc says
// why): the bands that inlineChunking (inline_plan.cc) marks `chooses` and `choosesCopy`.
//
// Thread-safety: functions.
#pragma once

#include <cstddef>

#include "algorithms/registry.h"

namespace ftcomm::detail {

// A broadcast, or an allgather or all-to-all of `total` bytes, whose members whose buffers the
// peers cannot map choose between lending and copying (InlineChunking::chooses).
bool choosesAt(algorithms::Collective collective, int ranks, std::size_t total);

// A collective of `total` bytes whose members that copy into their slots choose how to store
// (InlineChunking::choosesCopy).
bool choosesCopyAt(int ranks, std::size_t total);

}  // namespace ftcomm::detail
