// NcclApi where this build has no NCCL: makeVendorApi() says so.
#include "backends/nccl/nccl_api.h"

namespace ftcomm::nccl {

std::unique_ptr<NcclApi> makeVendorApi(std::string* why) {
  if (why != nullptr) {
    *why = "this ftcomm was built without NCCL (nccl.h was not found; FTCOMM_WITH_NCCL)";
  }
  return nullptr;
}

}  // namespace ftcomm::nccl
