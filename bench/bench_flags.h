// What the benchmark programs' command lines share: --help, and whole-number values that are
// checked (atoi took "10x" for 10 and "x" for 0, and a run went ahead with either).
#pragma once

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string_view>

namespace ftcomm::bench {

inline bool isHelpFlag(std::string_view flag) {
  return flag == "--help" || flag == "-h";
}

// `text` as a whole number in lo..hi; nullopt where it is missing or is not one.
inline std::optional<long> wholeNumber(const char* text, long lo, long hi) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || errno != 0 || value < lo || value > hi) return std::nullopt;
  return value;
}

}  // namespace ftcomm::bench
