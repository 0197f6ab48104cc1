// Rules files: parsing (every error names the file and line), `set` overrides, and the canonical
// text that members agree on.
#include <array>
#include <charconv>
#include <cstdio>
#include <sstream>

#include "core/hash.h"
#include "tuning/profile.h"

namespace ftcomm::tuning {

namespace {

using algorithms::Collective;

struct CollectiveName {
  Collective collective;
  const char* name;
};
constexpr std::array kCollectiveNames{
    CollectiveName{Collective::kAllReduce, "allreduce"},
    CollectiveName{Collective::kBroadcast, "broadcast"},
    CollectiveName{Collective::kAllGather, "allgather"},
    CollectiveName{Collective::kBarrier, "barrier"},
    CollectiveName{Collective::kReduce, "reduce"},
    CollectiveName{Collective::kReduceScatter, "reduce_scatter"},
    CollectiveName{Collective::kAllToAll, "alltoall"},
};

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::optional<int> parseInt(const std::string& text) {
  int value = 0;
  auto [at, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || at != text.data() + text.size() || value < 1) return std::nullopt;
  return value;
}

// `*`, `N`, `N-M`, `N+`.
bool parseRanks(const std::string& text, Rule& rule) {
  if (text == "*") return true;
  if (!text.empty() && text.back() == '+') {
    auto from = parseInt(text.substr(0, text.size() - 1));
    if (!from) return false;
    rule.minRanks = *from;
    return true;
  }
  if (auto dash = text.find('-'); dash != std::string::npos) {
    auto from = parseInt(text.substr(0, dash)), to = parseInt(text.substr(dash + 1));
    if (!from || !to || *to < *from) return false;
    rule.minRanks = *from;
    rule.maxRanks = *to;
    return true;
  }
  auto exact = parseInt(text);
  if (!exact) return false;
  rule.minRanks = rule.maxRanks = *exact;
  return true;
}

// `*`, `A-B`, `A-`, `<N`.
bool parseRange(const std::string& text, Rule& rule) {
  if (text == "*") return true;
  if (text.size() > 1 && text[0] == '<') {
    auto below = parseBytes(text.substr(1));
    if (!below || *below == 0) return false;
    rule.maxBytes = *below - 1;
    return true;
  }
  const auto dash = text.find('-');
  if (dash == std::string::npos) return false;
  auto from = parseBytes(text.substr(0, dash));
  if (!from) return false;
  rule.minBytes = *from;
  if (dash + 1 == text.size()) return true;
  auto to = parseBytes(text.substr(dash + 1));
  if (!to || *to < *from) return false;
  rule.maxBytes = *to;
  return true;
}

template <typename Enum, std::size_t N>
std::optional<Enum> lookUp(const std::array<std::pair<const char*, Enum>, N>& table,
                           const std::string& text) {
  for (const auto& [name, value] : table) {
    if (text == name) return value;
  }
  return std::nullopt;
}
template <typename Enum, std::size_t N>
const char* nameOf(const std::array<std::pair<const char*, Enum>, N>& table, Enum value) {
  for (const auto& [name, v] : table) {
    if (v == value) return name;
  }
  return "?";
}

constexpr std::array<std::pair<const char*, Way>, 3> kWays{
    {{"inline", Way::kInline}, {"direct", Way::kDirect}, {"message", Way::kMessage}}};
constexpr std::array<std::pair<const char*, Lend>, 3> kLends{
    {{"default", Lend::kDefault}, {"mapped", Lend::kMapped}, {"choose", Lend::kChoose}}};
constexpr std::array<std::pair<const char*, Copy>, 2> kCopies{
    {{"plain", Copy::kPlain}, {"choose", Copy::kChoose}}};
constexpr std::array<std::pair<const char*, bool>, 2> kSwitches{{{"on", true}, {"off", false}}};
using LendAll = Settings::LendAll;
constexpr std::array<std::pair<const char*, LendAll>, 3> kLendAll{
    {{"auto", LendAll::kAuto}, {"all", LendAll::kAll}, {"none", LendAll::kNone}}};
using AroundCache = Settings::AroundCache;
constexpr std::array<std::pair<const char*, AroundCache>, 3> kAroundCache{
    {{"choose", AroundCache::kChoose},
     {"always", AroundCache::kAlways},
     {"never", AroundCache::kNever}}};

// One setting: its name, and how it is read from and written to text.
struct SettingField {
  const char* name;
  bool (*set)(Settings&, const std::string&);
  std::string (*get)(const Settings&);
};

template <std::size_t Settings::*kMember, bool kOffAllowed>
constexpr SettingField bytesSetting(const char* key) {
  return {key,
          [](Settings& s, const std::string& v) {
            auto bytes = parseBytes(v, kOffAllowed);
            if (bytes) s.*kMember = *bytes;
            return bytes.has_value();
          },
          [](const Settings& s) { return formatBytes(s.*kMember); }};
}

template <auto kMember, const auto& kTable>
constexpr SettingField enumSetting(const char* key) {
  return {key,
          [](Settings& s, const std::string& v) {
            auto value = lookUp(kTable, v);
            if (value) s.*kMember = *value;
            return value.has_value();
          },
          [](const Settings& s) { return std::string(nameOf(kTable, s.*kMember)); }};
}

const std::array kSettings{
    enumSetting<&Settings::inlineCollectives, kSwitches>("inline"),
    enumSetting<&Settings::inlineDirect, kSwitches>("inline_direct"),
    enumSetting<&Settings::lendAll, kLendAll>("lend"),
    enumSetting<&Settings::lendWhole, kSwitches>("lend_whole"),
    bytesSetting<&Settings::lendOneChunkFrom, true>("lend_one_chunk_from"),
    enumSetting<&Settings::aroundCache, kAroundCache>("around_cache"),
    bytesSetting<&Settings::inlinePostMax, false>("inline_post_max"),
    bytesSetting<&Settings::callerBytes, false>("caller_bytes"),
    enumSetting<&Settings::callerOnly, kSwitches>("caller_only"),
    enumSetting<&Settings::rootReturnsAtPost, kSwitches>("root_returns_at_post"),
    enumSetting<&Settings::broadcastQueue, kSwitches>("broadcast_queue"),
    enumSetting<&Settings::nodeAware, kSwitches>("node_aware"),
    bytesSetting<&Settings::nodeAwareSplitFrom, true>("node_aware_split_from"),
    bytesSetting<&Settings::copyLoopFrom, true>("copy_loop_from"),
    bytesSetting<&Settings::copyAroundCacheFrom, true>("copy_around_cache_from"),
    bytesSetting<&Settings::copyPartAroundCacheFrom, true>("copy_part_around_cache_from"),
    bytesSetting<&Settings::copyPiecesFrom, true>("copy_pieces_from"),
    bytesSetting<&Settings::resultAroundCacheFrom, true>("result_around_cache_from"),
};

Status applySetting(Settings& settings, const std::string& key, const std::string& value,
                    const std::string& where) {
  for (const SettingField& field : kSettings) {
    if (key != field.name) continue;
    if (field.set(settings, value)) return Status::Ok();
    return invalidArgument(where + ": '" + value + "' is not a value of setting " + key);
  }
  std::string known;
  for (const SettingField& field : kSettings) known += std::string(" ") + field.name;
  return invalidArgument(where + ": unknown setting '" + key + "'; known:" + known);
}

Status parseOption(Rule& rule, const std::string& option, const std::string& where) {
  const auto eq = option.find('=');
  const std::string key = option.substr(0, eq == std::string::npos ? option.size() : eq);
  const std::string value = eq == std::string::npos ? "" : option.substr(eq + 1);
  auto bad = [&] {
    return invalidArgument(where + ": '" + option +
                           "' is not an option (whole=, chunk=, room= BYTES; lend=default|mapped|"
                           "choose; copy=plain|choose; segment= BYTES; algorithm=NAME)");
  };
  if (key == "whole" || key == "chunk" || key == "room") {
    auto bytes = parseBytes(value);
    if (!bytes || *bytes == 0) return bad();
    (key == "whole" ? rule.whole : key == "chunk" ? rule.chunk : rule.room) = *bytes;
    return Status::Ok();
  }
  if (key == "lend") {
    auto lend = lookUp(kLends, value);
    if (!lend) return bad();
    rule.lend = *lend;
    return Status::Ok();
  }
  if (key == "copy") {
    auto copy = lookUp(kCopies, value);
    if (!copy) return bad();
    rule.copy = *copy;
    return Status::Ok();
  }
  if (key == "segment") {
    auto bytes = parseBytes(value);
    if (!bytes) return bad();
    rule.segment = *bytes;
    return Status::Ok();
  }
  if (key == "algorithm") {
    if (value.empty()) return bad();
    rule.algorithm = value;
    return Status::Ok();
  }
  return bad();
}

Result<Rule> parseRule(const std::vector<std::string>& w, const std::string& where) {
  if (w.size() < 4) {
    return invalidArgument(where + ": a rule is 'COLLECTIVE RANKS BYTES WAY [OPTION...]'");
  }
  Rule rule;
  if (w[0] != "*") {
    bool found = false;
    for (const auto& [collective, name] : kCollectiveNames) {
      if (w[0] == name) {
        rule.collective = {false, collective};
        found = true;
      }
    }
    if (!found) {
      return invalidArgument(where + ": unknown collective '" + w[0] +
                             "' (allreduce, broadcast, allgather, barrier, reduce, "
                             "reduce_scatter, alltoall or *)");
    }
  }
  if (!parseRanks(w[1], rule)) {
    return invalidArgument(where + ": '" + w[1] + "' is not a rank count (N, N-M, N+ or *)");
  }
  if (!parseRange(w[2], rule)) {
    return invalidArgument(where + ": '" + w[2] +
                           "' is not a byte range (A-B, A-, <N or *; sizes like 64K, 2M)");
  }
  auto way = lookUp(kWays, w[3]);
  if (!way)
    return invalidArgument(where + ": '" + w[3] + "' is not a way (inline, direct, message)");
  rule.way = *way;
  for (std::size_t i = 4; i < w.size(); ++i) {
    if (Status s = parseOption(rule, w[i], where); !s.ok()) return s;
  }
  if (rule.chunk > rule.room) rule.room = rule.chunk;
  if (rule.segment != 0 && rule.way != Way::kMessage) {
    return invalidArgument(where + ": segment= needs a rule whose way is message");
  }
  if (!rule.algorithm.empty()) {
    if (rule.collective.any || rule.way != Way::kMessage) {
      return invalidArgument(where + ": algorithm=" + rule.algorithm +
                             " needs a rule for one collective whose way is message");
    }
    const algorithms::AlgorithmInfo* algorithm =
        algorithms::findAlgorithm(rule.collective.collective, rule.algorithm);
    if (algorithm == nullptr || algorithm->readsPeers) {
      std::string known;
      for (const auto& info : algorithms::allAlgorithms()) {
        if (info.collective == rule.collective.collective && !info.readsPeers) {
          known += std::string(" ") + std::string(info.name);
        }
      }
      return invalidArgument(where + ": '" + rule.algorithm + "' is not a message algorithm of " +
                             w[0] + "; known:" + known);
    }
  }
  return rule;
}

const char* collectiveName(const CollectiveMatch& match) {
  if (match.any) return "*";
  for (const auto& [collective, name] : kCollectiveNames) {
    if (collective == match.collective) return name;
  }
  return "?";
}

}  // namespace

std::optional<std::size_t> parseBytes(const std::string& text, bool offAllowed) {
  if (offAllowed && text == "off") return kUnbounded;
  std::size_t value = 0;
  const char* end = text.data() + text.size();
  auto [at, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || at == text.data()) return std::nullopt;
  std::size_t shift = 0;
  if (at != end) {
    if (at + 1 != end) return std::nullopt;
    switch (*at) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      default:
        return std::nullopt;
    }
  }
  if (shift != 0 && value > (kUnbounded >> shift)) return std::nullopt;
  return value << shift;
}

