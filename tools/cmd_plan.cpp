// onnxgpu plan MODEL [engine flags] [--shape N=2x13]... [--input N=F]... [--data-set DIR] [--json]
// Plans the model for one input-shape signature (by running it once on generated or given inputs)
// and prints where every node runs: GPU kernels, CPU fallbacks with their reasons, folded nodes,
// captured segments and the INT64 representation.
#include <iostream>

#include "commands.h"
#include "common.h"

namespace onnxgpu::tools {

namespace {
struct PlanFlags {
  std::string model;
  EngineFlags engine;
  InputFlags in;
  bool json = false;
};

void plan_command(const PlanFlags& f) {
  Session session(f.model, f.engine.options());
  session.run(f.in.feeds(session));
  const PlanReport& p = session.last_plan();
  nlohmann::json j = plan_json(p);
  if (f.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << "plan of " << f.model << " (" << p.signature << ")\n"
            << (p.adapter.empty() ? "" : "  adapter " + p.adapter + "\n")
            << "  nodes " << p.nodes << ": " << p.gpu_nodes << " on the GPU, " << p.cpu_nodes << " on the CPU, "
            << p.folded_nodes << " folded at plan time, " << p.fused_nodes << " fused into shared kernels\n"
            << "  " << p.segments << " GPU segment(s), " << p.dispatches << " dispatches per run, captured "
            << (p.captured ? "yes" : "no") << (p.whole_graph_fallback ? ", WHOLE GRAPH ON THE CPU" : "") << "\n"
            << "  INT64 (" << p.int64_strategy << "): " << p.int64_tensors << " run-time int64 tensors, "
            << p.int64_on_gpu << " on the GPU\n";
  for (const auto& b : p.branches_taken) std::cout << "  If taken: " << b << "\n";
  for (const auto& fb : p.fallbacks) std::cout << "  CPU: " << fb.node << " (" << fb.op << "): " << fb.reason << "\n";
}
}  // namespace

void add_plan_command(CLI::App& app) {
  auto f = std::make_shared<PlanFlags>();
  auto* cmd = app.add_subcommand("plan", "show where each node runs for one input-shape signature");
  cmd->add_option("model", f->model, "model.onnx")->required();
  f->engine.add_to(cmd);
  f->in.add_to(cmd);
  cmd->add_flag("--json", f->json, "JSON output");
  cmd->callback([f] { plan_command(*f); });
}

}  // namespace onnxgpu::tools
