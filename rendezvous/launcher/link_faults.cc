#include "rendezvous/launcher/link_faults.h"

#include <time.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace ftcomm::launcher {

namespace {

std::string hostName(int host) {
  return host < 0 ? std::string("the head (the rendezvous)") : "host " + std::to_string(host);
}

}  // namespace

void LinkFaults::poll() {
  namespace fs = std::filesystem;
  const auto now = std::chrono::steady_clock::now();
  for (auto it = restores_.begin(); it != restores_.end();) {
    if (it->at > now) {
      ++it;
      continue;
    }
    hosts_.setDataLink(it->host, true);
    std::cerr << "ftcomm-run: " << hostName(it->host) << ": data link back up" << std::endl;
    it = restores_.erase(it);
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("request.", 0) != 0 || name.find(".tmp") != std::string::npos) continue;
    const std::string rank = name.substr(std::string("request.").size());
    std::ifstream in(entry.path());
    std::string action;
    long restoreMs = 0;
    in >> action >> restoreMs;
    fs::remove(entry.path(), ec);
    // The head, where the rendezvous runs, is host -1.
    const int host = action == "cut-rendezvous" ? -1 : std::atoi(rank.c_str()) / ranksPerHost_;
    if (action == "cut-link" || action == "silent" || action == "cut-rendezvous") {
      hosts_.setDataLink(host, false);
      std::cerr << "ftcomm-run: rank " << rank << " asked: " << hostName(host) << ": data link cut"
                << std::endl;
    }
    if ((action == "cut-link" || action == "cut-rendezvous") && restoreMs > 0) {
      restores_.push_back({host, now + std::chrono::milliseconds(restoreMs)});
    }
    if (action == "lose-host") {
      const int killed = hosts_.killHost(host);
      std::cerr << "ftcomm-run: host " << host << " lost whole: " << killed
                << " processes killed, its launcher daemon or agent among them" << std::endl;
    }
    if (action == "silent" || action == "kill-host") {
      const int killed = hosts_.killRanks(host);
      std::cerr << "ftcomm-run: host " << host
                << (action == "silent" ? " went silent: " : " lost: ") << killed << " ranks killed"
                << (action == "silent" ? " behind its cut link" : "") << std::endl;
    }
    timespec acted{};
    ::clock_gettime(CLOCK_MONOTONIC, &acted);
    std::cerr << "ftcomm-run: " << action << " of " << hostName(host) << " done at "
              << static_cast<long long>(acted.tv_sec) * 1'000'000'000 + acted.tv_nsec << " ns"
              << std::endl;
    std::ofstream(fs::path(folder_) / ("done." + rank)) << action << "\n";
  }
}

}  // namespace ftcomm::launcher