std::string formatBytes(std::size_t bytes) {
  if (bytes == kUnbounded) return "off";
  for (auto [shift, suffix] : {std::pair{30, 'G'}, std::pair{20, 'M'}, std::pair{10, 'K'}}) {
    const std::size_t unit = std::size_t{1} << shift;
    if (bytes != 0 && bytes % unit == 0) return std::to_string(bytes / unit) + suffix;
  }
  return std::to_string(bytes);
}

Result<Profile> parseProfile(const std::string& text, const std::string& source) {
  Profile profile;
  std::istringstream in(text);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    const std::string where = source + ":" + std::to_string(number);
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    const auto w = words(line);
    if (w.empty()) continue;
    if (w[0] == "profile") {
      if (w.size() != 2) return invalidArgument(where + ": 'profile NAME'");
      profile.name = w[1];
    } else if (w[0] == "description") {
      profile.description = line.substr(line.find("description") + 11);
      profile.description.erase(0, profile.description.find_first_not_of(" \t"));
      profile.description.erase(profile.description.find_last_not_of(" \t\r") + 1);
    } else if (w[0] == "set") {
      if (w.size() != 3) return invalidArgument(where + ": 'set KEY VALUE'");
      if (Status s = applySetting(profile.settings, w[1], w[2], where); !s.ok()) return s;
    } else {
      auto rule = parseRule(w, where);
      if (!rule.ok()) return rule.status();
      rule->line = number;
      profile.rules.push_back(*rule);
    }
  }
  if (profile.name.empty()) {
    return invalidArgument(source + ": no 'profile NAME' line");
  }
  return profile;
}

