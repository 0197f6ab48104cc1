#include "algorithms/path.h"

namespace ftcomm::algorithms {

Result<Path> choosePath(const tuning::PlanTable& plan, const PathQuery& q) {
  Path path;
  if (q.forced) {
    auto chosen = chooseAlgorithm(q.collective, q.bytes, q.ranks, q.peersReadable);
    if (!chosen.ok()) return chosen.status();
    path.algorithm = *chosen;
    return path;
  }
  if (q.hasInline) {
    path.chunking =
        detail::inlineChunking(plan, q.collective, q.count, q.dtype, q.ranks, q.peersReadable);
    if (path.chunking.chunks > 0) return path;
  }
  // Across hosts with several members on a host, the node-aware collectives unless the profile
  // turns them off (`set node_aware off`); an allreduce from `node_aware_split_from` bytes in
  // their split form.
  if (q.spansHosts && plan.settings().nodeAware) {
    const bool split =
        q.collective == Collective::kAllReduce && q.bytes >= plan.settings().nodeAwareSplitFrom;
    if (const AlgorithmInfo* hierarchical =
            findAlgorithm(q.collective, split ? "hierarchical_split" : "hierarchical")) {
      path.algorithm = hierarchical;
      return path;
    }
  }
  // A band of the message way takes the algorithm it names, or the registry's default among
  // those that send messages; any other band (the direct way, or an inline one where there are
  // no slots) the registry's default, which reads the peers' buffers where it can.
  const tuning::Band& band = plan.band(q.collective, q.bytes);
  path.segmentBytes = band.segment;
  if (band.way == tuning::Way::kMessage && band.algorithm != nullptr) {
    path.algorithm = band.algorithm;
    return path;
  }
  const bool readsPeers = band.way != tuning::Way::kMessage && q.peersReadable;
  auto chosen = defaultAlgorithm(q.collective, q.bytes, q.ranks, readsPeers);
  if (!chosen.ok()) return chosen.status();
  path.algorithm = *chosen;
  return path;
}

}  // namespace ftcomm::algorithms
