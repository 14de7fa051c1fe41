// The narrow element types (float8 in its four kinds and e8m0, float4e2m1, int4, uint4, int2, uint2): their values and
// rounding (dtype.h's narrow_to_double / narrow_from_double), the loader's packing, and the models that use
// them: Cast, CastLike, QuantizeLinear, DequantizeLinear and data movement on the CPU reference and on
// WebGPU, where they run on the GPU (shader/narrow.h: the shader layer's loads and stores) and an int4
// weight-only model's dequantized weights fold into constants.
//
// Run: XDG_RUNTIME_DIR=/tmp build/tests/unit_tests --gtest_filter='NarrowTypes*'
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "loader/tensor_proto.h"
#include "model_builder.h"
#include "one_node.h"
#include "onnxgpu/session.h"
#include "runtime/compare.h"

namespace onnxgpu {
namespace {

using testing::Operand;

constexpr DType kNarrowFloats[] = {DType::Float8E4M3FN, DType::Float8E4M3FNUZ, DType::Float8E5M2, DType::Float8E5M2FNUZ,
                                   DType::Float4E2M1};
constexpr DType kNarrowInts[] = {DType::Int4, DType::UInt4, DType::Int2, DType::UInt2};

// A narrow tensor of the given values (each rounded or wrapped to the type).
Tensor narrow(DType t, const Shape& shape, const std::vector<double>& values) {
  Tensor x(t, shape);
  for (size_t i = 0; i < values.size(); ++i) static_cast<uint8_t*>(x.raw())[i] = narrow_from_double(t, values[i]);
  return x;
}

double value(const Tensor& t, int64_t i) { return narrow_to_double(t.dtype(), static_cast<const uint8_t*>(t.raw())[i]); }

TEST(NarrowTypes, EveryFloatPatternComesBackThroughItsValue) {
  std::vector<DType> types(std::begin(kNarrowFloats), std::end(kNarrowFloats));
  types.push_back(DType::Float8E8M0);
  for (DType t : types) {
    const int bits = dtype_bits(t);
    for (uint32_t c = 0; c < (1u << bits); ++c) {
      const double v = narrow_to_double(t, uint8_t(c));
      const uint8_t back = narrow_from_double(t, v, /*saturate=*/false);
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(narrow_to_double(t, back))) << dtype_name(t) << " pattern " << c;
      } else {
        EXPECT_EQ(back, c) << dtype_name(t) << " pattern " << c << " value " << v;
      }
    }
  }
}

TEST(NarrowTypes, FloatsRoundToNearestEvenAndSaturate) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  // E4M3FN: 448 is the largest; 464 is the tie between 448 and the NaN pattern above it.
  EXPECT_EQ(narrow_from_double(DType::Float8E4M3FN, 448), 0x7e);
  EXPECT_EQ(narrow_from_double(DType::Float8E4M3FN, 464), 0x7e);
  EXPECT_EQ(narrow_from_double(DType::Float8E4M3FN, 465, false), 0x7f);  // NaN
  EXPECT_EQ(narrow_from_double(DType::Float8E4M3FN, -inf), 0xfe);        // saturated: -448
  EXPECT_EQ(narrow_from_double(DType::Float8E4M3FN, -inf, false), 0xff);
  EXPECT_EQ(narrow_from_double(DType::Float8E4M3FN, -1e-7), 0x80);       // -0
  EXPECT_EQ(narrow_from_double(DType::Float8E4M3FN, 0.4789254665374756), 47);  // ONNX's test_cast values
  EXPECT_EQ(narrow_from_double(DType::Float8E4M3FN, nan), 0x7f);
  // E5M2 has infinities; FNUZ types have neither infinity nor -0 (0x80 is their NaN).
  EXPECT_EQ(narrow_from_double(DType::Float8E5M2, 1e6, false), 0x7c);
  EXPECT_EQ(narrow_from_double(DType::Float8E5M2, 1e6), 0x7b);
  EXPECT_EQ(narrow_to_double(DType::Float8E5M2, 0xfc), -inf);
  EXPECT_EQ(narrow_from_double(DType::Float8E5M2FNUZ, -1e-7), 0x00);
  EXPECT_EQ(narrow_from_double(DType::Float8E5M2FNUZ, 1e6, false), 0x80);
  EXPECT_EQ(narrow_from_double(DType::Float8E4M3FNUZ, nan), 0x80);
  EXPECT_EQ(narrow_to_double(DType::Float8E4M3FNUZ, 0x7f), 240.0);
  // Subnormals: E4M3FN's smallest is 2^-9; half of it ties to 0, three halves to 2^-8.
  EXPECT_EQ(narrow_to_double(DType::Float8E4M3FN, 0x01), std::ldexp(1.0, -9));
  EXPECT_EQ(narrow_from_double(DType::Float8E4M3FN, std::ldexp(1.0, -10)), 0x00);
  EXPECT_EQ(narrow_from_double(DType::Float8E4M3FN, 3 * std::ldexp(1.0, -10)), 0x02);
  // float4e2m1: 0, 0.5, 1, 1.5, 2, 3, 4, 6; ties to the even mantissa; always saturated; NaN as -0.
  EXPECT_EQ(narrow_from_double(DType::Float4E2M1, 0.25), 0x0);
  EXPECT_EQ(narrow_from_double(DType::Float4E2M1, 0.75), 0x2);  // 1.0
  EXPECT_EQ(narrow_from_double(DType::Float4E2M1, 5.0), 0x6);   // 4.0
  EXPECT_EQ(narrow_from_double(DType::Float4E2M1, -3.5), 0xe);  // -4.0
  EXPECT_EQ(narrow_from_double(DType::Float4E2M1, 1e6, false), 0x7);
  EXPECT_EQ(narrow_from_double(DType::Float4E2M1, nan), 0x8);
}

