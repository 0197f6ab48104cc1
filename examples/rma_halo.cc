// rma_halo: a 1-D heat equation (explicit Jacobi steps) split across ranks, whose boundary cells
// travel by one-sided put + signal into the neighbours' halo cells (a Window). Each rank also
// computes the whole domain serially and checks its own cells bit for bit; the last line says
// whether every rank was right.
//
// The halos are double-buffered by step parity: a neighbour can be at most one step ahead (it
// needs this rank's halo of that step), so it never overwrites a halo still being read.
//
//   ftcomm-run -np 4 -- rma_halo [--cells C] [--steps S]     (C cells per rank, default 64)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ftcomm/communicator.h"
#include "ftcomm/window.h"

using namespace ftcomm;

namespace {

constexpr double kLeftWall = 1.0, kRightWall = 0.0;
// Signal slots: a halo from the left neighbour arrived / from the right one.
constexpr std::size_t kFromLeft = 0, kFromRight = 1;

double step(double left, double mid, double right) {
  return mid + 0.25 * (left - 2.0 * mid + right);
}

// The whole domain of `cells` cells, `steps` steps, serially.
std::vector<double> serial(std::size_t cells, int steps) {
  std::vector<double> u(cells, 0.0), next(cells);
  for (int s = 0; s < steps; ++s) {
    for (std::size_t j = 0; j < cells; ++j) {
      next[j] = step(j == 0 ? kLeftWall : u[j - 1], u[j], j + 1 == cells ? kRightWall : u[j + 1]);
    }
    u.swap(next);
  }
  return u;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t cells = 64;
  int steps = 200;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--cells") == 0) cells = std::strtoul(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoi(argv[i + 1]);
  }
  auto created = Communicator::create();
  if (!created.ok()) {
    std::fprintf(stderr, "rma_halo: %s\n", created.status().toString().c_str());
    return 1;
  }
  Communicator& comm = **created;
  const int n = comm.size(), me = comm.rank();
  // The window holds this rank's halos: [left even, left odd, right even, right odd].
  auto createdWindow = Window::allocate(comm, 4 * sizeof(double));
  if (!createdWindow.ok()) {
    std::fprintf(stderr, "rma_halo: %s\n", createdWindow.status().toString().c_str());
    return 1;
  }
  Window& window = **createdWindow;
  const auto* halo = static_cast<const double*>(window.data());

  std::vector<double> u(cells, 0.0), next(cells);
  for (int s = 0; s < steps; ++s) {
    const std::size_t parity = static_cast<std::size_t>(s % 2);
    // My edges go to my neighbours' halos, then a signal says they are there.
    if (me > 0) {
      (void)window.put(&u.front(), sizeof(double), me - 1, (2 + parity) * sizeof(double));
      (void)window.signal(me - 1, kFromRight, 1);
    }
    if (me + 1 < n) {
      (void)window.put(&u.back(), sizeof(double), me + 1, parity * sizeof(double));
      (void)window.signal(me + 1, kFromLeft, 1);
    }
    const auto expected = static_cast<std::uint64_t>(s + 1);
    Status waited;
    if (me > 0) waited = window.waitSignal(kFromLeft, expected, std::chrono::seconds(60));
    if (waited.ok() && me + 1 < n) {
      waited = window.waitSignal(kFromRight, expected, std::chrono::seconds(60));
    }
    if (!waited.ok()) {
      std::fprintf(stderr, "rma_halo: rank %d, step %d: %s\n", me, s, waited.toString().c_str());
      return 1;
    }
    const double left = me > 0 ? halo[parity] : kLeftWall;
    const double right = me + 1 < n ? halo[2 + parity] : kRightWall;
    for (std::size_t j = 0; j < cells; ++j) {
      next[j] = step(j == 0 ? left : u[j - 1], u[j], j + 1 == cells ? right : u[j + 1]);
    }
    u.swap(next);
  }

  const auto whole = serial(cells * static_cast<std::size_t>(n), steps);
  std::int32_t wrong = std::memcmp(u.data(), whole.data() + static_cast<std::size_t>(me) * cells,
                                   cells * sizeof(double)) != 0;
  std::int32_t anyWrong = 0;
  Status s = comm.allReduce(&wrong, &anyWrong, 1, DataType::kInt32, ReduceOp::kMax).wait();
  if (!s.ok()) {
    std::fprintf(stderr, "rma_halo: %s\n", s.toString().c_str());
    return 1;
  }
  (void)window.fence().wait();
  if (me == 0) {
    std::printf("rma_halo: %d ranks x %zu cells, %d steps: %s\n", n, cells, steps,
                anyWrong ? "halo exchange WRONG" : "halo exchange right");
  }
  return anyWrong ? 1 : 0;
}
