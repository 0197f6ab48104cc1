// split_groups: a 2-D grid of communicators through split. The world's ranks are laid out as
// rows x cols (row-major); every rank joins its row and its column communicator (eager splits:
// connected when split() returns), then runs a collective on each: an allreduce of its world
// rank over the row, a broadcast from the column's first member, and an allgather over the
// world. Every result is checked; the last line says whether all were right.
//
//   ftcomm-run -np 6 -- split_groups [--cols C]     (default: the largest C <= sqrt(size))
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ftcomm/communicator.h"

using namespace ftcomm;

int main(int argc, char** argv) {
  auto created = Communicator::create();
  if (!created.ok()) {
    std::fprintf(stderr, "split_groups: %s\n", created.status().toString().c_str());
    return 1;
  }
  Communicator& world = **created;
  const int n = world.size(), me = world.rank();
  int cols = static_cast<int>(std::sqrt(static_cast<double>(n)));
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--cols") == 0) cols = std::atoi(argv[i + 1]);
  }
  if (cols < 1 || cols > n) {
    std::fprintf(stderr, "split_groups: --cols must be in 1..%d\n", n);
    return 2;
  }
  const int row = me / cols, col = me % cols;
  auto rowComm = world.split(row, col);
  auto colComm = world.split(col, row);
  if (!rowComm.ok() || !colComm.ok()) {
    std::fprintf(stderr, "split_groups: split: %s\n",
                 (rowComm.ok() ? colComm.status() : rowComm.status()).toString().c_str());
    return 1;
  }
  Communicator& rowC = **rowComm;
  Communicator& colC = **colComm;
  bool right = true;

  // Row: the sum of the row's world ranks.
  std::int64_t mine = me, rowSum = 0, wantRow = 0;
  for (int r : rowC.worldRanks()) wantRow += r;
  Status s = rowC.allReduce(&mine, &rowSum, 1, DataType::kInt64, ReduceOp::kSum).wait();
  right &= s.ok() && rowSum == wantRow;

  // Column: the first member's world rank reaches everyone.
  std::int64_t top = colC.rank() == 0 ? me : -1;
  s = colC.broadcast(&top, 1, DataType::kInt64, 0).wait();
  right &= s.ok() && top == colC.worldRanks()[0];

  // World: everyone's (row, col).
  std::int32_t cell[2] = {row, col};
  std::vector<std::int32_t> grid(2 * static_cast<std::size_t>(n));
  s = world.allGather(cell, grid.data(), 2, DataType::kInt32).wait();
  for (int r = 0; r < n && s.ok(); ++r)
    right &= grid[2 * r] == r / cols && grid[2 * r + 1] == r % cols;
  right &= s.ok();

  std::printf("rank %d: row %d (size %d, rank %d) col %d (size %d, rank %d): %s\n", me, row,
              rowC.size(), rowC.rank(), col, colC.size(), colC.rank(), right ? "ok" : "WRONG");
  std::int32_t allRight = right ? 1 : 0;
  s = world.allReduce(&allRight, &allRight, 1, DataType::kInt32, ReduceOp::kMin).wait();
  if (me == 0)
    std::printf("RESULT %d ranks as a grid of %d columns: %s\n", n, cols,
                s.ok() && allRight == 1 ? "every collective right" : "SOMETHING WRONG");
  return s.ok() && allRight == 1 ? 0 : 1;
}
