#include "ftcomm/version.h"

namespace ftcomm {

Version version() {
  return {FTCOMM_VERSION_MAJOR, FTCOMM_VERSION_MINOR, FTCOMM_VERSION_PATCH};
}

const char* versionString() {
  return FTCOMM_VERSION_STRING;
}

}  // namespace ftcomm