TEST(NarrowTypes, E8M0RoundsItsPowerOfTwoAsAsked) {
  using R = E8M0Rounding;
  EXPECT_EQ(e8m0_from_double(0.124, true, R::Up), 124);  // 0.124 = 1.984 x 2^-4: up to 2^-3
  EXPECT_EQ(e8m0_from_double(0.124, true, R::Down), 123);
  EXPECT_EQ(e8m0_from_double(0.124, true, R::Nearest), 124);
  EXPECT_EQ(e8m0_from_double(1.5, true, R::Nearest), 128);  // a tie goes up
  EXPECT_EQ(e8m0_from_double(1.4, true, R::Nearest), 127);
  EXPECT_EQ(e8m0_from_double(-2.0, true, R::Up), 128);  // no sign: the magnitude's power
  EXPECT_EQ(e8m0_from_double(0.0, true, R::Up), 0);     // no zero: the smallest, 2^-127
  EXPECT_EQ(e8m0_from_double(INFINITY, true, R::Up), 254);
  EXPECT_EQ(e8m0_from_double(INFINITY, false, R::Up), 255);
  EXPECT_EQ(e8m0_from_double(3e38, false, R::Up), 255);  // rounds past 2^127
  EXPECT_EQ(e8m0_from_double(std::nan(""), true, R::Up), 255);
  EXPECT_EQ(narrow_to_double(DType::Float8E8M0, 0), std::ldexp(1.0, -127));
  EXPECT_EQ(narrow_to_double(DType::Float8E8M0, 130), 8.0);
  EXPECT_TRUE(std::isnan(narrow_to_double(DType::Float8E8M0, 255)));
}

TEST(NarrowTypes, IntegersWrapToTheirLowBits) {
  EXPECT_EQ(narrow_to_double(DType::Int4, narrow_from_double(DType::Int4, 9)), -7);
  EXPECT_EQ(narrow_to_double(DType::Int4, narrow_from_double(DType::Int4, -9)), 7);
  EXPECT_EQ(narrow_to_double(DType::UInt4, narrow_from_double(DType::UInt4, -1)), 15);
  EXPECT_EQ(narrow_to_double(DType::Int2, narrow_from_double(DType::Int2, 3)), -1);
  EXPECT_EQ(narrow_to_double(DType::UInt2, narrow_from_double(DType::UInt2, 5)), 1);
  EXPECT_EQ(narrow_to_double(DType::Int4, 0x08), -8);
}

