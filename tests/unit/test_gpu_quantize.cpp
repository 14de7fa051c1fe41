// QuantizeLinear and DequantizeLinear on the GPU beyond the op cases: QuantizeLinear's rounding at
// ties (x / scale exactly k + 1/2, and quotients one float32 step either side of one, which a division
// accurate to 2.5 ulp would move), extreme values (NaN, +-inf, subnormals, beyond the output's range)
// and blocked scales; DequantizeLinear of int32 values whose difference with the zero point exceeds 2^31.
// Every result must equal the CPU reference's exactly.
//
// Run: XDG_RUNTIME_DIR=/tmp build/tests/unit_tests --gtest_filter='GpuQuantize*'
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "one_node.h"
#include "onnxgpu/session.h"
#include "runtime/compare.h"

namespace onnxgpu {
namespace {

using testing::Operand;

void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  auto r = runtime::compare_tensors(got, want, runtime::Tolerance{0.0, 0.0});
  EXPECT_TRUE(r.passed) << what << ": " << r.message;
}

// The float32 values next to v.
float up(float v) { return std::nextafter(v, std::numeric_limits<float>::infinity()); }
float down(float v) { return std::nextafter(v, -std::numeric_limits<float>::infinity()); }

TEST(GpuQuantize, QuantizeRoundsCorrectlyRoundedQuotientsHalfToEven) {
  // Scales whose quotients land on k + 1/2 exactly, or one float32 step beside it.
  const std::vector<float> scales = {3.0f, 0.1f, 1.7f, 0.0078125f, 12.345f, 1e-3f};
  std::vector<float> x;
  for (float s : scales)
    for (int k = -6; k <= 6; ++k) {
      const float tie = (float(k) + 0.5f) * s;  // rounded: the quotient may be a step off k + 1/2
      x.insert(x.end(), {tie, up(tie), down(tie), float(k) * s});
    }
  const float inf = std::numeric_limits<float>::infinity();
  x.insert(x.end(), {std::numeric_limits<float>::quiet_NaN(), inf, -inf, 1e-40f, -1e-40f, 0.0f, -0.0f, 3e38f, -3e38f,
                     1e30f, 700.5f, -129.5f});
  const int64_t n = int64_t(x.size());
  for (float s : scales)
    for (DType out : {DType::UInt8, DType::Int8, DType::Int16}) {
      std::vector<Operand> in{{"x", Tensor::from_vector<float>({n}, x)}, {"y_scale", Tensor::scalar<float>(s)},
                              {"y_zero_point", Tensor::scalar<int64_t>(out == DType::UInt8 ? 10 : -3).cast(out)}};
      const std::string model = testing::one_node_model("QuantizeLinear", in, {"y"}, 21);
      SessionOptions o = testing::webgpu_options();
      o.int64.fail_loud = true;
      testing::check_against_cpu("scale " + std::to_string(s) + " " + std::string(dtype_name(out)), model, in, o,
                                 expect_same, 1);
    }
}

TEST(GpuQuantize, QuantizeBlockedMatchesTheCpu) {
  // x [3, 7, 2] in blocks of 3 along axis 1 (3 blocks, the last of 1): scales [3, 3, 2].
  std::vector<float> xv(42), sv(18);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = float(int(i) - 20) * 0.75f;
  for (size_t i = 0; i < sv.size(); ++i) sv[i] = 0.25f + 0.125f * float(i);
  std::vector<Operand> in{{"x", Tensor::from_vector<float>({3, 7, 2}, xv)}, {"y_scale", Tensor::from_vector<float>({3, 3, 2}, sv)}};
  const std::string model = testing::one_node_model("QuantizeLinear", in, {"y"}, 21, [](onnx::NodeProto& n) {
    testing::set_int(n, "axis", 1);
    testing::set_int(n, "block_size", 3);
    testing::set_int(n, "output_dtype", int64_t(DType::Int16));
  });
  testing::check_against_cpu("blocked", model, in, testing::webgpu_options(), expect_same, 1);
}

TEST(GpuQuantize, DequantizeInt32BeyondHalfTheRange) {
  std::vector<Operand> in{{"x", Tensor::from_vector<int32_t>({4}, {std::numeric_limits<int32_t>::max(), -5, 0, 123456789})},
                          {"x_scale", Tensor::scalar<float>(0.5f)},
                          {"x_zero_point", Tensor::scalar<int32_t>(std::numeric_limits<int32_t>::min())}};
  const std::string model = testing::one_node_model("DequantizeLinear", in, {"y"}, 13);
  SessionOptions o = testing::webgpu_options();
  o.int64.fail_loud = true;
  // (2^31 - 1 + 2^31) * 0.5 is 2^31 - 0.5: the int64 difference, rounded to float32 once.
  testing::check_against_cpu("int32", model, in, o, [](const Tensor& got, const Tensor& want, const std::string& what) {
    auto r = runtime::compare_tensors(got, want, runtime::Tolerance{1e-7, 0.0});
    EXPECT_TRUE(r.passed) << what << ": " << r.message;
  }, 1);
}

// DynamicQuantizeLinear: the scale, zero point and every y bit-equal to the CPU's, recorded and replayed:
// mixed signs over more elements than the range's workgroup (3000), positive only (zero point 0),
// negative only (255), all zeros (scale 0), a NaN (NaN scale, zero point 0, y 0), values on ties.
TEST(GpuQuantize, DynamicQuantizeMatchesTheCpu) {
  std::vector<std::pair<std::string, std::vector<float>>> cases;
  std::vector<float> mixed(3000);
  for (size_t i = 0; i < mixed.size(); ++i) mixed[i] = std::sin(float(i) * 0.37f) * 7.5f + (i == 1234 ? -20.0f : 0.0f);
  cases.push_back({"mixed", mixed});
  cases.push_back({"positive", {0.5f, 3.0f, 1.25f, 2.0f, 0.0f, 7.0f}});
  cases.push_back({"negative", {-0.5f, -3.0f, -1.25f, -2.0f, -7.0f}});
  cases.push_back({"zeros", {0.0f, -0.0f, 0.0f}});
  cases.push_back({"nan", {1.0f, std::numeric_limits<float>::quiet_NaN(), -2.0f}});
  std::vector<float> ties;  // range [-255, 255]: scale 2, quotients k + 1/2 at odd x
  for (int k = -255; k <= 255; k += 3) ties.push_back(float(k));
  ties.push_back(255.0f);
  cases.push_back({"ties", ties});
  for (const auto& [what, x] : cases) {
    std::vector<Operand> in{{"x", Tensor::from_vector<float>({int64_t(x.size())}, x)}};
    const std::string model = testing::one_node_model("DynamicQuantizeLinear", in, {"y", "y_scale", "y_zero_point"}, 11);
    SessionOptions o = testing::webgpu_options();
    o.int64.fail_loud = true;  // no CPU node
    testing::check_against_cpu(what, model, in, o, expect_same, 1);
  }
}

}  // namespace
}  // namespace onnxgpu
