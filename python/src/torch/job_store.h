// FtcommStore: a c10d::Store over the job's key-value store on the ftcomm rendezvous, which is
// what init_method="ftcomm://" hands torch instead of a TCPStore on rank 0. It lives on the
// rendezvous, so losing any rank (rank 0 included) loses no key, and a replacement reaches it.
// Keys are kept under a prefix of their own ("torch/EPOCH/"), apart from ftcomm's keys, and a
// new one per epoch, so that the group of a reconfigured job starts with an empty store as a
// freshly initialized one would.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <string>

#include "ftcomm/store.h"

namespace ftcomm::torch_backend {

class FtcommStore : public c10d::Store {
 public:
  FtcommStore(JobStore store, std::string prefix, std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override;
  // Waits for the key up to the store's timeout, as c10d's stores do.
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  const std::string& prefix() const { return prefix_; }

 private:
  JobStore store_;
  std::string prefix_;
};

}  // namespace ftcomm::torch_backend
