// The case table of the generated GPU-kernel type test (tests/unit/test_gpu_ops.cpp): for every op that
// has (or will have) a GPU kernel, one or more one-node models whose inputs take the dtypes the op's ONNX
// schema admits for one type parameter. The runner builds each model for every admitted dtype, runs it on
// the CPU reference and on WebGPU (capture, fail_loud, 3 runs) and compares.
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "onnxgpu/tensor.h"

namespace onnxgpu::gpu_op_cases {

using Rng = std::mt19937_64;

// Value domains of generated inputs (per dtype; see make_values in gpu_op_cases.cpp).
//   Wide        ints: small, negative, beyond 2^32, near INT64_MAX/2, the 32-bit word boundaries and the
//               type's extremes; floats: [-3, 3]
//   NonZero     Wide without zero (integer divisors); floats with |x| >= 0.5
//   Positive    ints >= 1 (Wide magnitudes); floats [0.1, 3]
//   Small       ints [-4, 4] ([0, 4] unsigned); floats [-3, 3]
//   SmallNonNeg ints [0, 5]; floats [0, 3]
//   Unit        floats (-0.95, 0.95) (asin, acos, atanh)
//   GeOne       floats [1.05, 3] (acosh)
//   Tricky      a few values per type that collide often (ties, equal elements, both sides of the
//               32-bit word boundary): for comparisons, Max/Min, ArgMax, TopK
//   Special     floats with NaN and +-inf among ordinary values (IsNaN, IsInf)
enum class Dom { Wide, NonZero, Positive, Small, SmallNonNeg, Unit, GeOne, Tricky, Special };

enum class Extremes { All, NoOverflow, None };

// Custom values: gets the input's dtype and shape.
using Gen = std::function<Tensor(DType dtype, const Shape& shape, Rng& rng)>;

struct In {
  std::string name;                // "" = an omitted optional input
  Shape shape;
  std::optional<DType> dtype;      // nullopt: the case's varied dtype
  Dom dom = Dom::Wide;
  Gen gen;                         // overrides dom when set
  bool constant = false;           // an initializer (the same value in every run) instead of a graph input
  Gen second;                      // values of the second value set (the first replay), when set
};

struct Case {
  std::string op;
  std::string variant;             // "" or what distinguishes this case from the op's other cases
  std::string domain;              // "" (ai.onnx) or another domain the model imports at version 1 (com.microsoft)
  int opset = 17;                  // of ai.onnx
  std::string type_param = "T";    // the schema type parameter whose dtypes are varied
  // When the ONNX 1.12 schema library has no schema for op@opset (ops newer than opset 17), or only an
  // older one whose types a newer spec widened (BitShift-28), the dtypes to vary, from the newer spec.
  std::vector<DType> dtypes_without_schema;
  // Restricts the schema's dtypes (only with a reason in `note`): the case's attributes make sense for
  // these only (e.g. Resize linear on floats); another case of the op covers the rest.
  std::vector<DType> only;
  // The dtypes a default run tests (the rest only with ONNXGPU_GPU_OPS_ALL=1): for the extra cases of
  // ops whose kernels are slow to compile on SwiftShader (seconds per pipeline); the op's first case
  // always runs every admitted dtype.
  std::vector<DType> quick;
  std::vector<In> inputs;
  int outputs = 1;
  std::vector<int> omitted_outputs;  // optional outputs left out of the node (among the first `outputs`)
  std::function<void(onnx::NodeProto&, DType)> attrs;  // the varied dtype, for dtype attributes
  double tol = 1.0;                // multiplies the float tolerances (documented in `note` when != 1)
  double atol = 0;                 // an absolute tolerance added for float outputs (a spec'd error bound)
  bool may_fold = false;           // every input is constant: the node is folded at plan time, not run on the GPU
  // The second value set is invalid (e.g. an index of 2^32 + 1, which a GPU kernel reading only the low
  // word would take for 1): the CPU and the GPU replay must both fail, and the GPU session must run
  // the first values again afterwards.
  bool second_run_fails = false;
  // The extreme-values replay: every float graph input of the varied dtype without a custom generator
  // gets extreme_values() in one more replay. NoOverflow leaves out the finite magnitudes beyond 100
  // (ops that accumulate: their CPU reference sums in double, where those do not overflow); None
  // skips the replay. Anything but All says why in `extremes_note`.
  Extremes extremes = Extremes::All;
  std::string extremes_note;
  std::string note;
  std::string family;              // the group of cases one gtest runs (set by the table)

  std::string name() const { return variant.empty() ? op : op + "[" + variant + "]"; }
  // The op as the registries list it: "Op", or "domain.Op" outside ai.onnx.
  std::string qualified_op() const { return domain.empty() ? op : domain + "." + op; }
};

// Values at the edges of a float dtype, with ordinary ones among them: NaN, +-inf, +-0, the largest
// finite magnitudes and +-1e4 (not with NoOverflow), values where exp overflows and tanh saturates
// (+-20, +-88.5, +-100), subnormals, and a few in [-3, 3]. For integer dtypes: make_values(Wide).
Tensor extreme_values(DType dtype, const Shape& shape, Extremes kind, Rng& rng);

// The same values with subnormals flushed to (signed) zero: what a GPU that flushes them (WGSL allows
// it) computes on.
Tensor flush_subnormals(const Tensor& t);

// Every case (for ops registered on the GPU or not).
const std::vector<Case>& all_cases();

// Values of `dtype` and `shape` from a domain.
Tensor make_values(DType dtype, const Shape& shape, Dom dom, Rng& rng);

}  // namespace onnxgpu::gpu_op_cases
