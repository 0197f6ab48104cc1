// ftcomm-bench's timing and its rows (bench_table.h).
#include "bench_table.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace ftcomm::bench {

namespace {

using Clock = std::chrono::steady_clock;

// What one round of one column may take when the iterations are chosen by size: a peer that
// stalls (Gloo's TCP transport at times waits 40-50 ms per call at 4 oversubscribed ranks) then
// runs fewer iterations instead of looking hung.
constexpr double kRoundBudgetUs = 2e6;

double slowestOf(double us) {
  double slowest = 0;
  MPI_Allreduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

}  // namespace

double timeIt(int iters, bool bounded, const Column& column) {
  const std::function<void()>& body = column.body;
  // Microseconds of `calls` calls: back to back, or each prepared and timed alone. `wall`
  // counts the preparations and barriers too, which the round's budget must.
  struct Times {
    double timed = 0, wall = 0;
  };
  auto run = [&](int calls) {
    const auto begin = Clock::now();
    Times times;
    if (!column.prepare) {
      for (int i = 0; i < calls; ++i) body();
      times.timed = std::chrono::duration<double, std::micro>(Clock::now() - begin).count();
      times.wall = times.timed;
      return times;
    }
    for (int i = 0; i < calls; ++i) {
      column.prepare();
      MPI_Barrier(MPI_COMM_WORLD);
      const auto start = Clock::now();
      body();
      times.timed += std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    }
    times.wall = std::chrono::duration<double, std::micro>(Clock::now() - begin).count();
    return times;
  };
  const double estimate = slowestOf(run(2).wall / 2);
  if (bounded && estimate * iters > kRoundBudgetUs)
    iters = std::max(3, static_cast<int>(kRoundBudgetUs / estimate));
  run(std::max(0, iters / 10 - 2));  // the rest of the warm-up
  MPI_Barrier(MPI_COMM_WORLD);
  return slowestOf(run(iters).timed / iters);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void printRow(const Options& o, int ranks, std::size_t bytes, const std::vector<Column>& columns,
              const std::string& verdict, bool& headed) {
  auto busbw = [&](double us) { return bytes / us / 1e3 * busFactor(o.op, ranks); };
  if (o.json) {
    std::printf("{\"op\":\"%s\",\"dtype\":\"%s\",\"bytes\":%zu,\"ranks\":%d", o.op.c_str(),
                o.dtype.c_str(), bytes, ranks);
    for (const Column& column : columns) {
      const double us = median(column.rounds);
      std::printf(",\"%s_us\":%.3f,\"%s_busbw_gbs\":%.4f", column.name.c_str(), us,
                  column.name.c_str(), busbw(us));
    }
    const double ftUs = median(columns.front().rounds);
    if (o.linkGbs > 0) std::printf(",\"link_share\":%.4f", busbw(ftUs) / o.linkGbs);
    if (o.linkRttUs > 0) std::printf(",\"link_rtts\":%.3f", ftUs / o.linkRttUs);
    if (o.check) std::printf(",\"check\":\"%s\"", verdict.c_str());
    std::printf("}\n");
    std::fflush(stdout);
    return;
  }
  if (!headed) {
    headed = true;
    std::printf(
        "# ftcomm-bench --op %s, %d ranks, %s, median of %d rounds; "
        "ratio = peer time / ftcomm time (above 1: ftcomm is faster)\n",
        o.op.c_str(), ranks, o.dtype.c_str(), o.rounds);
    if (o.linkGbs > 0 || o.linkRttUs > 0) {
      std::printf(
          "# link: %.3f GB/s each way, %.2f us round trip; link%% = ftcomm's busbw / "
          "the rate, rtts = ftcomm's time / the round trip\n",
          o.linkGbs, o.linkRttUs);
    }
    std::printf("%12s", "bytes");
    for (const Column& column : columns) {
      std::printf(" %14s %10s", (column.name + "_us").c_str(), "busbw");
      if (&column == &columns.front()) {
        if (o.linkGbs > 0) std::printf(" %7s", "link%");
        if (o.linkRttUs > 0) std::printf(" %7s", "rtts");
      } else {
        std::printf(" %8s", "ratio");
      }
    }
    std::printf("%s\n", o.check ? " check" : "");
  }
  const double ftUs = median(columns.front().rounds);
  std::printf("%12zu", bytes);
  for (const Column& column : columns) {
    const double us = median(column.rounds);
    std::printf(" %14.2f %10.3f", us, busbw(us));
    if (&column == &columns.front()) {
      if (o.linkGbs > 0) std::printf(" %7.1f", 100 * busbw(us) / o.linkGbs);
      if (o.linkRttUs > 0) std::printf(" %7.2f", us / o.linkRttUs);
    } else {
      std::printf(" %8.2f", us / ftUs);
    }
  }
  std::printf("%s%s\n", o.check ? " " : "", verdict.c_str());
  std::fflush(stdout);
}

}  // namespace ftcomm::bench
