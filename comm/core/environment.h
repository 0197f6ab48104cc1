// ftcomm's settings from the environment (FTCOMM_*, mpirun's OMPI_*), read the same way by every
// facade.
//
// Thread-safety: reads the environment; call while no thread changes it.
#pragma once

#include <string>

namespace ftcomm::detail {

// The integer in `name` (0 to 2^20), `fallback` when unset or empty, -2 when malformed (callers
// refuse it, naming the variable).
int envInt(const char* name, int fallback);
// A switch in `name`: 0 or 1, `fallback` when unset or empty; anything else keeps `fallback`,
// with a warning on stderr naming the variable.
bool envSwitch(const char* name, bool fallback);
std::string envString(const char* name, std::string fallback);

}  // namespace ftcomm::detail
