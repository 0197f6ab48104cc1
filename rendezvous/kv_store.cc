#include "rendezvous/kv_store.h"

#include <algorithm>

#include "rendezvous/limits.h"

namespace ftcomm::rendezvous {

Status KvStore::set(const std::string& key, const std::string& value, Effects& out) {
  FTCOMM_RETURN_IF_ERROR(validateKey(key));
  FTCOMM_RETURN_IF_ERROR(validateValue(key, value.size()));
  auto existing = values_.find(key);
  std::size_t oldBytes = existing == values_.end() ? 0 : existing->second.size();
  if (existing == values_.end() && values_.size() >= kMaxKeysPerJob) {
    return resourceExhausted("job " + jobId_ + " already holds " + std::to_string(values_.size()) +
                             " keys, the limit");
  }
  if (valueBytes_ - oldBytes + value.size() > kMaxKvBytesPerJob) {
    return resourceExhausted("job " + jobId_ + " would hold more than " +
                             std::to_string(kMaxKvBytesPerJob) + " bytes of values");
  }
  pb::KeyValue entry;
  entry.set_key(key);
  entry.set_value(value);
  *out.journal.emplace_back().mutable_kv_set() = entry;
  apply(entry);

  std::erase_if(waiters_, [&](const Waiter& w) { return complete(w, out); });
  return Status::Ok();
}

const std::string* KvStore::get(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

Status KvStore::wait(WaiterId waiter, const std::vector<std::string>& keys,
                     Clock::time_point deadline, Effects& out) {
  if (keys.empty()) return invalidArgument("KvWait names no keys");
  if (keys.size() > kMaxKeysPerWait) {
    return invalidArgument("KvWait names " + std::to_string(keys.size()) + " keys; the limit is " +
                           std::to_string(kMaxKeysPerWait));
  }
  for (const auto& key : keys) FTCOMM_RETURN_IF_ERROR(validateKey(key));
  Waiter w{waiter, keys, deadline};
  if (!complete(w, out)) waiters_.push_back(std::move(w));
  return Status::Ok();
}

bool KvStore::complete(const Waiter& waiter, Effects& out) const {
  pb::KvWaitResponse response;
  for (const auto& key : waiter.keys) {
    const std::string* value = get(key);
    if (value == nullptr) return false;
    auto* entry = response.add_entries();
    entry->set_key(key);
    entry->set_value(*value);
  }
  out.replies.push_back(Reply{waiter.id, Status::Ok(), std::move(response)});
  return true;
}

void KvStore::expireWaiters(Clock::time_point now, Effects& out) {
  std::erase_if(waiters_, [&](const Waiter& w) {
    if (w.deadline > now) return false;
    std::string missing;
    for (const auto& key : w.keys) {
      if (get(key) != nullptr) continue;
      missing += (missing.empty() ? "'" : ", '") + key + "'";
    }
    out.replies.push_back(
        Reply{w.id,
              timeoutError("job " + jobId_ + ": KvWait deadline passed; missing keys: " + missing),
              {}});
    return true;
  });
}

bool KvStore::cancel(WaiterId waiter, const Status& why, Effects& out) {
  auto it = std::find_if(waiters_.begin(), waiters_.end(),
                         [&](const Waiter& w) { return w.id == waiter; });
  if (it == waiters_.end()) return false;
  out.replies.push_back(Reply{waiter, why, {}});
  waiters_.erase(it);
  return true;
}

void KvStore::apply(const pb::KeyValue& entry) {
  auto& slot = values_[entry.key()];
  valueBytes_ = valueBytes_ - slot.size() + entry.value().size();
  slot = entry.value();
}

void KvStore::appendTo(pb::JobSnapshot& snapshot) const {
  for (const auto& [key, value] : values_) {
    auto* entry = snapshot.add_kv();
    entry->set_key(key);
    entry->set_value(value);
  }
}

}  // namespace ftcomm::rendezvous
