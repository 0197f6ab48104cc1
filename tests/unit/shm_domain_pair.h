// Two shared-memory domains in one process (ranks 0 and 1 of one epoch) that map each other's
// segments through /proc, exactly as two processes on one host do: the unit tests' stand-in for
// a pair of same-host members.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <memory>
#include <optional>
#include <vector>

#include "transport/shm/shm_domain.h"

namespace ftcomm::shm::testing {

// Ranks 0 and 1 of epoch 7, both in this process.
struct DomainPair {
  DomainPair() {
    wake[0] = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    wake[1] = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    for (int r = 0; r < 2; ++r) {
      auto created = ShmDomain::create(r, 2, 7, wake[r], ShmGeometry{64 * 1024, 4096});
      REQUIRE(created.ok());
      domains[r] = std::move(created).value();
    }
    const std::vector<std::optional<ShmOffer>> offers = {domains[0]->offer(), domains[1]->offer()};
    for (auto& domain : domains) REQUIRE(domain->connect(offers, true).toString() == "OK");
  }
  ~DomainPair() {
    domains[0].reset();
    domains[1].reset();
    ::close(wake[0]);
    ::close(wake[1]);
  }
  // Progress both until `request` is done (or give up).
  bool drive(const transport::RequestPtr& request) {
    for (int i = 0; i < 100000 && !request->done(); ++i) {
      domains[0]->progress();
      domains[1]->progress();
    }
    return request->done();
  }

  int wake[2];
  std::shared_ptr<ShmDomain> domains[2];
};

}  // namespace ftcomm::shm::testing