TEST(NarrowTypes, LoaderPacksAndUnpacksLowBitsFirst) {
  // Odd counts: the last byte holds fewer values.
  for (DType t : kNarrowInts) {
    std::vector<double> v = {-3, -2, -1, 0, 1, 2, 3};
    Tensor x = narrow(t, {7}, v);
    onnx::TensorProto p;
    loader::tensor_to_proto(x, "w", p);
    EXPECT_EQ(int64_t(p.raw_data().size()), (7 * dtype_bits(t) + 7) / 8) << dtype_name(t);
    Tensor back = loader::tensor_from_proto(p, {}, "");
    ASSERT_EQ(back.dtype(), t);
    for (int64_t i = 0; i < 7; ++i) EXPECT_EQ(value(back, i), value(x, i)) << dtype_name(t) << " element " << i;
  }
  // int4 [-1, 2, 7]: bytes 0x2f, 0x07 (the first value in the low nibble).
  onnx::TensorProto p;
  p.set_name("w");
  p.set_data_type(int32_t(DType::Int4));
  p.add_dims(3);
  p.set_raw_data(std::string("\x2f\x07", 2));
  Tensor w = loader::tensor_from_proto(p, {}, "");
  EXPECT_EQ(value(w, 0), -1);
  EXPECT_EQ(value(w, 1), 2);
  EXPECT_EQ(value(w, 2), 7);
  // The same bytes in int32_data, one packed byte a value.
  p.clear_raw_data();
  p.add_int32_data(0x2f);
  p.add_int32_data(0x07);
  EXPECT_EQ(value(loader::tensor_from_proto(p, {}, ""), 1), 2);
  // A byte short: an error naming the tensor and what its shape needs.
  p.clear_int32_data();
  p.set_raw_data(std::string("\x2f", 1));
  try {
    loader::tensor_from_proto(p, {}, "");
    FAIL() << "a short int4 tensor loaded";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'w'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("need 2"), std::string::npos) << e.what();
  }
}

void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  auto r = runtime::compare_tensors(got, want, runtime::Tolerance{0.0, 0.0});
  EXPECT_TRUE(r.passed) << what << ": " << r.message;
}

// The model on WebGPU (captured, three runs, fail-loud: no node may fall back) against the CPU reference:
// equal outputs, NaN patterns and signed zeros included.
void check_on_webgpu(const std::string& what, const std::string& model, const std::vector<Operand>& in) {
  const auto feeds = testing::feeds_of(in);
  SessionOptions cpu;
  cpu.ep = "cpu";
  const std::vector<Tensor> want = Session::from_bytes(model, cpu).run(feeds);
  SessionOptions o = testing::webgpu_options();
  o.int64.fail_loud = true;
  std::unique_ptr<Session> gpu;
  try {
    gpu = std::make_unique<Session>(Session::from_bytes(model, o));
  } catch (const std::exception& e) {
    if (testing::skip_gpu()) GTEST_SKIP() << "no WebGPU session: " << e.what();
    FAIL() << what << ": " << e.what();
  }
  for (int run = 0; run < 3; ++run) {
    std::vector<Tensor> got;
    try {
      got = gpu->run(feeds);
    } catch (const std::exception& e) {
      FAIL() << what << ": " << e.what();
    }
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      expect_same(got[k], want[k], what + " output " + std::to_string(k));
      for (int64_t i = 0; dtype_is_narrow(got[k].dtype()) && i < got[k].numel(); ++i)  // the very bytes
        EXPECT_EQ(static_cast<const uint8_t*>(got[k].raw())[i], static_cast<const uint8_t*>(want[k].raw())[i])
            << what << " output " << k << " element " << i;
    }
    EXPECT_EQ(gpu->last_plan().cpu_nodes, 0) << what;
  }
}

std::string cast_model(DType to, const std::vector<Operand>& in, int saturate = 1, const std::string& round_mode = "") {
  return testing::one_node_model("Cast", in, {"y"}, 24, [&](onnx::NodeProto& nd) {
    testing::set_int(nd, "to", int64_t(to));
    if (!saturate) testing::set_int(nd, "saturate", 0);
    if (!round_mode.empty()) {
      auto* a = nd.add_attribute();
      a->set_name("round_mode");
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(round_mode);
    }
  });
}

