// NcclApi in libftcomm.so: the vendor calls live in a plugin, libftcomm_nccl.so.0
// (nccl_plugin_entry.cc over nccl_api_cuda.cc), loaded on first use. libftcomm.so itself then
// needs no CUDA runtime and no NCCL, so it installs and runs on machines without them; a job
// that creates an NcclCommunicator where the plugin (or CUDA, or NCCL) is missing gets an error
// that says which. The plugin is looked for beside libftcomm.so first (where it installs), then
// on the library path; FTCOMM_NCCL_PLUGIN names another path.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "backends/nccl/nccl_api.h"

namespace ftcomm::nccl {

namespace {

constexpr const char* kPlugin = "libftcomm_nccl.so.0";
constexpr const char* kEntry = "ftcomm_nccl_make_api";
using Entry = NcclApi* (*)(std::string* why);

// libftcomm_nccl.so.0 in the folder of the library this code is in, or the bare name.
std::string besideThisLibrary() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&besideThisLibrary), &info) != 0 &&
      info.dli_fname != nullptr) {
    std::string self = info.dli_fname;
    if (const auto slash = self.rfind('/'); slash != std::string::npos) {
      std::string candidate = self.substr(0, slash + 1) + kPlugin;
      if (::access(candidate.c_str(), R_OK) == 0) return candidate;
    }
  }
  return kPlugin;
}

}  // namespace

std::unique_ptr<NcclApi> makeVendorApi(std::string* why) {
  const char* set = std::getenv("FTCOMM_NCCL_PLUGIN");
  const std::string chosen = set != nullptr && *set != '\0' ? set : besideThisLibrary();
  const char* path = chosen.c_str();
  // Kept loaded for the process's life: the objects it makes hold its code.
  void* plugin = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (plugin == nullptr) {
    if (why != nullptr) {
      const char* error = ::dlerror();
      *why = std::string("the NCCL backend's plugin could not be loaded (") +
             (error != nullptr ? error : path) +
             "): install ftcomm's NCCL package (libftcomm_nccl.so.0, which needs the CUDA "
             "runtime and NCCL on the library path) or set FTCOMM_NCCL_PLUGIN";
    }
    return nullptr;
  }
  auto entry = reinterpret_cast<Entry>(::dlsym(plugin, kEntry));
  if (entry == nullptr) {
    if (why != nullptr) *why = std::string(path) + " has no " + kEntry + ": not ftcomm's plugin";
    return nullptr;
  }
  return std::unique_ptr<NcclApi>(entry(why));
}

}  // namespace ftcomm::nccl
