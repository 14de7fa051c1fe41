// INT64 on the GPU is decided here, in one place (see docs/architecture.md).
#pragma once
#include <map>
#include <string>

namespace onnxgpu {

struct Int64Policy {
  enum class Strategy {
    BitcastToI32,  // default: each int64 is two 32-bit words (lo, hi) on the GPU; exact 64-bit semantics
    CastToI32,     // one i32 per element; values outside int32 are reported as errors naming the tensor
    PerOpOptin,    // the old behaviour: only ops on an explicit list take INT64 on the GPU, the rest fall back
  };
  Strategy strategy = Strategy::BitcastToI32;
  bool fallback_per_op_not_whole_graph = true;  // a node the GPU can't run falls back alone
  bool fail_loud = false;                       // any fallback or overflow is an error instead

  static Strategy parse_strategy(const std::string& s);  // "bitcast" / "bitcast_to_i32", "cast" / ..., "per-op" / ...
  static const char* strategy_name(Strategy s);           // "bitcast_to_i32", "cast_to_i32", "per_op_optin"
  // Under PerOpOptin, the ops that take INT64 on the GPU: the shape of ONNX Runtime's WebGPU opt-in, a
  // handful of data-movement ops registered for int64.
  static bool legacy_optin(const std::string& op_type);
};

}  // namespace onnxgpu