TEST(NarrowTypes, CastsAndQuantizationMatchTheCpuOnWebGpu) {
  // Values that round, tie, overflow and underflow in some format; the float targets also get NaN and the
  // infinities (float to integer beyond the integer's range is left to the implementation by ONNX).
  const std::vector<float> xs = {-9.f, -2.5f, -0.3f, 0.f, 0.26f, 1.5f, 3.f, 7.75f, 100.f, -1e6f};
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> fs = xs;
  fs.insert(fs.end(), {std::nanf(""), inf, -inf, -0.f, 464.f, 470.f, 5.f, -6.5f, 61440.f, 1e-3f, 3e-8f, 1e-40f,
                       240.f, 248.f, 0.0625f, 0.09375f});
  const int64_t n = int64_t(xs.size()), nf = int64_t(fs.size());
  for (DType t : kNarrowFloats)
    for (int saturate : {1, 0}) {
      std::vector<Operand> in{{"x", Tensor::from_vector<float>({nf}, fs)}};
      check_on_webgpu("Cast to " + std::string(dtype_name(t)) + " saturate " + std::to_string(saturate),
                      cast_model(t, in, saturate), in);
      // And back from every pattern of the type, to float32 and to another narrow type.
      std::vector<double> all(t == DType::Float4E2M1 ? 16 : 256);
      Tensor codes(t, {int64_t(all.size())});
      for (size_t c = 0; c < all.size(); ++c) static_cast<uint8_t*>(codes.raw())[c] = uint8_t(c);
      std::vector<Operand> back{{"x", codes}};
      check_on_webgpu("Cast from " + std::string(dtype_name(t)), cast_model(DType::Float32, back), back);
      check_on_webgpu("Cast from " + std::string(dtype_name(t)) + " to float8e5m2fnuz",
                      cast_model(DType::Float8E5M2FNUZ, back, saturate), back);
    }
  for (const char* mode : {"up", "down", "nearest"})
    for (int saturate : {1, 0}) {
      std::vector<float> es = fs;
      es.insert(es.end(), {3.4e38f, 1.5f, 1.4999999f, 1.2e-38f, 5.9e-39f, 1.7e38f});
      std::vector<Operand> in{{"x", Tensor::from_vector<float>({int64_t(es.size())}, es)}};
      check_on_webgpu(std::string("Cast to float8e8m0, round_mode ") + mode,
                      cast_model(DType::Float8E8M0, in, saturate, mode), in);
    }
  for (DType t : kNarrowFloats)
    for (DType u : kNarrowInts) {
      std::vector<Operand> in{{"x", Tensor::from_vector<float>({n}, xs)}};
      check_on_webgpu("Cast to " + std::string(dtype_name(u)), cast_model(u, in), in);
      std::vector<Operand> ints{{"x", Tensor::from_vector<int64_t>({4}, {-9, 7, (int64_t(1) << 40) + 5, -(int64_t(1) << 40) - 3})}};
      check_on_webgpu("Cast int64 to " + std::string(dtype_name(u)), cast_model(u, ints), ints);
      // Quantized with a scale, then back.
      testing::ModelBuilder b(23);
      b.input("x", DType::Float32, {n});
      b.initializer("s", Tensor::scalar<float>(0.5f));
      b.initializer("z", narrow(u, {}, {u == DType::Int4 || u == DType::Int2 ? -1.0 : 1.0}));
      b.initializer("zf", narrow(t, {}, {0.0}));
      b.node("QuantizeLinear", {"x", "s", "z"}, {"q"});
      b.node("DequantizeLinear", {"q", "s", "z"}, {"y"});
      b.node("QuantizeLinear", {"x", "s", "zf"}, {"qf"});
      b.node("DequantizeLinear", {"qf", "s", "zf"}, {"yf"});
      b.output("q", u).output("y", DType::Float32).output("qf", t).output("yf", DType::Float32);
      check_on_webgpu(std::string("quantized to ") + std::string(dtype_name(u)) + " and " + std::string(dtype_name(t)),
                      b.bytes(), in);
    }
}

TEST(NarrowTypes, Int4WeightsFoldAndTheProductRunsOnTheGpu) {
  // A weight-only int4 model: W [8, 4] in blocks of 4 along K, DequantizeLinear (folded at plan time) then
  // MatMul on the GPU.
  std::vector<double> w(32), s(8), z(8);
  for (int i = 0; i < 32; ++i) w[size_t(i)] = (i * 5) % 16 - 8;
  for (int i = 0; i < 8; ++i) s[size_t(i)] = 0.05 * (i + 1), z[size_t(i)] = i % 3 - 1;
  std::vector<float> sf(s.begin(), s.end());
  testing::ModelBuilder b(21);
  b.input("x", DType::Float32, {2, 8});
  b.initializer("w", narrow(DType::Int4, {8, 4}, w));
  b.initializer("s", Tensor::from_vector<float>({2, 4}, sf));
  b.initializer("z", narrow(DType::Int4, {2, 4}, z));
  auto& dq = b.node("DequantizeLinear", {"w", "s", "z"}, {"wf"});
  testing::ModelBuilder::attr(dq, "axis", int64_t(0));
  testing::ModelBuilder::attr(dq, "block_size", int64_t(4));
  b.node("MatMul", {"x", "wf"}, {"y"});
  b.output("y", DType::Float32);
  std::vector<float> xv(16);
  for (int i = 0; i < 16; ++i) xv[size_t(i)] = 0.25f * float(i % 7) - 0.5f;
  std::vector<Operand> in{{"x", Tensor::from_vector<float>({2, 8}, xv)}};
  SessionOptions o = testing::webgpu_options();
  o.int64.fail_loud = true;  // nothing may run on the CPU at run time
  testing::check_against_cpu("int4 weights", b.bytes(), in, o,
                             [](const Tensor& got, const Tensor& want, const std::string& what) {
                               auto r = runtime::compare_tensors(got, want, runtime::Tolerance{1e-5, 1e-5});
                               EXPECT_TRUE(r.passed) << what << ": " << r.message;
                             });
}

