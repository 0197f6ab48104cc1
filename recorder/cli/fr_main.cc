// ftcomm-fr: inspects flight-recorder dumps.
//
//   ftcomm-fr show FILE
//   ftcomm-fr analyze [--json] DIR|FILE...
//   ftcomm-fr trace DIR|FILE... -o trace.json
//
// Exit codes: 0 nothing wrong, 1 analyze found a problem, 2 usage error or unreadable input.
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "recorder/cli/analysis.h"
#include "recorder/cli/show_and_trace.h"

using namespace ftcomm::recorder;

namespace {

constexpr const char* kUsage =
    "usage: ftcomm-fr show FILE\n"
    "       ftcomm-fr analyze [--json] DIR|FILE...\n"
    "       ftcomm-fr trace DIR|FILE... -o trace.json\n"
    "  show     the entries of one dump as a table, newest last\n"
    "  analyze  merge the dumps of all ranks and say what went wrong\n"
    "           (exit 0: nothing wrong, 1: a problem found, 2: unreadable input)\n"
    "  trace    write a Chrome trace / Perfetto timeline, one track per rank\n";

int usageError(const std::string& message) {
  std::cerr << "ftcomm-fr: " << message << "\n" << kUsage;
  return 2;
}

int show(const std::vector<std::string>& args) {
  if (args.size() != 1) return usageError("show takes exactly one FILE");
  auto dump = readDumpFile(args[0]);
  if (!dump.ok()) {
    std::cerr << "ftcomm-fr: " << dump.status().message() << "\n";
    return 2;
  }
  printShow(*dump, std::cout);
  return 0;
}

int analyzeCommand(const std::vector<std::string>& args) {
  bool json = false;
  std::vector<std::string> paths;
  for (const auto& arg : args) {
    if (arg == "--json")
      json = true;
    else if (arg.rfind("--", 0) == 0)
      return usageError("unknown flag " + arg);
    else
      paths.push_back(arg);
  }
  if (paths.empty()) return usageError("analyze needs at least one DIR or FILE");
  const Analysis analysis = analyze(loadDumps(paths));
  if (json)
    printJson(analysis, std::cout);
  else
    printText(analysis, std::cout);
  return analysis.exitCode();
}

int trace(const std::vector<std::string>& args) {
  std::vector<std::string> paths;
  std::string output;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o") {
      if (i + 1 >= args.size()) return usageError("-o needs a file name");
      output = args[++i];
    } else if (args[i].rfind("-", 0) == 0) {
      return usageError("unknown flag " + args[i]);
    } else {
      paths.push_back(args[i]);
    }
  }
  if (paths.empty() || output.empty()) return usageError("trace needs DIR|FILE... and -o FILE");
  const DumpSet dumps = loadDumps(paths);
  for (const auto& u : dumps.unreadable) std::cerr << "ftcomm-fr: unreadable: " << u.error << "\n";
  std::ofstream out(output);
  if (!out) {
    std::cerr << "ftcomm-fr: cannot write " << output << "\n";
    return 2;
  }
  printTrace(dumps, out);
  std::cerr << "ftcomm-fr: wrote " << output << " (" << dumps.dumps.size() << " ranks)\n";
  return dumps.unreadable.empty() ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usageError("no command");
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return 0;
  }
  if (command == "show") return show(args);
  if (command == "analyze") return analyzeCommand(args);
  if (command == "trace") return trace(args);
  return usageError("unknown command '" + command + "'");
}
