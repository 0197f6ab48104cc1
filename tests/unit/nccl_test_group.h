// The NCCL backend's CPU tests' fixture: members of one NCCL communicator as threads of this
// process, each over its own scripted FakeNcclApi and one LocalBootstrap group.
//
// Thread-safety: each Member is used by one thread at a time.
#pragma once

#include <future>
#include <memory>
#include <vector>

#include "backends/nccl/nccl_backend.h"
#include "fake_nccl_api.h"
#include "ftcomm/nccl_communicator.h"

namespace ftcomm::nccl::testing {

using namespace std::chrono_literals;

struct Member {
  std::shared_ptr<FakeNcclApi> api = std::make_shared<FakeNcclApi>();
  std::unique_ptr<NcclCommunicator> comm;
};

inline NcclSetup setupOf(const std::shared_ptr<FakeNcclApi>& api,
                         const std::shared_ptr<LocalGroup>& group, int rank, int size) {
  NcclSetup setup;
  setup.api = api;
  setup.bootstrap = std::make_shared<LocalBootstrap>(group);
  setup.rank = rank;
  setup.size = size;
  setup.name = "fake";
  setup.id = 4242;
  for (int r = 0; r < size; ++r) setup.worldRanks.push_back(r);
  setup.keyPrefix = "test/nccl";
  setup.setupTimeout = 5s;
  setup.opTimeout = 5s;
  return setup;
}

// Creates `size` members, each on its own thread as real ranks would.
inline std::vector<Member> createGroup(int size, const std::shared_ptr<LocalGroup>& group,
                                       std::vector<Status>* statuses = nullptr) {
  std::vector<Member> members(static_cast<std::size_t>(size));
  std::vector<std::future<Status>> done;
  for (int r = 0; r < size; ++r) {
    done.push_back(std::async(std::launch::async, [&, r] {
      Member& m = members[static_cast<std::size_t>(r)];
      auto backend = NcclBackend::create(setupOf(m.api, group, r, size));
      if (!backend.ok()) return backend.status();
      m.comm = std::make_unique<NcclCommunicator>(std::move(*backend));
      return Status::Ok();
    }));
  }
  for (auto& d : done) {
    Status s = d.get();
    if (statuses != nullptr) statuses->push_back(s);
  }
  return members;
}

// A buffer the fake calls device memory.
inline std::vector<float> deviceBuffer(FakeNcclApi& api, std::size_t count) {
  std::vector<float> buffer(count);
  api.markDevice(buffer.data());
  return buffer;
}

// The members at `survivors` (old ranks) reconfigure at once to `agreed`, each with its own new
// rank (agreed.oldToNew); their statuses, in order.
inline std::vector<Status> reconfigureAll(std::vector<Member>& members,
                                          const Reconfiguration& agreed,
                                          const std::vector<int>& survivors) {
  std::vector<std::future<Status>> done;
  for (int old : survivors) {
    Reconfiguration mine = agreed;
    mine.rank = agreed.oldToNew[static_cast<std::size_t>(old)];
    done.push_back(std::async(std::launch::async, [&members, old, mine] {
      return members[static_cast<std::size_t>(old)].comm->reconfigure(mine).status();
    }));
  }
  std::vector<Status> statuses;
  for (auto& d : done) statuses.push_back(d.get());
  return statuses;
}

}  // namespace ftcomm::nccl::testing