TEST(NarrowTypes, DataMovementKeepsTheValues) {
  // Ops that move elements take narrow tensors byte for byte (on WebGPU on the GPU, as raw bytes).
  const Tensor w = narrow(DType::Int4, {2, 3}, {7, -1, 0, 3, -8, 2});
  auto model = [&](const std::string& op, const std::vector<Operand>& extra, const testing::Attrs& attrs) {
    std::vector<Operand> in{{"w", w}};
    in.insert(in.end(), extra.begin(), extra.end());
    return std::make_pair(testing::one_node_model(op, in, {"y"}, 21, attrs), in);
  };
  const std::vector<std::pair<std::string, std::pair<std::string, std::vector<Operand>>>> cases = {
      {"Transpose", model("Transpose", {}, {})},
      {"Gather", model("Gather", {{"i", Tensor::from_vector<int64_t>({3}, {1, 0, 1}), true}}, {})},
      {"Concat", model("Concat", {{"v", w}}, [](onnx::NodeProto& n) { testing::set_int(n, "axis", 1); })},
      {"Slice", model("Slice", {{"s", Tensor::from_vector<int64_t>({1}, {1}), true}, {"e", Tensor::from_vector<int64_t>({1}, {3}), true},
                                {"a", Tensor::from_vector<int64_t>({1}, {1}), true}}, {})},
      {"Pad", model("Pad", {{"p", Tensor::from_vector<int64_t>({4}, {1, 0, 0, 2}), true}, {"v", narrow(DType::Int4, {}, {-3}), true}},
                    {})},
      {"Expand", model("Expand", {{"s", Tensor::from_vector<int64_t>({3}, {2, 2, 3}), true}}, {})},
      {"Tile", model("Tile", {{"r", Tensor::from_vector<int64_t>({2}, {2, 1}), true}}, {})},
      {"Flatten", model("Flatten", {}, [](onnx::NodeProto& n) { testing::set_int(n, "axis", 0); })},
  };
  for (const auto& [what, m] : cases) check_on_webgpu(what, m.first, m.second);
  // Transpose's result, element by element.
  SessionOptions cpu;
  cpu.ep = "cpu";
  const Tensor t = Session::from_bytes(cases[0].second.first, cpu).run(testing::feeds_of(cases[0].second.second))[0];
  ASSERT_EQ(t.dtype(), DType::Int4);
  const std::vector<double> want = {7, 3, -1, -8, 0, 2};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(value(t, i), want[size_t(i)]) << "element " << i;
}

TEST(NarrowTypes, KernelsThatComputeOnThemSayWhichType) {
  // Add has no narrow types: the CPU reference names the node and the type; on WebGPU the shader layer
  // refuses the Add kernel's loads of int4 values, so under fail-loud that is the error.
  std::vector<Operand> in{{"a", narrow(DType::Int4, {3}, {1, 2, 3})}, {"b", narrow(DType::Int4, {3}, {1, 1, 1})}};
  std::string model = testing::one_node_model("Add", in, {"y"}, 21);
  SessionOptions cpu;
  cpu.ep = "cpu";
  try {
    Session::from_bytes(model, cpu).run(testing::feeds_of(in));
    FAIL() << "Add ran on int4";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("int4"), std::string::npos) << e.what();
  }
  SessionOptions o = testing::webgpu_options();
  o.int64.fail_loud = true;
  try {
    Session::from_bytes(model, o).run(testing::feeds_of(in));
    FAIL() << "Add ran on int4 on WebGPU";
  } catch (const std::exception& e) {
    const std::string m = e.what();
    if (testing::skip_gpu() && m.find("WebGPU") != std::string::npos && m.find("int4") == std::string::npos)
      GTEST_SKIP() << "no WebGPU session: " << m;
    EXPECT_NE(m.find("Add"), std::string::npos) << m;
    EXPECT_NE(m.find("computes on int4 values"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace onnxgpu
