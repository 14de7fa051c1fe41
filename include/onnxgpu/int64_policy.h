// INT64 on the GPU is decided here, in one place (see docs/architecture.md).
#pragma once
#include <map>
#include <string>

#include "onnxgpu/dtype.h"

namespace onnxgpu {

struct Int64Policy {
  enum class Strategy {
    BitcastToI32,  // default: each int64 is two 32-bit words (lo, hi) on the GPU; exact 64-bit semantics
    CastToI32,     // one i32 per element; values outside int32 are reported as errors naming the tensor
    PerOpOptin,    // ONNX Runtime WebGPU's model: only ops on an explicit list take INT64 on the GPU, the rest fall back
  };
  Strategy strategy = Strategy::BitcastToI32;
  bool fallback_per_op_not_whole_graph = true;  // a node the GPU can't run falls back alone
  bool fail_loud = false;                       // any fallback or overflow is an error instead

  static Strategy parse_strategy(const std::string& s);  // "bitcast" / "bitcast_to_i32", "cast" / ..., "per-op" / ...
  static const char* strategy_name(Strategy s);           // "bitcast_to_i32", "cast_to_i32", "per_op_optin"
  // Under PerOpOptin, the ops that take INT64 on the GPU: the shape of ONNX Runtime's WebGPU opt-in, a
  // handful of data-movement ops registered for int64.
  static bool legacy_optin(const std::string& op_type);

  // Whether a node of `op_type` that reads or writes INT64 may run on the GPU (false only under
  // PerOpOptin for an op off the list).
  bool gpu_takes_int64(const std::string& op_type) const {
    return strategy != Strategy::PerOpOptin || legacy_optin(op_type);
  }
  // Whether values of `dtype` are narrowed on the GPU (INT64 under CastToI32: one i32 per element).
  bool narrows(DType dtype) const { return dtype == DType::Int64 && strategy == Strategy::CastToI32; }
};

}  // namespace onnxgpu
