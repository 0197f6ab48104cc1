// Fixed-width little-endian integers in byte strings: the framing of ftcomm's files (rendezvous
// journal, flight-recorder dumps). Internal to the library.
#pragma once

#include <cstdint>
#include <string>

namespace ftcomm::detail {

inline void appendU32(std::string& out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

inline std::uint32_t readU32(const char* bytes) {
  std::uint32_t value = 0;
  for (int i = 0; i < 4; ++i) {
    value |= std::uint32_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  }
  return value;
}

}  // namespace ftcomm::detail
