// The displacements of per-rank blocks laid end to end (all_to_all_v's and alltoall's).
#pragma once

#include <cstddef>
#include <numeric>
#include <vector>

namespace ftcomm::python {

inline std::vector<std::size_t> displacements(const std::vector<std::size_t>& counts) {
  std::vector<std::size_t> d(counts.size());
  std::exclusive_scan(counts.begin(), counts.end(), d.begin(), std::size_t{0});
  return d;
}

}  // namespace ftcomm::python
