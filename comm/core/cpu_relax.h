// A spinning thread's pause between two looks at shared memory: it lets the other hyperthread
// of the core run and eases the memory system's speculation on the loop.
#pragma once

namespace ftcomm::detail {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace ftcomm::detail
