// ftcomm-fr show (one dump as a table) and trace (all dumps as a Chrome trace / Perfetto
// timeline: one track per rank, one slice per operation).
#pragma once

#include <ostream>

#include "recorder/cli/dump_set.h"

namespace ftcomm::recorder {

void printShow(const pb::Dump& dump, std::ostream& out);
void printTrace(const DumpSet& dumps, std::ostream& out);

}  // namespace ftcomm::recorder
