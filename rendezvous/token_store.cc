#include "rendezvous/token_store.h"

#include <fstream>
#include <sstream>

namespace ftcomm::rendezvous {

namespace {
bool equalConstantTime(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}
}  // namespace

Result<TokenStore> TokenStore::load(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return invalidArgument("cannot read token file " + file.string());
  TokenStore store;
  store.required_ = true;
  std::string line;
  int lineNumber = 0;
  while (std::getline(in, line)) {
    ++lineNumber;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::string first, second, extra;
    if (!(fields >> first)) continue;
    if (fields >> second) {
      if (fields >> extra) {
        return invalidArgument("token file " + file.string() + " line " +
                               std::to_string(lineNumber) + ": expected 'JOB TOKEN' or 'TOKEN'");
      }
      store.perJob_[first] = second;
    } else {
      store.anyJob_ = first;
    }
  }
  if (store.perJob_.empty() && !store.anyJob_) {
    return invalidArgument("token file " + file.string() + " holds no token");
  }
  return store;
}

Status TokenStore::check(const std::string& jobId, const std::string& token) const {
  if (!required_) return Status::Ok();
  auto it = perJob_.find(jobId);
  const std::string* expected = it != perJob_.end() ? &it->second : anyJob_ ? &*anyJob_ : nullptr;
  if (expected == nullptr || !equalConstantTime(*expected, token)) {
    return permissionDenied("job " + jobId + ": missing or wrong job token");
  }
  return Status::Ok();
}

}  // namespace ftcomm::rendezvous
