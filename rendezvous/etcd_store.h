// EtcdStore: the rendezvous's state in etcd, so that several ftcomm-rendezvous replicas serve
// the same jobs and losing one (or one etcd member) loses nothing.
//
// Leadership (etcd_leadership.h). One replica serves at a time: the one holding the key
// PREFIX/leader, created in a transaction only where it is absent and bound to an etcd lease the
// replica keeps alive. The others stand by, polling the key; they answer every call UNAVAILABLE
// naming the leader, and clients move on along their list of replicas. When the leader dies its
// lease runs out (the TTL, at least etcd's minimum), the key goes, and a standby takes it, loads
// every job and serves. A leader that cannot renew its lease stops before the lease could have
// expired in etcd, so two replicas never serve at once; every write is also a transaction that
// holds only while the key is still the one this replica created (fencing).
//
// Layout, under PREFIX (default /ftcomm/): jobs/JOB/r/SEQ holds one journal record (SEQ is 16
// hex digits, in order) and jobs/JOB/s a snapshot that replaces the records before it. A commit
// (an epoch agreed, a member declared failed, a key set) is one etcd transaction; compaction
// writes the snapshot and deletes the records it covers in another. A finished job's keys are
// deleted. Only current keys are read, never old revisions, so etcd's own history compaction
// does not affect the store.
//
// Thread-safety: as StateStore.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "rendezvous/etcd_client.h"
#include "rendezvous/state_store.h"

namespace ftcomm::rendezvous {

struct EtcdStoreOptions {
  EtcdOptions etcd;
  std::string prefix = "/ftcomm/";
  std::string advertise;  // how clients reach this replica, shown by the standbys
  std::chrono::seconds leaderTtl{2};
  std::chrono::milliseconds memberLease{0};  // the service's; only for a warning when too short
};

Result<std::unique_ptr<StateStore>> makeEtcdStore(EtcdStoreOptions options);

}  // namespace ftcomm::rendezvous