Status applyOverrides(Profile& profile, const std::string& overrides, const std::string& source) {
  std::istringstream in(overrides);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      return invalidArgument(source + ": '" + item + "' is not KEY=VALUE");
    }
    FTCOMM_RETURN_IF_ERROR(
        applySetting(profile.settings, item.substr(0, eq), item.substr(eq + 1), source));
  }
  return Status::Ok();
}

std::string serialize(const Profile& profile) {
  std::ostringstream out;
  out << "profile " << profile.name << "\n";
  if (!profile.description.empty()) out << "description " << profile.description << "\n";
  for (const SettingField& field : kSettings) {
    out << "set " << field.name << " " << field.get(profile.settings) << "\n";
  }
  for (const Rule& rule : profile.rules) {
    out << collectiveName(rule.collective) << " ";
    if (rule.minRanks == 1 && rule.maxRanks == std::numeric_limits<int>::max()) {
      out << "*";
    } else if (rule.maxRanks == std::numeric_limits<int>::max()) {
      out << rule.minRanks << "+";
    } else {
      out << rule.minRanks << "-" << rule.maxRanks;
    }
    out << " " << rule.minBytes << "-";
    if (rule.maxBytes != kUnbounded) out << rule.maxBytes;
    out << " " << nameOf(kWays, rule.way) << " whole=" << formatBytes(rule.whole)
        << " chunk=" << formatBytes(rule.chunk) << " room=" << formatBytes(rule.room)
        << " lend=" << nameOf(kLends, rule.lend) << " copy=" << nameOf(kCopies, rule.copy);
    if (rule.segment != 0) out << " segment=" << formatBytes(rule.segment);
    if (!rule.algorithm.empty()) out << " algorithm=" << rule.algorithm;
    out << "\n";
  }
  return out.str();
}

std::string profileHash(const Profile& profile) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx",
                static_cast<unsigned long long>(detail::hashText(serialize(profile))));
  return text;
}

}  // namespace ftcomm::tuning
