#include "backends/nccl/unique_id_text.h"

namespace ftcomm::nccl {
namespace {

constexpr char kDigits[] = "0123456789abcdef";
constexpr char kTag[] = "nccl-id:";
constexpr std::size_t kTagLength = sizeof(kTag) - 1;

int digitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string uniqueIdToText(const std::string& id) {
  std::string text(kTag);
  text.reserve(kTagLength + 2 * id.size());
  for (unsigned char byte : id) {
    text.push_back(kDigits[byte >> 4]);
    text.push_back(kDigits[byte & 15]);
  }
  return text;
}

Result<std::string> uniqueIdFromText(const std::string& text) {
  const auto bad = [&](const char* why) {
    return invalidArgument("not an NCCL unique id (" + std::string(why) + "): \"" +
                           text.substr(0, 40) + (text.size() > 40 ? "...\"" : "\""));
  };
  if (text.compare(0, kTagLength, kTag) != 0) return bad("no nccl-id: prefix");
  if ((text.size() - kTagLength) % 2 != 0 || text.size() == kTagLength) return bad("odd length");
  std::string id;
  id.reserve((text.size() - kTagLength) / 2);
  for (std::size_t i = kTagLength; i < text.size(); i += 2) {
    const int high = digitValue(text[i]), low = digitValue(text[i + 1]);
    if (high < 0 || low < 0) return bad("not hexadecimal");
    id.push_back(static_cast<char>(high * 16 + low));
  }
  return id;
}

}  // namespace ftcomm::nccl
