// FTCOMM_TUNING: a built-in profile, `auto` by processor, or a rules file, with overrides.
#include "tuning/select.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace ftcomm::tuning {

namespace {

struct ProcessorId {
  std::string vendor;   // CPUID's vendor string; empty where there is no CPUID
  unsigned family = 0;  // base family plus extended family, as CPUID leaf 1 reports it
};

ProcessorId processorId() {
  ProcessorId id;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return id;
  char vendor[13] = {};
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  id.vendor = vendor;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return id;
  const unsigned base = (eax >> 8) & 0xf;
  id.family = base == 0xf ? base + ((eax >> 20) & 0xff) : base;
#endif
  return id;
}

// The shipped profiles by processor: the first row whose vendor matches and whose family range
// holds this processor's family. docs/tuning.md says what each was measured on.
struct ProcessorRow {
  const char* vendor;
  unsigned fromFamily, toFamily;
  const char* profile;
};
constexpr std::array kProcessors{
    ProcessorRow{"AuthenticAMD", 0x17, 0x17, "zen2"},
    ProcessorRow{"AuthenticAMD", 0x19, 0x19, "zen3"},
    ProcessorRow{"AuthenticAMD", 0x1a, 0xff, "zen5"},
    ProcessorRow{"GenuineIntel", 0x6, 0x6, "xeon"},
};

Result<std::string> readFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return invalidArgument("FTCOMM_TUNING: cannot read the rules file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string processorKey() {
  const ProcessorId id = processorId();
  if (id.vendor.empty()) return "no CPUID";
  char family[16];
  std::snprintf(family, sizeof family, "0x%x", id.family);
  return id.vendor + " family " + family;
}

std::string autoProfileName() {
  const ProcessorId id = processorId();
  for (const ProcessorRow& row : kProcessors) {
    if (id.vendor == row.vendor && id.family >= row.fromFamily && id.family <= row.toFamily) {
      return row.profile;
    }
  }
  return "generic";
}

Result<Profile> selectProfile(const std::string& spec) {
  std::string value = spec;
  if (value.empty()) {
    const char* set = std::getenv("FTCOMM_TUNING");
    value = set != nullptr && *set != '\0' ? set : "auto";
  }
  const auto comma = value.find(',');
  std::string base = value.substr(0, comma);
  const std::string overrides = comma == std::string::npos ? "" : value.substr(comma + 1);
  if (base.empty() || base == "auto") base = autoProfileName();
  Result<Profile> profile = invalidArgument("");
  if (const char* builtin = builtinProfileText(base)) {
    profile = parseProfile(builtin, "built-in profile " + base);
  } else if (base.find('/') != std::string::npos || base.find('.') != std::string::npos) {
    auto text = readFile(base);
    if (!text.ok()) return text.status();
    profile = parseProfile(*text, base);
  } else {
    std::string known;
    for (const std::string& name : builtinProfileNames()) known += " " + name;
    return invalidArgument("FTCOMM_TUNING=" + value + ": '" + base +
                           "' is neither a built-in profile (auto," + known +
                           ") nor a rules file's path");
  }
  if (!profile.ok()) return profile.status();
  if (!overrides.empty()) {
    FTCOMM_RETURN_IF_ERROR(applyOverrides(*profile, overrides, "FTCOMM_TUNING overrides"));
  }
  return profile;
}

}  // namespace ftcomm::tuning
