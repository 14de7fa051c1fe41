// onnxgpu conformance PATH... [engine flags] [--filter REGEX] [--runs N] [--json]
// Exit code 0 when it ran, whatever failed.
#include <iostream>

#include "commands.h"
#include "common.h"
#include "runtime/conformance.h"

namespace onnxgpu::tools {

namespace {
struct ConformanceFlags {
  std::vector<std::string> paths;
  EngineFlags engine;
  std::string filter;
  int runs = 1;
  bool json = false;
  bool verbose = false;
};

void conformance_command(const ConformanceFlags& f) {
  runtime::ConformanceOptions o;
  o.session = f.engine.options();
  o.filter = f.filter;
  o.runs = f.runs;
  auto results = runtime::run_conformance(f.paths, o);
  int passed = 0, failed = 0, unsupported = 0;
  nlohmann::json tests = nlohmann::json::array();
  for (const auto& t : results) {
    passed += t.status == "passed";
    failed += t.status == "failed";
    unsupported += t.status == "unsupported";
    tests.push_back({{"name", t.name}, {"status", t.status}, {"detail", t.detail}, {"ops", t.ops},
                     {"seconds", t.seconds}});
    if (!f.json && (t.status != "passed" || f.verbose))
      std::cout << t.status << "  " << t.name << (t.detail.empty() ? "" : ": " + t.detail) << "\n";
  }
  if (f.json) {
    nlohmann::json j = {{"ep", o.session.ep},         {"capture", o.session.capture},
                        {"total", int(results.size())}, {"passed", passed},
                        {"failed", failed},             {"unsupported", unsupported},
                        {"tests", tests}};
    std::cout << j.dump(1) << "\n";
  } else {
    std::cout << results.size() << " tests: " << passed << " passed, " << failed << " failed, " << unsupported
              << " unsupported\n";
  }
}
}  // namespace

void add_conformance_command(CLI::App& app) {
  auto f = std::make_shared<ConformanceFlags>();
  auto* cmd = app.add_subcommand("conformance", "run ONNX backend test folders and compare outputs");
  cmd->add_option("paths", f->paths, "test folder(s) or folder(s) of tests")->required();
  f->engine.add_to(cmd);
  cmd->add_option("--filter", f->filter, "regex searched in test names");
  cmd->add_option("--runs", f->runs, "runs per data set (checks replays)")->check(CLI::PositiveNumber);
  cmd->add_flag("--json", f->json, "JSON output");
  cmd->add_flag("-v,--verbose", f->verbose, "list passing tests too");
  cmd->callback([f] { conformance_command(*f); });
}

}  // namespace onnxgpu::tools
