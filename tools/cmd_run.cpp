// onnxgpu run MODEL [engine flags] [--input N=F]... [--shape N=2x13]... [--data-set DIR] [--runs N]
//                    [--out-dir DIR] [--json]
#include <chrono>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "loader/tensor_proto.h"
#include "runtime/compare.h"

namespace onnxgpu::tools {

namespace {
struct RunFlags {
  std::string model;
  EngineFlags engine;
  InputFlags in;
  int runs = 1;
  std::string out_dir;
  bool json = false;
  double rtol = 1e-3, atol = 1e-5;
};

void run_command(const RunFlags& f) {
  Session session(f.model, f.engine.options());
  auto feeds = f.in.feeds(session);
  std::vector<Tensor> expected = f.in.expected_outputs();
  nlohmann::json compare;
  std::vector<Tensor> outs;
  std::vector<double> ms;
  bool passed = true;
  double max_abs = 0;
  std::string why;
  for (int r = 0; r < std::max(1, f.runs); ++r) {
    auto t0 = std::chrono::steady_clock::now();
    outs = session.run(feeds);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    for (size_t k = 0; k < expected.size() && k < outs.size(); ++k) {
      auto c = runtime::compare_tensors(outs[k], expected[k], {f.rtol, f.atol});
      max_abs = std::max(max_abs, c.max_abs_diff);
      if (!c.passed && passed) {
        passed = false;
        why = "run " + std::to_string(r + 1) + ", output '" + session.outputs()[k].name + "': " + c.message;
      }
    }
    if (!expected.empty() && expected.size() != outs.size() && passed) {
      passed = false;
      why = "the data set has " + std::to_string(expected.size()) + " outputs, the model " + std::to_string(outs.size());
    }
  }
  if (!f.out_dir.empty()) {
    std::filesystem::create_directories(f.out_dir);
    size_t k = 0;
    for (const auto& info : session.inputs())
      loader::write_tensor_pb(f.out_dir + "/input_" + std::to_string(k++) + ".pb", info.name, feeds.at(info.name));
    for (size_t i = 0; i < outs.size(); ++i)
      loader::write_tensor_pb(f.out_dir + "/output_" + std::to_string(i) + ".pb", session.outputs()[i].name, outs[i]);
  }
  nlohmann::json j;
  j["model"] = f.model;
  j["ep"] = session.options().ep;
  j["outputs"] = nlohmann::json::array();
  for (size_t i = 0; i < outs.size(); ++i) j["outputs"].push_back(tensor_summary(session.outputs()[i].name, outs[i]));
  j["plan"] = plan_json(session.last_plan());
  j["runs"] = ms.size();
  j["run_ms"] = ms;
  if (!expected.empty()) {
    j["compare"] = {{"passed", passed}, {"max_abs_diff", max_abs}};
    if (!passed) j["compare"]["reason"] = why;
  }
  if (f.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    for (const auto& o : j["outputs"])
      std::cout << o["name"].get<std::string>() << ": " << o["dtype"].get<std::string>() << o["shape"].dump()
                << " checksum " << o["checksum"].get<std::string>() << "\n";
    if (!expected.empty()) {
      // Say what "passed" means: integers exactly, floats within the tolerance.
      int exact = 0, floats = 0;
      for (const Tensor& t : expected) (dtype_is_float(t.dtype()) ? floats : exact) += 1;
      std::ostringstream how;
      if (exact) how << exact << " integer/bool output(s) equal";
      if (exact && floats) how << "; ";
      if (floats) how << floats << " float output(s) within atol " << f.atol << " + rtol " << f.rtol << " (max abs diff " << max_abs << ")";
      std::cout << "compare: " << (passed ? "passed: " + how.str() : "FAILED: " + why) << "\n";
    }
  }
  if (!passed) throw Error("outputs do not match the data set: " + why);
}
}  // namespace

void add_run_command(CLI::App& app) {
  auto f = std::make_shared<RunFlags>();
  auto* cmd = app.add_subcommand("run", "run a model and print its outputs");
  cmd->add_option("model", f->model, "model.onnx")->required();
  f->engine.add_to(cmd);
  f->in.add_to(cmd);
  cmd->add_option("--runs", f->runs, "number of runs (each is compared with the data set)")->check(CLI::PositiveNumber);
  cmd->add_option("--out-dir", f->out_dir, "write input_K.pb / output_K.pb here");
  cmd->add_option("--rtol", f->rtol, "relative tolerance of the float comparison");
  cmd->add_option("--atol", f->atol, "absolute tolerance of the float comparison");
  cmd->add_flag("--json", f->json, "JSON output");
  cmd->callback([f] { run_command(*f); });
}

}  // namespace onnxgpu::tools
