#include "core/environment.h"

#include <cstdlib>
#include <iostream>

namespace ftcomm::detail {

int envInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  if (*end != '\0' || parsed < 0 || parsed > (1 << 20)) return -2;  // malformed: refused below
  return static_cast<int>(parsed);
}

bool envSwitch(const char* name, bool fallback) {
  const int value = envInt(name, fallback ? 1 : 0);
  if (value == 0 || value == 1) return value == 1;
  std::cerr << "ftcomm: " << name << " is not 0 or 1; it stays " << (fallback ? "on" : "off")
            << "\n";
  return fallback;
}

std::string envString(const char* name, std::string fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

}  // namespace ftcomm::detail
