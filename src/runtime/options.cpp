#include "runtime/options.h"

#include <set>
#include <string>

#include "cpu/blas.h"

namespace onnxgpu {

Int64Policy::Strategy Int64Policy::parse_strategy(const std::string& s) {
  if (s == "bitcast" || s == "bitcast_to_i32") return Strategy::BitcastToI32;
  if (s == "cast" || s == "cast_to_i32") return Strategy::CastToI32;
  if (s == "per-op" || s == "per_op" || s == "per_op_optin") return Strategy::PerOpOptin;
  throw InvalidArgument("unknown INT64 strategy '" + s + "' (expected bitcast_to_i32, cast_to_i32 or per_op_optin)");
}

const char* Int64Policy::strategy_name(Strategy s) {
  switch (s) {
    case Strategy::BitcastToI32: return "bitcast_to_i32";
    case Strategy::CastToI32: return "cast_to_i32";
    case Strategy::PerOpOptin: return "per_op_optin";
  }
  return "?";
}

bool Int64Policy::legacy_optin(const std::string& op) {
  static const std::set<std::string> ops = {"Cast", "Concat", "Expand", "Gather", "Identity", "Reshape",
                                            "Shape", "Slice", "Squeeze", "Transpose", "Unsqueeze"};
  return ops.count(op) != 0;
}

namespace runtime {

namespace {
bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "1" || v == "true" || v == "True") return true;
  if (v == "0" || v == "false" || v == "False") return false;
  throw InvalidArgument("session config entry '" + key + "': expected 0 or 1, got '" + v + "'");
}
int parse_threads(const std::string& key, const std::string& v) {
  size_t used = 0;
  int n = -1;
  try {
    n = std::stoi(v, &used);
  } catch (const std::exception&) {
  }
  if (used != v.size() || n < 0)
    throw InvalidArgument("session config entry '" + key + "': expected an integer >= 0, got '" + v + "'");
  return n;
}
}  // namespace

void apply_config_entries(SessionOptions& o) {
  for (const auto& [key, value] : o.config) {
    if (key == "gpu_graph_capture") o.capture = parse_bool(key, value);
    else if (key == "onnxgpu.ep") o.ep = value;
    else if (key == "onnxgpu.profile") o.profile = parse_bool(key, value);
    else if (key == "onnxgpu.fusion") o.fusion = parse_bool(key, value);
    else if (key == "onnxgpu.external_data_root") o.external_data_root = value;
    else if (key == "onnxgpu.int64.strategy") o.int64.strategy = Int64Policy::parse_strategy(value);
    else if (key == "onnxgpu.int64.fail_loud") o.int64.fail_loud = parse_bool(key, value);
    else if (key == "onnxgpu.int64.fallback_per_op") o.int64.fallback_per_op_not_whole_graph = parse_bool(key, value);
    else if (key == "onnxgpu.intra_op_num_threads") o.intra_op_num_threads = parse_threads(key, value);
    else if (key.rfind("onnxgpu.", 0) == 0) throw InvalidArgument("unknown session config entry '" + key + "'");
  }
  if (o.ep != "webgpu" && o.ep != "cpu")
    throw InvalidArgument("unknown execution provider '" + o.ep + "' (expected webgpu or cpu)");
  if (o.intra_op_num_threads < 0)
    throw InvalidArgument("intra_op_num_threads must be >= 0, got " + std::to_string(o.intra_op_num_threads));
  if (o.intra_op_num_threads > 0) cpu::blas::set_num_threads(o.intra_op_num_threads);
}

}  // namespace runtime
}  // namespace onnxgpu
