// The entry point of libftcomm_nccl.so.0, the NCCL backend's vendor calls as a plugin of
// libftcomm.so (nccl_api_plugin.cc loads it). The NcclApi it returns is deleted by the library
// through its virtual destructor, whose code is this plugin's.
#include "backends/nccl/nccl_api.h"
#include "ftcomm/export.h"

extern "C" FTCOMM_API ftcomm::nccl::NcclApi* ftcomm_nccl_make_api(std::string* why) {
  return ftcomm::nccl::makeVendorApi(why).release();
}
