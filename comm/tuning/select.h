// Which profile a process plans with: FTCOMM_TUNING or CommOptions::tuning, as
// `generic | auto | NAME | PATH`, optionally followed by `,KEY=VALUE...` overrides of its
// settings. `auto` (the default) looks the processor up in a table of shipped profiles and falls
// back to `generic`. This is the one place that asks which processor this is.
//
// Thread-safety: functions; the environment must not change meanwhile.
#pragma once

#include <string>

#include "tuning/profile.h"

namespace ftcomm::tuning {

// `spec` empty: FTCOMM_TUNING, or `auto` where that is unset. A malformed file, an unknown name
// or override is an error naming it (and the file's line).
Result<Profile> selectProfile(const std::string& spec);

// The shipped profile `auto` picks on this processor ("generic" where none is listed), and the
// processor's key in that table ("AuthenticAMD family 0x1a").
std::string autoProfileName();
std::string processorKey();

}  // namespace ftcomm::tuning
