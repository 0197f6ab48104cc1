#include "rendezvous/kv_store.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>

#include "rendezvous/limits.h"

namespace ftcomm::rendezvous {
namespace {

// The whole string as a signed decimal integer (what add stores), else nothing.
std::optional<std::int64_t> parseCounter(const std::string& text) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

}  // namespace

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

Status KvStore::update(const pb::KvUpdateRequest& request, pb::KvUpdateResponse& answer,
                       Effects& out) {
  const std::string& key = request.key();
  FTCOMM_RETURN_IF_ERROR(validateKey(key));
  const std::string* current = get(key);
  switch (request.update_case()) {
    case pb::KvUpdateRequest::kAdd: {
      std::int64_t sum = 0;
      if (current != nullptr) {
        auto parsed = parseCounter(*current);
        if (!parsed) {
          return invalidArgument("job " + jobId_ + ": key '" + key +
                                 "' does not hold a decimal integer; add cannot change it");
        }
        sum = *parsed;
      }
      if (__builtin_add_overflow(sum, request.add(), &sum)) {
        return invalidArgument("job " + jobId_ + ": add to key '" + key + "' overflows int64");
      }
      answer.set_found(true);
      answer.set_value(std::to_string(sum));
      // Adding 0 reads the counter (torch's store-based barrier polls so): nothing to journal.
      if (request.add() == 0 && current != nullptr) return Status::Ok();
      return set(key, answer.value(), out);
    }
    case pb::KvUpdateRequest::kCompareSet: {
      const auto& cas = request.compare_set();
      const bool matches = current == nullptr ? cas.expected().empty() : *current == cas.expected();
      if (!matches) {
        answer.set_found(current != nullptr);
        answer.set_value(current == nullptr ? cas.expected() : *current);
        return Status::Ok();
      }
      answer.set_found(true);
      answer.set_value(cas.desired());
      return set(key, cas.desired(), out);
    }
    case pb::KvUpdateRequest::kRemove:
      answer.set_found(current != nullptr);
      if (current != nullptr) {
        out.journal.emplace_back().set_kv_removed(key);
        applyRemoval(key);
      }
      return Status::Ok();
    case pb::KvUpdateRequest::UPDATE_NOT_SET:
      break;
  }
  return invalidArgument("KvUpdate names no update (add, compare_set or remove)");
}

std::uint64_t KvStore::count(const std::string& prefix) const {
  std::uint64_t n = 0;
  for (auto it = values_.lower_bound(prefix); it != values_.end() && it->first.starts_with(prefix);
       ++it) {
    ++n;
  }
  return n;
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

void KvStore::applyRemoval(const std::string& key) {
  auto it = values_.find(key);
  if (it == values_.end()) return;
  valueBytes_ -= it->second.size();
  values_.erase(it);
}

void KvStore::appendTo(pb::JobSnapshot& snapshot) const {
  for (const auto& [key, value] : values_) {
    auto* entry = snapshot.add_kv();
    entry->set_key(key);
    entry->set_value(value);
  }
}

}  // namespace ftcomm::rendezvous
