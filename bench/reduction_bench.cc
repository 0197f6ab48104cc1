// ftcomm-bench-reduction: the reduction kernels' throughput (algorithms/reduction_isa.h), each
// type's sum and max in every build this processor runs, side by side: in cache (128 KiB per
// buffer) and from memory (32 MiB). Prints GB/s of output, the median of repeated batches (the
// builds' batches alternate), and the AVX2 build's ratio to the baseline; then the best build
// with its stores around the cache (kernels::Stores, reduceFromAroundCache) and its ratio to the
// same build's plain stores.
//
//   ftcomm-bench-reduction [--batches B]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/reduction_isa.h"
#include "bench_flags.h"

using namespace ftcomm;
using namespace ftcomm::algorithms;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// GB/s of output of out = a OP b over `bytes` in each build of `builds`: the median of
// `batches` batches of about 20 ms each, the builds' batches alternating so that the machine's
// noise moves them alike.
struct Variant {
  kernels::Isa isa;
  kernels::Stores stores;
};

std::vector<double> throughput(const std::vector<Variant>& builds, DataType type, ReduceOp op,
                               std::size_t bytes, int batches) {
  std::vector<std::byte> a(bytes), b(bytes), out(bytes);
  // 0x3c bytes are finite, normal numbers in every floating type (1.05 as float16, 0.0115 as
  // float32).
  std::memset(a.data(), 0x3c, bytes);
  std::memset(b.data(), 0x3c, bytes);
  const std::size_t count = bytes / dataTypeSize(type);
  auto once = [&](const Variant& v) {
    kernels::reduce(v.isa, type, op, out.data(), a.data(), b.data(), count, v.stores);
  };
  once(builds.front());
  const auto probe = Clock::now();
  once(builds.front());
  const double oneUs = std::chrono::duration<double, std::micro>(Clock::now() - probe).count();
  const int reps = std::max(1, static_cast<int>(20000 / std::max(oneUs, 0.01)));
  std::vector<std::vector<double>> rates(builds.size());
  for (int batch = 0; batch < batches; ++batch) {
    for (std::size_t k = 0; k < builds.size(); ++k) {
      const auto start = Clock::now();
      for (int r = 0; r < reps; ++r) once(builds[k]);
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
      rates[k].push_back(static_cast<double>(bytes) * reps / us / 1e3);
    }
  }
  std::vector<double> medians;
  for (auto& r : rates) medians.push_back(median(r));
  return medians;
}

}  // namespace

int main(int argc, char** argv) {
  constexpr const char* kUsage = "usage: ftcomm-bench-reduction [--batches B]\n";
  int batches = 7;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (ftcomm::bench::isHelpFlag(flag)) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (flag != "--batches") {
      std::fprintf(stderr, "ftcomm-bench-reduction: unknown flag %s\n%s", flag.c_str(), kUsage);
      return 2;
    }
    const std::optional<long> value =
        ftcomm::bench::wholeNumber(i + 1 < argc ? argv[++i] : nullptr, 1, 1000);
    if (!value) {
      std::fprintf(stderr, "ftcomm-bench-reduction: --batches must be in 1..1000\n%s", kUsage);
      return 2;
    }
    batches = static_cast<int>(*value);
  }
  const kernels::Isa best = kernels::bestIsa();
  const bool avx2 = best != kernels::Isa::kBaseline;
  std::vector<Variant> builds{{kernels::Isa::kBaseline, kernels::Stores::kPlain}};
  if (avx2) builds.push_back({best, kernels::Stores::kPlain});
  builds.push_back({best, kernels::Stores::kAroundCache});
  std::printf(
      "# GB/s of output, median of %d batches; builds: baseline%s; around: the %s build's "
      "stores around the cache (ratio to its plain stores)\n",
      batches, avx2 ? ", avx2 (AVX2 and F16C)" : " (the processor has no AVX2+F16C)",
      avx2 ? "avx2" : "baseline");
  std::printf("%-9s %-4s %9s %10s %10s %7s %10s %7s\n", "type", "op", "buffer", "baseline", "avx2",
              "ratio", "around", "ratio");
  for (DataType type : {DataType::kFloat32, DataType::kFloat64, DataType::kInt32,
                        DataType::kFloat16, DataType::kBFloat16}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
      for (std::size_t bytes : {std::size_t{128} << 10, std::size_t{32} << 20}) {
        const std::vector<double> rate = throughput(builds, type, op, bytes, batches);
        std::printf("%-9s %-4s %8zuK %10.2f", std::string(dataTypeName(type)).c_str(),
                    std::string(reduceOpName(op)).c_str(), bytes >> 10, rate[0]);
        if (avx2) {
          std::printf(" %10.2f %7.2f", rate[1], rate[1] / rate[0]);
        } else {
          std::printf(" %10s %7s", "-", "-");
        }
        const double plain = rate[rate.size() - 2];
        std::printf(" %10.2f %7.2f\n", rate.back(), rate.back() / plain);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
