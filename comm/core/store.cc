#include "ftcomm/store.h"

#include <charconv>

#include "comm/core/epoch.h"
#include "ftcomm/communicator.h"
#include "rendezvous/client.h"

namespace ftcomm {

namespace pb = rendezvous::pb;

JobStore::JobStore(std::shared_ptr<detail::WorldIdentity> world) : world_(std::move(world)) {}

Status JobStore::set(const std::string& key, const std::string& value) {
  return world_->rendezvous->kvSet(key, value);
}

Result<std::optional<std::string>> JobStore::get(const std::string& key) {
  return world_->rendezvous->kvGet(key);
}

Result<std::vector<std::string>> JobStore::wait(const std::vector<std::string>& keys,
                                                std::chrono::milliseconds timeout) {
  return world_->rendezvous->kvWait(keys, timeout);
}

Result<std::int64_t> JobStore::add(const std::string& key, std::int64_t delta) {
  pb::KvUpdateRequest request;
  request.set_key(key);
  request.set_add(delta);
  auto answer = world_->rendezvous->kvUpdate(std::move(request));
  if (!answer.ok()) return answer.status();
  const std::string& text = answer->value();
  std::int64_t sum = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), sum);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return internalError("the rendezvous answered add on '" + key + "' with '" + text +
                         "', not a decimal integer");
  }
  return sum;
}

Result<std::string> JobStore::compareSet(const std::string& key, const std::string& expected,
                                         const std::string& desired) {
  pb::KvUpdateRequest request;
  request.set_key(key);
  request.mutable_compare_set()->set_expected(expected);
  request.mutable_compare_set()->set_desired(desired);
  auto answer = world_->rendezvous->kvUpdate(std::move(request));
  if (!answer.ok()) return answer.status();
  return std::move(*answer->mutable_value());
}

Result<bool> JobStore::remove(const std::string& key) {
  pb::KvUpdateRequest request;
  request.set_key(key);
  request.set_remove(true);
  auto answer = world_->rendezvous->kvUpdate(std::move(request));
  if (!answer.ok()) return answer.status();
  return answer->found();
}

Result<std::uint64_t> JobStore::count(const std::string& prefix) {
  return world_->rendezvous->kvCount(prefix);
}

Result<JobStore> Communicator::store() const {
  if (!world_ || !world_->rendezvous) {
    return invalidArgument("communicator '" + name() +
                           "': the job's store is reached through a world communicator, not a "
                           "split child");
  }
  return JobStore(world_);
}

}  // namespace ftcomm
