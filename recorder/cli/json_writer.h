// A small streaming JSON writer for ftcomm-fr's --json output and trace files: enough for
// objects, arrays, strings, numbers and booleans, with correct string escaping.
#pragma once

#include <cstdint>
#include <ostream>
#include <string_view>
#include <vector>

namespace ftcomm::recorder {

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}

  JsonWriter& beginObject();
  JsonWriter& endObject();
  JsonWriter& beginArray();
  JsonWriter& endArray();
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(std::int64_t number);
  JsonWriter& value(double number);
  JsonWriter& value(bool flag);
  JsonWriter& value(int number) { return value(static_cast<std::int64_t>(number)); }
  JsonWriter& value(std::uint64_t number) { return value(static_cast<std::int64_t>(number)); }

 private:
  void separate();
  void writeString(std::string_view text);

  std::ostream& out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool afterKey_ = false;
};

}  // namespace ftcomm::recorder
