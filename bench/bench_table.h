// ftcomm-bench's columns (ftcomm and each peer it is compared with), how each is timed, and how
// one size's row is printed: as JSON, or as a line of a table whose header comes with the first.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "bench_options.h"

namespace ftcomm::bench {

// One column of the table: a library (or one variant of it) and its timed rounds at this size.
struct Column {
  std::string name;
  std::function<void()> body;
  std::vector<double> rounds;
  // --fresh-inputs: what runs before each call, untimed.
  std::function<void()> prepare;
};

// The slowest rank's mean microseconds per call of the column's body, over `iters` calls or,
// when `bounded`, as many as fit a 2-second round (at least 3; with a `prepare`, counting it
// and the barriers). Every rank runs the same number
// of calls: the estimate that sets it is the slowest rank's. Collective over MPI_COMM_WORLD.
// Calls run back to back and are timed together; where the column has a `prepare`, it runs
// before each call, then an MPI barrier, and each call is timed alone (the slowest rank's sum
// of its calls' times).
double timeIt(int iters, bool bounded, const Column& column);

double median(std::vector<double> v);

// Prints one size's row on rank 0's stdout: `bytes` as nccl-tests counts them, and for every
// column its median time and busbw (and, after the first, the ratio of its time to ftcomm's);
// `verdict` is --check's "ok" or "MISMATCH". The table's header comes before its first row
// (`headed` remembers it).
void printRow(const Options& o, int ranks, std::size_t bytes, const std::vector<Column>& columns,
              const std::string& verdict, bool& headed);

}  // namespace ftcomm::bench
