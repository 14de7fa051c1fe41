// GPU Conv, ConvTranspose, ConvInteger, the pools, Resize and Upsample against the CPU reference:
// one-node models run with ep=webgpu (capture, 3 runs, no CPU fallback) and ep=cpu; every Conv kernel
// (implicit GEMM, pointwise, split-K, depthwise, direct) and the fused Conv's epilogues (BatchNormalization
// folded, activations, residual Add) and pools (MaxPool, AveragePool) on small models, recorded and replayed
// with other inputs.
// Needs a WebGPU adapter (here: SwiftShader, which the engine finds by itself;
// XDG_RUNTIME_DIR=/tmp); ONNXGPU_SKIP_GPU_TESTS=1 skips when there is none.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "loader/tensor_proto.h"
#include "onnxgpu/session.h"
#include "runtime/compare.h"
#include "model_builder.h"
#include "kernel_choice.h"
#include "one_node.h"
#include "webgpu/device.h"
#include "webgpu/kernels/kernel.h"

namespace onnxgpu {
namespace {

using namespace onnxgpu::testing;

// Integers of dtype t; int64 values lie beyond 2^32 (distinct, so every gather is visible).
Tensor random_int(DType t, const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor r(DType::Int64, shape);
  int64_t k = 0;
  for (auto& v : r.span<int64_t>()) {
    if (t == DType::Int64) v = (int64_t(1) << 35) * (rng() % 2 ? 1 : -1) + 7 * (k++) + int64_t(rng() % 5);
    else if (t == DType::Int8) v = int64_t(rng() % 256) - 128;
    else v = int64_t(rng() % 256);
  }
  return t == DType::Int64 ? r : r.cast(t);
}

SessionOptions options(const std::string& ep) {
  SessionOptions o;
  o.ep = ep;
  o.capture = true;
  return o;
}

// (Integers compare exactly whatever the tolerance.)
void check_gpu_vs_cpu(const std::string& model, const std::vector<Operand>& inputs, double tol = 1e-4) {
  testing::expect_gpu_matches_cpu(model, inputs, tol, tol);
}

// The GPU plan of a model falls back to the CPU (with a reason containing `why`) and still matches it.
void check_falls_back(const std::string& model, const std::vector<Operand>& inputs, const std::string& why) {
  std::unordered_map<std::string, Tensor> feeds;
  for (const auto& in : inputs)
    if (in.value.defined() && !in.initializer) feeds[in.name] = in.value;
  Session cpu = Session::from_bytes(model, options("cpu"));
  std::vector<Tensor> want = cpu.run(feeds);
  std::unique_ptr<Session> gpu;
  try {
    gpu = std::make_unique<Session>(Session::from_bytes(model, options("webgpu")));
  } catch (const std::exception& e) {
    if (skip_gpu()) GTEST_SKIP() << "no WebGPU device: " << e.what();
    throw;
  }
  std::vector<Tensor> got = gpu->run(feeds);
  ASSERT_EQ(gpu->last_plan().fallbacks.size(), 1u);
  EXPECT_NE(gpu->last_plan().fallbacks[0].reason.find(why), std::string::npos) << gpu->last_plan().fallbacks[0].reason;
  auto c = runtime::compare_tensors(got[0], want[0], {1e-5, 1e-5});
  EXPECT_TRUE(c.passed) << c.message;
}

double float_tol(DType t) { return t == DType::Float16 ? 2e-2 : 1e-4; }

// ------------------------------------------------------------------------------------------------ Conv

void check_conv(DType t, const Shape& x, const Shape& w, bool bias, const Attrs& attrs, uint32_t seed,
                bool weights_initializer = true) {
  SCOPED_TRACE(std::string(dtype_name(t)) + " X " + shape_str(x) + " W " + shape_str(w));
  std::vector<Operand> ins{{"X", random_float(t, x, seed)}, {"W", random_float(t, w, seed + 1), weights_initializer}};
  if (bias) ins.push_back({"B", random_float(t, {w[0]}, seed + 2), weights_initializer});
  check_gpu_vs_cpu(one_node_model("Conv", ins, {"Y"}, 11, attrs), ins, float_tol(t));
}

TEST(GpuConv, TwoDimensional) {
  check_conv(DType::Float32, {1, 1, 5, 5}, {1, 1, 3, 3}, false, {}, 1);
  check_conv(DType::Float32, {2, 3, 9, 7}, {4, 3, 3, 2}, true, [](onnx::NodeProto& n) {
    set_ints(n, "pads", {1, 0, 2, 1});
    set_ints(n, "strides", {2, 1});
  }, 2);
  check_conv(DType::Float32, {1, 2, 10, 11}, {3, 2, 3, 3}, true, [](onnx::NodeProto& n) {
    set_ints(n, "dilations", {2, 3});
    set_ints(n, "pads", {2, 1, 2, 1});
  }, 3, false);
}

TEST(GpuConv, Groups) {
  check_conv(DType::Float32, {2, 6, 8, 8}, {4, 3, 3, 3}, true, [](onnx::NodeProto& n) { set_int(n, "group", 2); }, 4);
  // Depthwise.
  check_conv(DType::Float32, {1, 8, 7, 6}, {8, 1, 3, 3}, true, [](onnx::NodeProto& n) {
    set_int(n, "group", 8);
    set_ints(n, "pads", {1, 1, 1, 1});
  }, 5);
  // Multiplier 2 per group.
  check_conv(DType::Float32, {1, 4, 5, 5}, {8, 1, 2, 2}, false, [](onnx::NodeProto& n) { set_int(n, "group", 4); }, 6);
}

TEST(GpuConv, AutoPad) {
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER", "VALID"})
    for (int64_t s : {1, 2, 3}) {
      SCOPED_TRACE(std::string(mode) + " stride " + std::to_string(s));
      check_conv(DType::Float32, {1, 2, 7, 8}, {3, 2, 3, 4}, true, [&](onnx::NodeProto& n) {
        set_string(n, "auto_pad", mode);
        set_ints(n, "strides", {s, s});
      }, 7);
    }
}

TEST(GpuConv, OneAndThreeDimensional) {
  check_conv(DType::Float32, {2, 3, 17}, {5, 3, 4}, true, [](onnx::NodeProto& n) {
    set_ints(n, "pads", {2, 1});
    set_ints(n, "strides", {3});
    set_ints(n, "dilations", {2});
  }, 8);
  check_conv(DType::Float32, {1, 2, 5, 6, 7}, {3, 2, 3, 2, 3}, true, [](onnx::NodeProto& n) {
    set_ints(n, "pads", {1, 0, 1, 1, 1, 0});
    set_ints(n, "strides", {1, 2, 2});
  }, 9);
}

TEST(GpuConv, HalfAndDouble) {
  check_conv(DType::Float16, {1, 4, 6, 6}, {2, 4, 3, 3}, true, {}, 10);
  check_conv(DType::Float64, {1, 4, 6, 6}, {2, 2, 3, 3}, true, [](onnx::NodeProto& n) { set_int(n, "group", 2); }, 11);
}

TEST(GpuConv, LargerChannels) {
  check_conv(DType::Float32, {1, 32, 12, 12}, {48, 32, 3, 3}, true, [](onnx::NodeProto& n) {
    set_ints(n, "pads", {1, 1, 1, 1});
  }, 12);
  check_conv(DType::Float32, {1, 64, 9, 9}, {16, 64, 1, 1}, false, {}, 13);
}

// Groups of 16 output channels or more take the tiled (implicit GEMM) path: partial tiles, batches
// crossing tile columns, groups, every rank.
TEST(GpuConv, TiledPath) {
  check_conv(DType::Float32, {2, 8, 9, 10}, {40, 4, 3, 3}, true, [](onnx::NodeProto& n) {
    set_int(n, "group", 2);
    set_ints(n, "pads", {1, 2, 0, 1});
    set_ints(n, "strides", {2, 1});
    set_ints(n, "dilations", {1, 2});
  }, 30);
  check_conv(DType::Float32, {3, 5, 70}, {17, 5, 5}, false, [](onnx::NodeProto& n) { set_ints(n, "strides", {3}); }, 31);
  check_conv(DType::Float16, {1, 3, 5, 6, 7}, {16, 3, 2, 3, 2}, true, [](onnx::NodeProto& n) {
    set_string(n, "auto_pad", "SAME_UPPER");
  }, 32);
  check_conv(DType::Float64, {2, 20, 4, 4}, {130, 20, 1, 1}, true, {}, 33, false);
}

// Each kernel the shape chooses (conv.cpp): the implicit GEMM (a 1x1 kernel of stride 1 without
// padding reads X as it lies), split over K when its tiles are few; the depthwise kernel (one input
// channel per group); the first-layer kernel (one group of at most 4 input channels); the direct one
// (fewer than 8 output channels per group).
TEST(GpuConv, KernelsByShape) {
  // Pointwise (1x1), batches crossing tiles; a 1x1 of stride 2 (gathered); 1x1 with padding.
  check_conv(DType::Float32, {3, 24, 7, 9}, {40, 24, 1, 1}, true, {}, 40);
  check_conv(DType::Float32, {2, 16, 9, 9}, {24, 16, 1, 1}, false, [](onnx::NodeProto& n) { set_ints(n, "strides", {2, 2}); }, 41);
  check_conv(DType::Float32, {1, 8, 5, 6}, {12, 8, 1, 1}, true, [](onnx::NodeProto& n) { set_ints(n, "pads", {1, 0, 0, 2}); }, 42);
  // Split-K: few columns, a long K (late layers at a small batch), with and without a bias.
  check_conv(DType::Float32, {1, 256, 3, 3}, {64, 256, 3, 3}, true, [](onnx::NodeProto& n) { set_ints(n, "pads", {1, 1, 1, 1}); }, 43);
  check_conv(DType::Float32, {2, 512, 2, 2}, {72, 512, 1, 1}, false, {}, 44);
  // Grouped, 8 and 40 output channels per group (the GEMM per group) and 4 (direct).
  check_conv(DType::Float32, {2, 12, 6, 7}, {24, 4, 3, 3}, true, [](onnx::NodeProto& n) {
    set_int(n, "group", 3);
    set_ints(n, "pads", {0, 1, 1, 0});
  }, 45);
  check_conv(DType::Float32, {1, 8, 6, 6}, {80, 4, 2, 2}, false, [](onnx::NodeProto& n) { set_int(n, "group", 2); }, 46);
  check_conv(DType::Float32, {1, 8, 6, 6}, {8, 4, 3, 3}, true, [](onnx::NodeProto& n) { set_int(n, "group", 2); }, 47);
  // Depthwise: 3x3 stride 2, 5x5 with asymmetric pads and dilation, a multiplier of 3.
  check_conv(DType::Float32, {2, 16, 11, 10}, {16, 1, 3, 3}, true, [](onnx::NodeProto& n) {
    set_int(n, "group", 16);
    set_ints(n, "pads", {1, 1, 1, 1});
    set_ints(n, "strides", {2, 2});
  }, 48);
  check_conv(DType::Float32, {1, 6, 9, 12}, {6, 1, 5, 5}, false, [](onnx::NodeProto& n) {
    set_int(n, "group", 6);
    set_ints(n, "pads", {2, 0, 1, 3});
    set_ints(n, "dilations", {1, 2});
  }, 49);
  check_conv(DType::Float32, {1, 4, 7, 7}, {12, 1, 3, 3}, true, [](onnx::NodeProto& n) { set_int(n, "group", 4); }, 50);
  // First layers (the first-layer kernel): 1 input channel, 3 channels with a 7x7 stride-2 kernel (K = 147).
  check_conv(DType::Float32, {2, 1, 12, 13}, {32, 1, 3, 3}, true, [](onnx::NodeProto& n) { set_ints(n, "pads", {1, 1, 1, 1}); }, 51);
  check_conv(DType::Float32, {2, 3, 20, 18}, {64, 3, 7, 7}, true, [](onnx::NodeProto& n) {
    set_ints(n, "pads", {3, 3, 3, 3});
    set_ints(n, "strides", {2, 2});
  }, 52);
  // Dilated and strided with few output channels (direct) and many (GEMM), 1-D depthwise (direct).
  check_conv(DType::Float32, {1, 5, 13, 13}, {48, 5, 3, 3}, true, [](onnx::NodeProto& n) {
    set_ints(n, "dilations", {2, 2});
    set_ints(n, "strides", {2, 3});
    set_ints(n, "pads", {2, 1, 0, 2});
  }, 53);
  check_conv(DType::Float32, {2, 6, 15}, {6, 1, 3}, true, [](onnx::NodeProto& n) {
    set_int(n, "group", 6);
    set_ints(n, "pads", {1, 1});
  }, 54);
}

// The implicit GEMM reads W's rows a vec4 at a time where they are whole vec4s (float32, K = a group's
// input channels x taps a multiple of 4): partial tiles of output channels, groups (each group's rows
// further along W), pointwise, 1-D and 3-D, K split, K of one quad; K % 4 != 0 (scalar loads) beside.
// Each with the vec4 loads and with $ONNXGPU_MATMUL_VEC=0.
TEST(GpuConv, VectorWeightLoads) {
  const DType f = DType::Float32;
  auto pads = [](onnx::NodeProto& n) { set_ints(n, "pads", {1, 1, 1, 1}); };
  for (const char* v : {static_cast<const char*>(nullptr), "0"}) {
    SCOPED_TRACE(v ? "ONNXGPU_MATMUL_VEC=0" : "ONNXGPU_MATMUL_VEC unset");
    ScopedEnv env("ONNXGPU_MATMUL_VEC", v);
    check_conv(f, {1, 32, 12, 12}, {48, 32, 3, 3}, true, pads, 60);            // K 288, 48 of 64 rows
    check_conv(f, {2, 8, 9, 10}, {40, 4, 3, 3}, true, [](onnx::NodeProto& n) {  // K 36, 2 groups of 20
      set_int(n, "group", 2);
      set_ints(n, "pads", {1, 2, 0, 1});
      set_ints(n, "strides", {2, 1});
    }, 61);
    check_conv(f, {3, 24, 7, 9}, {40, 24, 1, 1}, false, {}, 62);                // pointwise, K 24
    check_conv(f, {1, 4, 6, 6}, {16, 4, 1, 1}, true, {}, 63);                   // K 4: one quad
    check_conv(f, {1, 256, 3, 3}, {64, 256, 3, 3}, true, pads, 64);             // K split
    check_conv(f, {2, 12, 6, 7}, {24, 4, 3, 3}, true, [](onnx::NodeProto& n) { set_int(n, "group", 3); }, 65);
    check_conv(f, {2, 8, 30}, {20, 8, 3}, true, {}, 66, false);                 // 1-D, W an input
    check_conv(f, {1, 4, 5, 6, 7}, {16, 4, 2, 3, 2}, true, {}, 67);             // 3-D, K 48
    check_conv(f, {2, 3, 20, 18}, {64, 3, 7, 7}, true, pads, 68);               // K 147: scalar loads
    check_conv(f, {3, 5, 70}, {17, 5, 5}, false, {}, 69);                       // K 25: scalar loads
  }
}

// The dispatches a float Conv of X `x` and W `w` (pads of 1, `group`) makes (no device needed); with `pool`
// ("max" or "average"), the fused Conv that ends in that pool over windows `pool_kernel` (as runtime/fusion.cpp
// makes it).
std::vector<webgpu::DispatchSpec> conv_dispatches(Shape x, Shape w, DType t = DType::Float32, int64_t group = 1,
                                                  const std::string& pool = "", std::vector<int64_t> pool_kernel = {}) {
  ir::Node node;
  node.name = "c";
  node.op_type = "Conv";
  node.inputs = {"x", "w"};
  node.outputs = {"y"};
  if (!pool.empty()) {
    node.domain = webgpu::kFusedDomain;
    node.attrs["pool"].kind = ir::Attribute::Kind::String;
    node.attrs["pool"].s = pool;
    node.attrs["pool_kernel"].kind = ir::Attribute::Kind::Ints;
    node.attrs["pool_kernel"].ints = pool_kernel;
  }
  ir::Attribute pads;
  pads.kind = ir::Attribute::Kind::Ints;
  pads.ints.assign(2 * (x.size() - 2), 1);
  node.attrs["pads"] = pads;
  ir::Attribute g;
  g.kind = ir::Attribute::Kind::Int;
  g.i = group;
  node.attrs["group"] = g;
  Int64Policy policy;
  webgpu::GpuKernelContext ctx(node, 11, policy, usual_limits(), {{t, std::move(x)}, {t, std::move(w)}});
  (*webgpu::gpu_registry().find("Conv"))(ctx);
  return std::move(ctx.dispatches);
}

// Their programs' names.
std::vector<std::string> conv_programs(Shape x, Shape w, DType t = DType::Float32) {
  std::vector<std::string> r;
  for (const auto& d : conv_dispatches(std::move(x), std::move(w), t)) r.push_back(d.program.name());
  return r;
}

bool has_part(const std::vector<std::string>& p, size_t i, const char* part) {
  return i < p.size() && p[i].find(part) != std::string::npos;
}

// Which weight loads the implicit GEMM takes, by program name: `_vw` for float32 weights with K % 4 == 0,
// unless $ONNXGPU_MATMUL_VEC is 0 (or "b": the products' B only).
TEST(GpuConv, VectorWeightChoice) {
  {
    ScopedEnv env("ONNXGPU_MATMUL_VEC", nullptr);
    auto k288 = conv_programs({1, 32, 12, 12}, {48, 32, 3, 3});
    EXPECT_TRUE(has_part(k288, 0, "Conv.gemm2d_vw_")) << k288.at(0);
    auto split = conv_programs({1, 256, 3, 3}, {64, 256, 3, 3});
    ASSERT_EQ(split.size(), 2u);
    EXPECT_TRUE(has_part(split, 0, "Conv.gemm2d_vw_") && has_part(split, 0, "_split")) << split[0];
    EXPECT_TRUE(has_part(split, 1, "Conv.gemm_sum")) << split[1];
    auto k45 = conv_programs({1, 5, 20, 18}, {64, 5, 3, 3});
    EXPECT_TRUE(has_part(k45, 0, "Conv.gemm2d_") && !has_part(k45, 0, "_vw")) << k45.at(0);
    auto half = conv_programs({1, 32, 12, 12}, {48, 32, 3, 3}, DType::Float16);
    EXPECT_TRUE(has_part(half, 0, "Conv.gemm2d_") && !has_part(half, 0, "_vw")) << half.at(0);
  }
  for (const auto& [value, vw] : {std::pair<const char*, bool>{"0", false}, {"b", false}, {"a", true}}) {
    ScopedEnv env("ONNXGPU_MATMUL_VEC", value);
    auto p = conv_programs({1, 32, 12, 12}, {48, 32, 3, 3});
    EXPECT_EQ(has_part(p, 0, "_vw"), vw) << "ONNXGPU_MATMUL_VEC=" << value << ": " << p.at(0);
  }
}

// Every float Conv kernel counts its work for the profile's GFLOP/s: 2 x outputs x (a group's input
// channels x taps), once per node, whichever kernel and however many dispatches (split-K's sum pass).
TEST(GpuConv, CountsItsFlops) {
  auto flops = [](const std::vector<webgpu::DispatchSpec>& ds) {
    uint64_t f = 0;
    for (const auto& d : ds) f += d.flops;
    return f;
  };
  auto split = conv_dispatches({1, 256, 3, 3}, {64, 256, 3, 3});  // the GEMM split over K: 2 dispatches
  ASSERT_EQ(split.size(), 2u);
  EXPECT_EQ(flops(split), 2ull * (64 * 3 * 3) * (256 * 9));
  EXPECT_EQ(flops(conv_dispatches({2, 3, 20, 18}, {32, 3, 3, 3})), 2ull * (2 * 32 * 20 * 18) * 27);  // first layer
  EXPECT_EQ(flops(conv_dispatches({1, 8, 7, 6}, {8, 1, 3, 3}, DType::Float32, 8)), 2ull * (8 * 7 * 6) * 9);  // depthwise
  EXPECT_EQ(flops(conv_dispatches({1, 6, 9, 9}, {4, 3, 3, 3}, DType::Float32, 2)), 2ull * (4 * 9 * 9) * 27);  // direct
}

// First layers (one group of at most 4 input channels, K = channels x taps at most 256, 8 output channels
// or more) take the first-layer kernel, its block of output channels as large as its weights fit 16 KiB
// of workgroup memory; more channels, groups, fewer outputs or 1-D / 3-D do not.
TEST(GpuConv, FirstLayerChoice) {
  auto rgb = conv_programs({2, 3, 20, 18}, {32, 3, 3, 3});
  EXPECT_TRUE(has_part(rgb, 0, "Conv.fewin2d_k27_mb32")) << rgb.at(0);
  auto stem = conv_programs({1, 3, 20, 18}, {64, 3, 7, 7});  // K 147: 64 x 147 floats do not fit, 16 do
  EXPECT_TRUE(has_part(stem, 0, "Conv.fewin2d_k147_mb16")) << stem.at(0);
  auto gray = conv_programs({1, 1, 12, 13}, {96, 1, 3, 3});
  EXPECT_TRUE(has_part(gray, 0, "Conv.fewin2d_k9_mb64")) << gray.at(0);
  EXPECT_TRUE(has_part(conv_programs({1, 5, 9, 9}, {32, 5, 3, 3}), 0, "Conv.gemm2d"));   // 5 channels
  EXPECT_TRUE(has_part(conv_programs({1, 4, 20, 20}, {32, 4, 9, 9}), 0, "Conv.gemm2d"));  // K 324
  EXPECT_TRUE(has_part(conv_programs({1, 3, 9, 9}, {4, 3, 3, 3}), 0, "Conv.conv2d"));     // 4 outputs: direct
  EXPECT_TRUE(has_part(conv_programs({1, 3, 30}, {16, 3, 3}), 0, "Conv.gemm1d"));         // 1-D
}

// The first-layer kernel against the CPU: output channels not a multiple of 4, several blocks (96 of one
// channel; K 256 in blocks of 8), strides, dilations, asymmetric pads, no padding, float16, W an input.
TEST(GpuConv, FirstLayers) {
  check_conv(DType::Float32, {2, 3, 17, 19}, {10, 3, 3, 3}, true, [](onnx::NodeProto& n) {
    set_ints(n, "pads", {1, 1, 1, 1});
    set_ints(n, "strides", {2, 2});
  }, 70);
  check_conv(DType::Float32, {1, 1, 28, 28}, {96, 1, 5, 5}, true, [](onnx::NodeProto& n) { set_ints(n, "pads", {2, 2, 2, 2}); }, 71);
  check_conv(DType::Float32, {1, 4, 21, 20}, {20, 4, 8, 8}, false, [](onnx::NodeProto& n) {
    set_ints(n, "pads", {3, 0, 1, 2});
    set_ints(n, "dilations", {2, 1});
  }, 72);
  check_conv(DType::Float32, {2, 3, 9, 9}, {8, 3, 2, 2}, true, [](onnx::NodeProto& n) { set_ints(n, "dilations", {1, 2}); }, 73, false);
  check_conv(DType::Float16, {1, 3, 8, 8}, {16, 3, 3, 3}, true, [](onnx::NodeProto& n) { set_ints(n, "pads", {1, 1, 1, 1}); }, 74);
}

// ------------------------------------------------------------------------------------ the fused Conv

// The model on the CPU reference and on the GPU with capture: recorded with the first feeds, replayed
// with each later one and the first again; every run against the CPU. The GPU plan computes
// `fused_nodes` nodes in fused kernels and records `dispatches` dispatches per run.
void check_fused(const std::string& model, const std::vector<std::unordered_map<std::string, Tensor>>& feeds,
                 int fused_nodes, int dispatches, double tol = 1e-4) {
  SessionOptions cpu_options = options("cpu");
  SessionOptions gpu_options = options("webgpu");
  gpu_options.int64.fail_loud = true;
  Session cpu = Session::from_bytes(model, cpu_options);
  std::unique_ptr<Session> gpu;
  try {
    gpu = std::make_unique<Session>(Session::from_bytes(model, gpu_options));
  } catch (const std::exception& e) {
    if (skip_gpu()) GTEST_SKIP() << "no WebGPU device: " << e.what();
    throw;
  }
  std::vector<size_t> order;
  for (size_t k = 0; k < feeds.size(); ++k) order.push_back(k);
  order.push_back(0);
  for (size_t run = 0; run < order.size(); ++run) {
    const auto& f = feeds[order[run]];
    std::vector<Tensor> want = cpu.run(f), got = gpu->run(f);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      auto c = runtime::compare_tensors(got[k], want[k], {tol, tol});
      EXPECT_TRUE(c.passed) << "run " << run + 1 << " output " << k << ": " << c.message;
    }
    const PlanReport& plan = gpu->last_plan();
    EXPECT_EQ(plan.replayed, run > 0);
    EXPECT_EQ(plan.cpu_nodes, 0);
    EXPECT_EQ(plan.fused_nodes, fused_nodes);
    EXPECT_EQ(plan.dispatches, dispatches);
  }
}

Tensor filled(const Shape& shape, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  Tensor t(DType::Float32, shape);
  for (auto& v : t.span<float>()) v = d(rng);
  return t;
}

Tensor scalar(float v) { return Tensor::from_vector<float>({}, {v}); }

// X [n, c, h, w] -> Conv (W, B initializers; `conv_attrs`) -> [BatchNormalization] -> `tail` (nodes
// reading "conv" and writing "Y") as one model; graph inputs X and the names in `extra`.
struct ConvModel {
  Shape x, w;
  bool bias = true, batch_norm = false;
  std::function<void(onnx::NodeProto&)> conv_attrs;
  std::vector<std::pair<std::string, Shape>> extra;  // other graph inputs (a residual)
  std::function<void(ModelBuilder&)> tail;
  uint32_t seed = 1;

  std::string bytes() const {
    ModelBuilder b(17);
    b.input("X", DType::Float32, x);
    for (const auto& [name, shape] : extra) b.input(name, DType::Float32, shape);
    b.initializer("W", filled(w, -0.5f, 0.5f, seed));
    std::vector<std::string> ins{"X", "W"};
    if (bias) {
      b.initializer("B", filled({w[0]}, -0.5f, 0.5f, seed + 1));
      ins.push_back("B");
    }
    auto& c = b.node("Conv", ins, {batch_norm ? "pre_bn" : "conv"}, "conv");
    if (conv_attrs) conv_attrs(c);
    if (batch_norm) {
      b.initializer("scale", filled({w[0]}, 0.5f, 1.5f, seed + 2));
      b.initializer("beta", filled({w[0]}, -0.3f, 0.3f, seed + 3));
      b.initializer("mean", filled({w[0]}, -0.2f, 0.2f, seed + 4));
      b.initializer("var", filled({w[0]}, 0.5f, 1.5f, seed + 5));
      set_float(b.node("BatchNormalization", {"pre_bn", "scale", "beta", "mean", "var"}, {"conv"}, "bn"), "epsilon", 1e-3f);
    }
    tail(b);
    b.output("Y", DType::Float32);
    return b.bytes();
  }
  std::vector<std::unordered_map<std::string, Tensor>> feeds() const {
    std::vector<std::unordered_map<std::string, Tensor>> r(2);
    for (uint32_t k = 0; k < 2; ++k) {
      r[k]["X"] = filled(x, -1.0f, 1.0f, seed + 10 + k);
      for (const auto& [name, shape] : extra) r[k][name] = filled(shape, -1.0f, 1.0f, seed + 20 + k);
    }
    return r;
  }
};

void unary_tail(ModelBuilder& b, const std::string& op) { b.node(op, {"conv"}, {"Y"}); }

// A residual Add (its operands in this order) and the Relu after it.
std::function<void(ModelBuilder&)> add_relu(const std::string& a, const std::string& b) {
  return [=](ModelBuilder& m) {
    m.node("Add", {a, b}, {"sum"});
    m.node("Relu", {"sum"}, {"Y"});
  };
}

TEST(GpuConvFused, Activations) {
  auto pads = [](onnx::NodeProto& n) { set_ints(n, "pads", {1, 1, 1, 1}); };
  for (const char* op : {"Relu", "HardSwish", "Sigmoid"}) {
    SCOPED_TRACE(op);
    ConvModel m{{2, 8, 9, 9}, {16, 8, 3, 3}, true, false, pads, {}, [&](ModelBuilder& b) { unary_tail(b, op); }, 3};
    check_fused(m.bytes(), m.feeds(), 2, 1);
  }
  // HardSigmoid with its attributes; Clip (ReLU6, bounds as inputs); x * Sigmoid(x) (SiLU: a group of two).
  ConvModel hs{{1, 6, 8, 8}, {12, 6, 3, 3}, true, false, pads, {}, [](ModelBuilder& b) {
                 auto& n = b.node("HardSigmoid", {"conv"}, {"Y"});
                 set_float(n, "alpha", 1.0f / 6.0f);
                 set_float(n, "beta", 0.5f);
               }, 4};
  check_fused(hs.bytes(), hs.feeds(), 2, 1);
  ConvModel clip{{1, 6, 8, 8}, {12, 6, 3, 3}, true, false, pads, {}, [](ModelBuilder& b) {
                   b.initializer("lo", scalar(0.0f)).initializer("hi", scalar(0.25f));
                   b.node("Clip", {"conv", "lo", "hi"}, {"Y"});
                 }, 5};
  check_fused(clip.bytes(), clip.feeds(), 2, 1);
  ConvModel silu{{1, 6, 8, 8}, {12, 6, 3, 3}, false, false, pads, {}, [](ModelBuilder& b) {
                   b.node("Sigmoid", {"conv"}, {"sig"});
                   b.node("Mul", {"conv", "sig"}, {"Y"});
                 }, 6};
  check_fused(silu.bytes(), silu.feeds(), 3, 1);
}

TEST(GpuConvFused, SqueezeExcitationAsProduct) {
  // 1x1 kernels over 1x1 images of a few images run the products' GEMV kernel: with a bias and an
  // activation, without a bias, and 5 images (the GEMM).
  ConvModel relu{{2, 32, 1, 1}, {48, 32, 1, 1}, true, false, {}, {}, [](ModelBuilder& b) { unary_tail(b, "Relu"); }, 18};
  check_fused(relu.bytes(), relu.feeds(), 2, 1);
  ConvModel hs{{3, 40, 1, 1}, {24, 40, 1, 1}, false, false, {}, {}, [](ModelBuilder& b) {
                 auto& n = b.node("HardSigmoid", {"conv"}, {"Y"});
                 set_float(n, "alpha", 1.0f / 6.0f);
               }, 19};
  check_fused(hs.bytes(), hs.feeds(), 2, 1);
  check_conv(DType::Float32, {4, 20, 1, 1}, {36, 20, 1, 1}, true, {}, 20);
  check_conv(DType::Float32, {5, 20, 1, 1}, {36, 20, 1, 1}, true, {}, 21);
  // Padded or strided 1x1 images are not products (the padding is read as zeros).
  check_conv(DType::Float32, {2, 8, 1, 1}, {16, 8, 1, 1}, true, [](onnx::NodeProto& n) {
    set_ints(n, "pads", {1, 0, 0, 0});
    set_ints(n, "strides", {2, 1});
  }, 22);
}

TEST(GpuConvFused, BatchNormalizationFolded) {
  // Conv + BatchNormalization + Relu: one kernel, the statistics folded into the weights; with and
  // without the Conv's bias, on the GEMM, the depthwise and the direct kernels.
  auto pads = [](onnx::NodeProto& n) { set_ints(n, "pads", {1, 1, 1, 1}); };
  ConvModel gemm{{2, 8, 7, 7}, {24, 8, 3, 3}, true, true, pads, {}, [](ModelBuilder& b) { unary_tail(b, "Relu"); }, 7};
  check_fused(gemm.bytes(), gemm.feeds(), 3, 1);
  ConvModel nobias{{2, 8, 7, 7}, {24, 8, 1, 1}, false, true, {}, {}, [](ModelBuilder& b) { unary_tail(b, "Relu"); }, 8};
  check_fused(nobias.bytes(), nobias.feeds(), 3, 1);
  ConvModel dw{{1, 12, 9, 9}, {12, 1, 3, 3}, true, true, [](onnx::NodeProto& n) {
                 set_int(n, "group", 12);
                 set_ints(n, "pads", {1, 1, 1, 1});
                 set_ints(n, "strides", {2, 2});
               }, {}, [](ModelBuilder& b) { unary_tail(b, "HardSwish"); }, 9};
  check_fused(dw.bytes(), dw.feeds(), 3, 1);
  ConvModel direct{{1, 6, 6, 6}, {4, 3, 3, 3}, true, true, [](onnx::NodeProto& n) { set_int(n, "group", 2); }, {},
                   [](ModelBuilder& b) { unary_tail(b, "Relu"); }, 10};
  check_fused(direct.bytes(), direct.feeds(), 3, 1);
  // The BatchNormalization alone (nothing after it): folded all the same.
  ConvModel alone{{1, 4, 6, 6}, {16, 4, 3, 3}, true, true, {}, {}, [](ModelBuilder& b) { b.node("Identity", {"conv"}, {"Y"}); }, 11};
  check_fused(alone.bytes(), alone.feeds(), 2, 1);
}

TEST(GpuConvFused, ResidualAdd) {
  // Conv + Add(residual) + Relu, the residual a value known before the Conv; through the split-K sum
  // pass too (two dispatches), and a residual that broadcasts (one value per channel).
  auto pads = [](onnx::NodeProto& n) { set_ints(n, "pads", {1, 1, 1, 1}); };
  ConvModel res{{2, 8, 6, 6}, {16, 8, 3, 3}, true, false, pads, {{"R", {2, 16, 6, 6}}}, add_relu("conv", "R"), 12};
  check_fused(res.bytes(), res.feeds(), 3, 1);
  ConvModel split{{1, 256, 3, 3}, {32, 256, 3, 3}, true, true, pads, {{"R", {1, 32, 3, 3}}}, add_relu("R", "conv"), 13};
  check_fused(split.bytes(), split.feeds(), 4, 2, 2e-4);
  ConvModel chan{{1, 4, 5, 5}, {16, 4, 3, 3}, false, false, {}, {{"R", {1, 16, 1, 1}}}, [](ModelBuilder& b) {
                   b.node("Add", {"conv", "R"}, {"Y"});
                 }, 14};
  check_fused(chan.bytes(), chan.feeds(), 2, 1);
}

// An image model's first layer as one kernel (the first-layer kernel): Conv over RGB + BatchNormalization
// folded + residual Add + Relu, and with HardSwish over 72 output channels (two blocks).
TEST(GpuConvFused, FirstLayer) {
  auto pads = [](onnx::NodeProto& n) { set_ints(n, "pads", {1, 1, 1, 1}); };
  ConvModel res{{2, 3, 10, 11}, {24, 3, 3, 3}, true, true, pads, {{"R", {2, 24, 10, 11}}}, add_relu("conv", "R"), 15};
  check_fused(res.bytes(), res.feeds(), 4, 1);
  ConvModel hs{{1, 3, 16, 16}, {72, 3, 3, 3}, false, true, [](onnx::NodeProto& n) {
                 set_ints(n, "pads", {1, 1, 1, 1});
                 set_ints(n, "strides", {2, 2});
               }, {}, [](ModelBuilder& b) { unary_tail(b, "HardSwish"); }, 16};
  check_fused(hs.bytes(), hs.feeds(), 3, 1);
}

// The fused Conv's epilogues over the vec4 weight loads (K % 4 == 0) and over the scalar ones
// ($ONNXGPU_MATMUL_VEC=0): BatchNormalization folded, a residual, an activation, through the split-K
// sum pass too.
TEST(GpuConvFused, VectorWeightLoads) {
  auto pads = [](onnx::NodeProto& n) { set_ints(n, "pads", {1, 1, 1, 1}); };
  for (const char* v : {static_cast<const char*>(nullptr), "0"}) {
    SCOPED_TRACE(v ? "ONNXGPU_MATMUL_VEC=0" : "ONNXGPU_MATMUL_VEC unset");
    ScopedEnv env("ONNXGPU_MATMUL_VEC", v);
    ConvModel res{{2, 8, 6, 6}, {20, 8, 3, 3}, true, true, pads, {{"R", {2, 20, 6, 6}}}, add_relu("conv", "R"), 70};
    check_fused(res.bytes(), res.feeds(), 4, 1);
    ConvModel split{{1, 256, 3, 3}, {36, 256, 3, 3}, true, true, pads, {{"R", {1, 36, 3, 3}}}, add_relu("R", "conv"), 71};
    check_fused(split.bytes(), split.feeds(), 4, 2, 2e-4);
  }
}

TEST(GpuConvFused, WhatStaysApart) {
  // A result that is also a graph output, and an expression that would widen the output (a
  // squeeze-excitation's scale times the wide input): the Conv runs alone, the rest as before.
  ConvModel shared{{1, 4, 6, 6}, {16, 4, 3, 3}, true, false, {}, {}, [](ModelBuilder& b) {
                     b.node("Relu", {"conv"}, {"Y"});
                     b.output("conv", DType::Float32);
                   }, 15};
  check_fused(shared.bytes(), shared.feeds(), 0, 2);
  // Every reader in the group: Add(conv, Relu(conv)) joins the epilogue whole.
  ConvModel both{{1, 4, 6, 6}, {16, 4, 3, 3}, true, false, {}, {}, [](ModelBuilder& b) {
                   b.node("Relu", {"conv"}, {"r"});
                   b.node("Add", {"conv", "r"}, {"Y"});
                 }, 17};
  check_fused(both.bytes(), both.feeds(), 3, 1);
  ConvModel se{{1, 16, 1, 1}, {16, 16, 1, 1}, true, false, {}, {{"wide", {1, 16, 5, 5}}}, [](ModelBuilder& b) {
                 b.node("HardSigmoid", {"conv"}, {"hs"});
                 b.node("Mul", {"wide", "hs"}, {"Y"});
               }, 16};
  check_fused(se.bytes(), se.feeds(), 2, 2);
}

// ------------------------------------------------------------------------ a pool fused into the Conv

// A tail ending in `op` (MaxPool or AveragePool) over windows `k` of strides `s` (`attrs`: more of its
// attributes): `head` (nodes reading "conv" and writing "act"; none: the pool reads "conv") then the pool,
// writing Y.
std::function<void(ModelBuilder&)> pool_tail(const std::string& op, std::vector<int64_t> k, std::vector<int64_t> s,
                                             std::function<void(ModelBuilder&)> head = {},
                                             std::function<void(onnx::NodeProto&)> attrs = {}) {
  return [=](ModelBuilder& b) {
    if (head) head(b);
    auto& n = b.node(op, {head ? "act" : "conv"}, {"Y"}, "pool");
    set_ints(n, "kernel_shape", k);
    set_ints(n, "strides", s);
    if (attrs) attrs(n);
  };
}

void relu_head(ModelBuilder& b) { b.node("Relu", {"conv"}, {"act"}); }

// A pool's 2 x 2 windows of stride 2.
void window_2x2(onnx::NodeProto& n) {
  set_ints(n, "kernel_shape", {2, 2});
  set_ints(n, "strides", {2, 2});
}

// The bench's cnn block: x + Relu(conv(x)) (a BatchNormalization folded before the Relu).
void residual_head(ModelBuilder& b) {
  b.node("Relu", {"conv"}, {"r"});
  b.node("Add", {"X", "r"}, {"act"});
}

auto pads1 = [](onnx::NodeProto& n) { set_ints(n, "pads", {1, 1, 1, 1}); };

// MaxPool and AveragePool 2 x 2 after Conv + Relu: one kernel (the implicit GEMM) storing only the pooled
// values; even sizes, odd ones (the trailing row and column no window covers are dropped), 2 images.
TEST(GpuConvFused, PoolAfterRelu) {
  for (const char* op : {"MaxPool", "AveragePool"}) {
    SCOPED_TRACE(op);
    ConvModel even{{2, 8, 8, 8}, {16, 8, 3, 3}, true, false, pads1, {}, pool_tail(op, {2, 2}, {2, 2}, relu_head), 80};
    check_fused(even.bytes(), even.feeds(), 3, 1);
    ConvModel odd{{2, 8, 9, 7}, {20, 8, 3, 3}, true, false, pads1, {}, pool_tail(op, {2, 2}, {2, 2}, relu_head), 81};
    check_fused(odd.bytes(), odd.feeds(), 3, 1);
    // The pool alone after the Conv (no epilogue expression), 5 x 5 outputs.
    ConvModel bare{{1, 4, 5, 5}, {8, 4, 1, 1}, false, false, {}, {}, pool_tail(op, {2, 2}, {2, 2}), 82};
    check_fused(bare.bytes(), bare.feeds(), 2, 1);
  }
}

// The cnn block (bench/make_models.py's Cnn): Conv + BatchNormalization + Relu, the residual x + ., then a
// 2 x 2 pool: one kernel, the residual read at each window's positions; odd sizes and 2 images; a residual
// Add + Relu of another input, and one that broadcasts (a value per channel).
TEST(GpuConvFused, PoolAfterResidualBlock) {
  for (const char* op : {"MaxPool", "AveragePool"}) {
    SCOPED_TRACE(op);
    ConvModel block{{2, 16, 10, 10}, {16, 16, 3, 3}, false, true, pads1, {}, pool_tail(op, {2, 2}, {2, 2}, residual_head), 83};
    check_fused(block.bytes(), block.feeds(), 5, 1);
    ConvModel odd{{2, 16, 11, 9}, {16, 16, 3, 3}, false, true, pads1, {}, pool_tail(op, {2, 2}, {2, 2}, residual_head), 84};
    check_fused(odd.bytes(), odd.feeds(), 5, 1);
  }
  auto add_relu_act = [](ModelBuilder& b) {
    b.node("Add", {"conv", "R"}, {"sum"});
    b.node("Relu", {"sum"}, {"act"});
  };
  ConvModel res{{2, 8, 7, 9}, {12, 8, 3, 3}, true, true, pads1, {{"R", {2, 12, 7, 9}}}, pool_tail("MaxPool", {2, 2}, {2, 2}, add_relu_act), 85};
  check_fused(res.bytes(), res.feeds(), 5, 1);
  ConvModel chan{{1, 8, 6, 6}, {12, 8, 3, 3}, true, false, pads1, {{"R", {1, 12, 1, 1}}}, pool_tail("AveragePool", {2, 2}, {2, 2}, add_relu_act), 86};
  check_fused(chan.bytes(), chan.feeds(), 4, 1);
}

// Other windows the GEMM holds whole (2 and 4 taps: 1 x 2, 2 x 1, 4 x 1, 1 x 4), a 1 x 1 window of stride 1
// (the pool is a copy), and the split-K sum pass (2 dispatches: the parts, then their sums pooled).
TEST(GpuConvFused, PoolWindowsAndSplitK) {
  std::vector<std::pair<std::vector<int64_t>, const char*>> windows{
      {{1, 2}, "MaxPool"}, {{2, 1}, "AveragePool"}, {{4, 1}, "MaxPool"}, {{1, 4}, "AveragePool"}, {{1, 1}, "MaxPool"}};
  for (const auto& [k, op] : windows) {
    SCOPED_TRACE(std::string(op) + " " + shape_str(k));
    ConvModel m{{2, 8, 9, 10}, {16, 8, 3, 3}, true, true, pads1, {}, pool_tail(op, k, k, relu_head), 87};
    check_fused(m.bytes(), m.feeds(), 4, 1);
  }
  for (const char* op : {"MaxPool", "AveragePool"}) {
    SCOPED_TRACE(std::string(op) + " split-K");
    ConvModel split{{2, 256, 5, 5}, {256, 256, 3, 3}, true, true, pads1, {}, pool_tail(op, {2, 2}, {2, 2}, residual_head), 88};
    check_fused(split.bytes(), split.feeds(), 5, 2, 2e-4);
    ConvModel odd{{1, 256, 5, 3}, {32, 256, 3, 3}, true, false, pads1, {}, pool_tail(op, {2, 2}, {2, 2}, relu_head), 89};
    check_fused(odd.bytes(), odd.feeds(), 3, 2, 2e-4);
  }
}

// The other kernels take the pool too, one invocation per pooled output over its window's taps: the first
// layer's (Conv over RGB + BatchNormalization + Relu, two blocks of channels), the depthwise and the direct.
TEST(GpuConvFused, PoolOnTheOtherKernels) {
  for (const char* op : {"MaxPool", "AveragePool"}) {
    SCOPED_TRACE(op);
    ConvModel rgb{{2, 3, 11, 10}, {72, 3, 3, 3}, true, true, pads1, {}, pool_tail(op, {2, 2}, {2, 2}, relu_head), 90};
    check_fused(rgb.bytes(), rgb.feeds(), 4, 1);
    ConvModel dw{{2, 12, 9, 8}, {12, 1, 3, 3}, true, true, [](onnx::NodeProto& n) {
                   set_int(n, "group", 12);
                   set_ints(n, "pads", {1, 1, 1, 1});
                 }, {}, pool_tail(op, {2, 2}, {2, 2}, relu_head), 91};
    check_fused(dw.bytes(), dw.feeds(), 4, 1);
    ConvModel direct{{2, 6, 7, 7}, {4, 3, 3, 3}, true, false, [](onnx::NodeProto& n) {
                       set_int(n, "group", 2);
                       set_ints(n, "pads", {1, 1, 1, 1});
                     }, {}, pool_tail(op, {2, 1}, {2, 1}, relu_head), 92};
    check_fused(direct.bytes(), direct.feeds(), 3, 1);
  }
}

// What stays a pool of its own (the Conv group as before, the pool its own dispatch, the same answers):
// a 3 x 3 window of stride 3 (9 taps: not whole windows in the GEMM's 4 columns), pads, overlapping
// windows (3 x 3 of stride 2), ceil_mode, dilations, a MaxPool whose Indices are read, and a Conv
// result read elsewhere too (a graph output, another node).
TEST(GpuConvFused, PoolsThatStayApart) {
  auto model = [](std::function<void(ModelBuilder&)> tail, uint32_t seed) {
    return ConvModel{{2, 8, 9, 9}, {16, 8, 3, 3}, true, false, pads1, {}, std::move(tail), seed};
  };
  std::vector<std::pair<const char*, ConvModel>> apart{
      {"3x3 stride 3", model(pool_tail("MaxPool", {3, 3}, {3, 3}, relu_head), 93)},
      {"pads", model(pool_tail("AveragePool", {2, 2}, {2, 2}, relu_head, [](onnx::NodeProto& n) { set_ints(n, "pads", {0, 0, 1, 1}); }), 94)},
      {"overlapping", model(pool_tail("MaxPool", {3, 3}, {2, 2}, relu_head), 95)},
      {"ceil_mode", model(pool_tail("MaxPool", {2, 2}, {2, 2}, relu_head, [](onnx::NodeProto& n) { set_int(n, "ceil_mode", 1); }), 96)},
      {"dilations", model(pool_tail("MaxPool", {2, 2}, {2, 2}, relu_head, [](onnx::NodeProto& n) { set_ints(n, "dilations", {2, 2}); }), 97)},
      {"read elsewhere", model([](ModelBuilder& b) {
         relu_head(b);
         window_2x2(b.node("MaxPool", {"act"}, {"Y"}));
         b.output("act", DType::Float32);
       }, 98)}};
  for (auto& [what, m] : apart) {
    SCOPED_TRACE(what);
    check_fused(m.bytes(), m.feeds(), 2, 2);
  }
  // Another reader of the Relu: a second pool (each its own dispatch).
  ConvModel two = model([](ModelBuilder& b) {
    relu_head(b);
    window_2x2(b.node("MaxPool", {"act"}, {"Y"}));
    window_2x2(b.node("AveragePool", {"act"}, {"Y2"}));
    b.output("Y2", DType::Float32);
  }, 99);
  check_fused(two.bytes(), two.feeds(), 2, 3);
  // The Indices read (a graph output): apart; named but read by nothing: fused.
  ConvModel indices = model([](ModelBuilder& b) {
    relu_head(b);
    window_2x2(b.node("MaxPool", {"act"}, {"Y", "I"}));
    b.output("I", DType::Int64);
  }, 100);
  check_fused(indices.bytes(), indices.feeds(), 2, 2);
  ConvModel unread = model([](ModelBuilder& b) {
    relu_head(b);
    window_2x2(b.node("MaxPool", {"act"}, {"Y", "I"}));
  }, 101);
  check_fused(unread.bytes(), unread.feeds(), 3, 1);
}

// The cnn block over images of symbolic height and width in one session: the plan recorded for the first
// size is refreshed (or planned anew) for the others, even and odd (the pooled sizes, the columns the
// windows cover and the grid follow), the pool fused at each; every run against the CPU.
TEST(GpuConvFused, PoolRefreshedForOtherSizes) {
  ConvModel block{{2, 16, -1, -1}, {16, 16, 3, 3}, false, true, pads1, {}, pool_tail("MaxPool", {2, 2}, {2, 2}, residual_head), 103};
  std::string model = block.bytes();
  if (skip_gpu()) GTEST_SKIP() << "no WebGPU device";
  Session gpu = Session::from_bytes(model, options("webgpu"));
  Session cpu = Session::from_bytes(model, options("cpu"));
  int refreshed = 0;
  uint32_t seed = 104;
  for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{{8, 8}, {9, 8}, {10, 8}, {11, 13}, {8, 8}}) {
    SCOPED_TRACE(std::to_string(h) + " x " + std::to_string(w));
    std::unordered_map<std::string, Tensor> feeds{{"X", filled({2, 16, h, w}, -1.0f, 1.0f, seed++)}};
    auto got = gpu.run(feeds), want = cpu.run(feeds);
    ASSERT_EQ(got.at(0).shape(), (Shape{2, 16, h / 2, w / 2}));
    auto c = runtime::compare_tensors(got.at(0), want.at(0), {1e-4, 1e-4});
    EXPECT_TRUE(c.passed) << c.message;
    EXPECT_EQ(gpu.last_plan().fused_nodes, 5);
    EXPECT_EQ(gpu.last_plan().dispatches, 1);
    refreshed += gpu.last_plan().refreshed;
  }
  EXPECT_GE(refreshed, 1);
}

// The pool runs no dispatch of its own: the cnn block with its pool records as many dispatches as without
// it (one), where the unfused pool (a 3 x 3 window, as above) adds one.
TEST(GpuConvFused, PoolIsNoDispatchOfItsOwn) {
  auto dispatches = [](const ConvModel& m) -> int {
    SessionOptions o = options("webgpu");
    std::unique_ptr<Session> gpu;
    try {
      gpu = std::make_unique<Session>(Session::from_bytes(m.bytes(), o));
    } catch (const std::exception& e) {
      if (skip_gpu()) return -1;
      throw;
    }
    gpu->run(m.feeds()[0]);
    return gpu->last_plan().dispatches;
  };
  ConvModel block{{1, 16, 12, 12}, {16, 16, 3, 3}, false, true, pads1, {}, {}, 102};
  ConvModel plain = block;
  plain.tail = [](ModelBuilder& b) {
    residual_head(b);
    b.node("Identity", {"act"}, {"Y"});
  };
  int without = dispatches(plain);
  if (without < 0) GTEST_SKIP() << "no WebGPU device";
  EXPECT_EQ(without, 1);
  ConvModel pooled = block;
  pooled.tail = pool_tail("MaxPool", {2, 2}, {2, 2}, residual_head);
  EXPECT_EQ(dispatches(pooled), without);
  ConvModel apart = block;
  apart.tail = pool_tail("MaxPool", {3, 3}, {3, 3}, residual_head);
  EXPECT_EQ(dispatches(apart), without + 1);
}

// Which kernel takes a pooled Conv, by program name (no device): the GEMM for windows of 1, 2 or 4 taps,
// its split-K parts and sum pass; the first-layer, depthwise and direct kernels; a 9-tap window (which the
// fusion never makes) on the direct kernel. The work counted is the Conv's over the positions computed.
TEST(GpuConv, PooledKernelChoice) {
  auto names = [](const std::vector<webgpu::DispatchSpec>& ds) {
    std::vector<std::string> r;
    for (const auto& d : ds) r.push_back(d.program.name());
    return r;
  };
  auto gemm = conv_dispatches({2, 32, 12, 12}, {48, 32, 3, 3}, DType::Float32, 1, "max", {2, 2});
  ASSERT_EQ(gemm.size(), 1u);
  EXPECT_TRUE(has_part(names(gemm), 0, "Conv.gemm2d") && has_part(names(gemm), 0, "_maxpool2x2")) << names(gemm)[0];
  EXPECT_EQ(gemm[0].flops, 2ull * (2 * 48 * 12 * 12) * (32 * 9));
  auto odd = conv_dispatches({1, 32, 7, 5}, {48, 32, 3, 3}, DType::Float32, 1, "average", {1, 2});
  EXPECT_TRUE(has_part(names(odd), 0, "Conv.gemm2d") && has_part(names(odd), 0, "_avgpool1x2")) << names(odd)[0];
  EXPECT_EQ(odd[0].flops, 2ull * (48 * 7 * 4) * (32 * 9));  // the 5th column no window covers: not computed
  auto split = names(conv_dispatches({1, 256, 6, 6}, {64, 256, 3, 3}, DType::Float32, 1, "max", {2, 2}));
  ASSERT_EQ(split.size(), 2u);
  EXPECT_TRUE(has_part(split, 0, "_split_maxpool2x2")) << split[0];
  EXPECT_TRUE(has_part(split, 1, "Conv.gemm_sum_maxpool2x2")) << split[1];
  auto rgb = names(conv_dispatches({2, 3, 20, 18}, {32, 3, 3, 3}, DType::Float32, 1, "max", {2, 2}));
  EXPECT_TRUE(has_part(rgb, 0, "Conv.fewin2d_k27_mb32_maxpool2x2")) << rgb.at(0);
  auto dw = names(conv_dispatches({1, 8, 7, 6}, {8, 1, 3, 3}, DType::Float32, 8, "average", {2, 2}));
  EXPECT_TRUE(has_part(dw, 0, "Conv.depthwise2d_avgpool2x2")) << dw.at(0);
  auto direct = names(conv_dispatches({1, 6, 9, 9}, {4, 3, 3, 3}, DType::Float32, 2, "max", {2, 1}));
  EXPECT_TRUE(has_part(direct, 0, "Conv.conv2d_maxpool2x1")) << direct.at(0);
  auto nine = names(conv_dispatches({1, 32, 9, 9}, {48, 32, 3, 3}, DType::Float32, 1, "max", {3, 3}));
  EXPECT_TRUE(has_part(nine, 0, "Conv.conv2d_maxpool3x3")) << nine.at(0);
}

TEST(GpuConv, InvalidChannelsFail) {
  std::vector<Operand> ins{{"X", random_float(DType::Float32, {1, 3, 5, 5}, 1)},
                           {"W", random_float(DType::Float32, {2, 2, 3, 3}, 2), true}};
  std::string model = one_node_model("Conv", ins, {"Y"}, 11);
  try {
    Session gpu = Session::from_bytes(model, options("webgpu"));
    EXPECT_THROW(gpu.run({{"X", ins[0].value}}), Error);
  } catch (const std::exception& e) {
    if (skip_gpu()) GTEST_SKIP() << e.what();
    FAIL() << e.what();
  }
}

// ---------------------------------------------------------------------------------------- ConvInteger

TEST(GpuConvInteger, ZeroPoints) {
  for (DType t : {DType::UInt8, DType::Int8}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    Tensor xz = t == DType::UInt8 ? Tensor::scalar<uint8_t>(128) : Tensor::scalar<int8_t>(-3);
    Tensor wz = t == DType::UInt8 ? Tensor::from_vector<uint8_t>({4}, {1, 2, 3, 200})
                                  : Tensor::from_vector<int8_t>({4}, {1, -2, 3, -100});
    std::vector<Operand> ins{{"X", random_int(t, {2, 4, 6, 5}, 1)},
                             {"W", random_int(t, {4, 2, 3, 2}, 2), true},
                             {"xz", xz, true},
                             {"wz", wz, true}};
    check_gpu_vs_cpu(one_node_model("ConvInteger", ins, {"Y"}, 10, [](onnx::NodeProto& n) {
      set_int(n, "group", 2);
      set_ints(n, "pads", {1, 1, 0, 1});
    }), ins, 0);
    std::vector<Operand> plain{ins[0], ins[1]};
    check_gpu_vs_cpu(one_node_model("ConvInteger", plain, {"Y"}, 10, [](onnx::NodeProto& n) { set_int(n, "group", 2); }),
                     plain, 0);
  }
}

// ---------------------------------------------------------------------------------------- QLinearConv

// QLinearConv's inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point[, B].
std::vector<Operand> qlinear_conv_inputs(Tensor x, Tensor xz, Tensor w, Tensor ws, Tensor wz, Tensor yz, Tensor b, float xs,
                                         float ys) {
  std::vector<Operand> ins{{"x", std::move(x)},
                           {"x_scale", Tensor::scalar<float>(xs), true},
                           {"x_zero_point", std::move(xz), true},
                           {"w", std::move(w), true},
                           {"w_scale", std::move(ws), true},
                           {"w_zero_point", std::move(wz), true},
                           {"y_scale", Tensor::scalar<float>(ys), true},
                           {"y_zero_point", std::move(yz), true}};
  if (b.defined()) ins.push_back({"B", std::move(b), true});
  return ins;
}

// Computed by hand: per-channel scales and zero points, a bias, and two sums that land on .5 (rounded to
// the even neighbour).
TEST(GpuQLinearConv, RequantizesHalfToEven) {
  // Channel 0: acc = 2x + 6 = 24, 40; f = 0.5 * 0.25 / 2 = 1/16: 1.5 -> 2, 2.5 -> 2; + 100.
  // Channel 1: acc = -4x - 7 = -43, -75; f = 0.5 * 1 / 2 = 1/4: -10.75 -> -11, -18.75 -> -19; + 100.
  auto ins = qlinear_conv_inputs(Tensor::from_vector<uint8_t>({1, 1, 1, 2}, {9, 17}), Tensor::scalar<uint8_t>(0),
                                 Tensor::from_vector<int8_t>({2, 1, 1, 1}, {3, -4}), Tensor::from_vector<float>({2}, {0.25f, 1.0f}),
                                 Tensor::from_vector<int8_t>({2}, {1, 0}), Tensor::scalar<uint8_t>(100),
                                 Tensor::from_vector<int32_t>({2}, {6, -7}), 0.5f, 2.0f);
  std::string model = one_node_model("QLinearConv", ins, {"y"}, 10);
  std::vector<Tensor> got = Session::from_bytes(model, options("cpu")).run(feeds_of(ins));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].dtype(), DType::UInt8);
  EXPECT_EQ(got[0].shape(), (Shape{1, 2, 1, 2}));
  EXPECT_EQ(got[0].to_int64_vector(), (std::vector<int64_t>{102, 102, 89, 81}));
  check_gpu_vs_cpu(model, ins, 0);
}

// Every spatial rank the direct kernel takes, with dilations, auto_pad, groups and int8 outputs that saturate.
TEST(GpuQLinearConv, RanksGroupsAndSaturation) {
  struct Case {
    Shape x, w;
    Attrs attrs;
  };
  std::vector<Case> cases{
      {{2, 4, 9}, {6, 2, 3}, [](onnx::NodeProto& n) {
         set_int(n, "group", 2);
         set_ints(n, "dilations", {2});
         set_string(n, "auto_pad", "SAME_UPPER");
       }},
      {{1, 3, 4, 5, 3}, {2, 3, 2, 3, 2}, [](onnx::NodeProto& n) { set_ints(n, "pads", {1, 0, 1, 0, 1, 1}); }},
  };
  uint32_t seed = 10;
  for (const Case& c : cases)
    for (DType yt : {DType::UInt8, DType::Int8}) {
      SCOPED_TRACE("x " + shape_str(c.x) + " w " + shape_str(c.w) + " y " + std::string(dtype_name(yt)));
      const int64_t M = c.w[0];
      Tensor ws(DType::Float32, {M}), wz = random_int(DType::Int8, {M}, seed++);
      for (int64_t m = 0; m < M; ++m) ws.data<float>()[m] = 0.01f * float(m + 1);
      Tensor yz = yt == DType::UInt8 ? Tensor::scalar<uint8_t>(128) : Tensor::scalar<int8_t>(-5);
      Tensor b = random_int(DType::Int8, {M}, seed++).cast(DType::Int32);
      // y_scale small enough that some outputs saturate at both ends.
      Tensor x = random_int(DType::UInt8, c.x, seed++), w = random_int(DType::Int8, c.w, seed++);
      auto ins = qlinear_conv_inputs(x, Tensor::scalar<uint8_t>(120), w, ws, wz, yz, b, 0.02f, 0.5f);
      check_gpu_vs_cpu(one_node_model("QLinearConv", ins, {"y"}, 10, c.attrs), ins, 0);
    }
}

// A bias of the wrong type, or a missing y_zero_point (it gives y its type), is an error naming the input.
TEST(GpuQLinearConv, BadInputsFailByName) {
  auto ins = qlinear_conv_inputs(random_int(DType::UInt8, {1, 2, 4, 4}, 1), Tensor::scalar<uint8_t>(0),
                                 random_int(DType::UInt8, {3, 2, 3, 3}, 2), Tensor::scalar<float>(0.1f), Tensor::scalar<uint8_t>(0),
                                 Tensor::scalar<uint8_t>(0), Tensor::from_vector<float>({3}, {1, 2, 3}), 0.1f, 1.0f);
  auto no_yz = ins;
  no_yz[7].value = Tensor();
  no_yz.pop_back();
  for (const auto& [bad, what] : {std::pair{ins, std::string("B must be int32")},
                                  std::pair{no_yz, std::string("y_zero_point must be an int8 or uint8 scalar")}}) {
    std::string model = one_node_model("QLinearConv", bad, {"y"}, 10);
    for (const std::string ep : {"cpu", "webgpu"}) {
      SCOPED_TRACE(ep + ": " + what);
      try {
        Session s = Session::from_bytes(model, options(ep));
        s.run(feeds_of(bad));
        ADD_FAILURE() << "no error";
      } catch (const std::exception& e) {
        if (ep == "webgpu" && skip_gpu() && std::string(e.what()).find("WebGPU") != std::string::npos) GTEST_SKIP() << e.what();
        EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("QLinearConv"), std::string::npos) << e.what();
      }
    }
  }
}

// ------------------------------------------------------------------------------------------- ConvTranspose

void check_convt(const Shape& x, const Shape& w, bool bias, const Attrs& attrs, uint32_t seed, DType t = DType::Float32) {
  SCOPED_TRACE("X " + shape_str(x) + " W " + shape_str(w));
  std::vector<Operand> ins{{"X", random_float(t, x, seed)}, {"W", random_float(t, w, seed + 1), true}};
  if (bias) ins.push_back({"B", random_float(t, {w[1] * 1}, seed + 2), true});
  check_gpu_vs_cpu(one_node_model("ConvTranspose", ins, {"Y"}, 11, attrs), ins, float_tol(t));
}

TEST(GpuConvTranspose, StridesPadsDilations) {
  check_convt({1, 2, 4, 5}, {2, 3, 3, 3}, true, {}, 1);
  check_convt({2, 3, 5, 4}, {3, 2, 3, 2}, true, [](onnx::NodeProto& n) {
    set_ints(n, "strides", {2, 3});
    set_ints(n, "pads", {1, 0, 0, 1});
    set_ints(n, "output_padding", {1, 2});
  }, 2);
  check_convt({1, 2, 4, 4}, {2, 2, 3, 3}, false, [](onnx::NodeProto& n) {
    set_ints(n, "dilations", {2, 2});
    set_ints(n, "strides", {2, 1});
  }, 3);
}

TEST(GpuConvTranspose, GroupsAndBias) {
  std::vector<Operand> ins{{"X", random_float(DType::Float32, {1, 4, 5, 5}, 4)},
                           {"W", random_float(DType::Float32, {4, 3, 3, 3}, 5), true},
                           {"B", random_float(DType::Float32, {6}, 6), true}};
  check_gpu_vs_cpu(one_node_model("ConvTranspose", ins, {"Y"}, 11, [](onnx::NodeProto& n) {
    set_int(n, "group", 2);
    set_ints(n, "strides", {2, 2});
  }), ins);
}

TEST(GpuConvTranspose, OutputShapeAndAutoPad) {
  check_convt({1, 1, 3, 3}, {1, 2, 3, 3}, false, [](onnx::NodeProto& n) {
    set_ints(n, "strides", {3, 2});
    set_ints(n, "output_shape", {10, 8});
  }, 7);
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    SCOPED_TRACE(mode);
    check_convt({1, 2, 3, 4}, {2, 2, 3, 2}, true, [&](onnx::NodeProto& n) {
      set_string(n, "auto_pad", mode);
      set_ints(n, "strides", {2, 2});
    }, 8);
  }
}

TEST(GpuConvTranspose, OneAndThreeDimensionalHalf) {
  check_convt({1, 2, 7}, {2, 3, 4}, true, [](onnx::NodeProto& n) { set_ints(n, "strides", {3}); }, 9);
  check_convt({1, 2, 3, 4, 3}, {2, 2, 2, 3, 2}, true, [](onnx::NodeProto& n) {
    set_ints(n, "strides", {2, 1, 2});
    set_ints(n, "pads", {0, 1, 0, 1, 0, 1});
  }, 10);
  check_convt({1, 3, 4, 4}, {3, 2, 3, 3}, true, {}, 11, DType::Float16);
}

// --------------------------------------------------------------------------------------------------- Pools

void check_pool(const std::string& op, DType t, const Shape& x, const Attrs& attrs, uint32_t seed,
                bool indices = false, int opset = 12) {
  SCOPED_TRACE(op + " " + std::string(dtype_name(t)) + " " + shape_str(x));
  Tensor xv = dtype_is_float(t) ? random_float(t, x, seed) : random_int(t, x, seed);
  std::vector<Operand> ins{{"X", xv}};
  std::vector<std::string> outs{"Y"};
  if (indices) outs.push_back("I");
  double tol = dtype_is_float(t) ? float_tol(t) : 0;
  check_gpu_vs_cpu(one_node_model(op, ins, outs, opset, attrs), ins, tol);
}

TEST(GpuPool, AveragePool) {
  auto base = [](std::vector<int64_t> k) { return [k](onnx::NodeProto& n) { set_ints(n, "kernel_shape", k); }; };
  check_pool("AveragePool", DType::Float32, {2, 3, 7, 8}, base({3, 3}), 1);
  for (int incl : {0, 1})
    for (int ceil : {0, 1}) {
      SCOPED_TRACE("count_include_pad " + std::to_string(incl) + " ceil_mode " + std::to_string(ceil));
      check_pool("AveragePool", DType::Float32, {1, 2, 9, 10}, [=](onnx::NodeProto& n) {
        set_ints(n, "kernel_shape", {3, 2});
        set_ints(n, "pads", {1, 1, 2, 0});
        set_ints(n, "strides", {2, 3});
        set_int(n, "count_include_pad", incl);
        set_int(n, "ceil_mode", ceil);
      }, 2, false, 19);
    }
  check_pool("AveragePool", DType::Float32, {1, 2, 9, 9}, [](onnx::NodeProto& n) {
    set_ints(n, "kernel_shape", {2, 2});
    set_ints(n, "dilations", {2, 3});
    set_ints(n, "pads", {1, 1, 1, 1});
  }, 3, false, 19);
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER", "VALID"})
    check_pool("AveragePool", DType::Float16, {1, 3, 7, 6}, [&](onnx::NodeProto& n) {
      set_ints(n, "kernel_shape", {3, 2});
      set_ints(n, "strides", {2, 2});
      set_string(n, "auto_pad", mode);
      set_int(n, "count_include_pad", 1);
    }, 4);
  check_pool("AveragePool", DType::Float64, {2, 2, 11}, base({4}), 5);
  check_pool("AveragePool", DType::Float32, {1, 2, 5, 6, 7}, base({2, 3, 2}), 6);
}

TEST(GpuPool, MaxPoolWithIndices) {
  for (int order : {0, 1})
    for (DType t : {DType::Float32, DType::Float16, DType::Int8, DType::UInt8}) {
      SCOPED_TRACE("storage_order " + std::to_string(order));
      check_pool("MaxPool", t, {2, 3, 8, 7}, [=](onnx::NodeProto& n) {
        set_ints(n, "kernel_shape", {3, 3});
        set_ints(n, "strides", {2, 2});
        set_ints(n, "pads", {1, 1, 1, 0});
        set_int(n, "storage_order", order);
      }, 10 + order, t == DType::Float32 || t == DType::UInt8);
    }
  check_pool("MaxPool", DType::Float32, {1, 2, 10, 9}, [](onnx::NodeProto& n) {
    set_ints(n, "kernel_shape", {2, 3});
    set_ints(n, "dilations", {3, 2});
    set_int(n, "ceil_mode", 1);
  }, 12, true);
  check_pool("MaxPool", DType::Float32, {1, 2, 6, 5, 4}, [](onnx::NodeProto& n) {
    set_ints(n, "kernel_shape", {2, 2, 2});
    set_int(n, "storage_order", 1);
  }, 13, true);
  check_pool("MaxPool", DType::Float64, {2, 3, 10}, [](onnx::NodeProto& n) {
    set_ints(n, "kernel_shape", {3});
    set_string(n, "auto_pad", "SAME_UPPER");
  }, 14, true);
}

// The windows of image models (a CNN's 2 x 2 max pool of stride 2, ResNet's 3 x 3 of stride 2 padded
// by 1), on rows long enough that the 2-D kernel's positions cover several workgroups.
TEST(GpuPool, ImageWindows) {
  for (const char* op : {"MaxPool", "AveragePool"}) {
    check_pool(op, DType::Float32, {2, 4, 33, 34}, [](onnx::NodeProto& n) {
      set_ints(n, "kernel_shape", {2, 2});
      set_ints(n, "strides", {2, 2});
    }, 16);
    check_pool(op, DType::Float32, {2, 3, 31, 30}, [](onnx::NodeProto& n) {
      set_ints(n, "kernel_shape", {3, 3});
      set_ints(n, "strides", {2, 2});
      set_ints(n, "pads", {1, 1, 1, 1});
    }, 17, std::string(op) == "MaxPool");
  }
}

TEST(GpuPool, LpPool) {
  check_pool("LpPool", DType::Float32, {1, 3, 6, 6}, [](onnx::NodeProto& n) {
    set_ints(n, "kernel_shape", {2, 3});
    set_int(n, "p", 3);
    set_ints(n, "pads", {1, 0, 0, 1});
  }, 15);
}

TEST(GpuPool, GlobalPools) {
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
    check_pool(op, DType::Float32, {2, 3, 5, 7}, {}, 20);
    check_pool(op, DType::Float32, {1, 4, 33, 31}, {}, 21);  // rows longer than a workgroup
    check_pool(op, DType::Float16, {2, 2, 9}, {}, 22);
    check_pool(op, DType::Float64, {1, 3, 2, 3, 4}, {}, 23);
    check_pool(op, DType::Float32, {3, 300, 1, 1}, {}, 24);  // one element per row, many rows
  }
}

TEST(GpuPool, GlobalMaxPoolNaN) {
  // The CPU's fold: a NaN first element makes the result NaN, later NaNs are ignored.
  float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> v(2 * 600, 0.5f);
  v[0] = nan;
  v[600 + 17] = nan;
  v[600 + 400] = 3.0f;
  std::vector<Operand> ins{{"X", Tensor::from_vector<float>({1, 2, 600}, v)}};
  check_gpu_vs_cpu(one_node_model("GlobalMaxPool", ins, {"Y"}, 12), ins);
}

// --------------------------------------------------------------------------------------------------- Resize

Tensor floats(const std::vector<float>& v) { return Tensor::from_vector<float>({int64_t(v.size())}, v); }
Tensor int64s(const std::vector<int64_t>& v) { return Tensor::from_vector<int64_t>({int64_t(v.size())}, v); }

// Resize-13 with the given scales or sizes (initializers), X random of dtype t.
void check_resize(DType t, const Shape& x, const std::vector<float>& scales, const std::vector<int64_t>& sizes,
                  const Attrs& attrs, uint32_t seed, int opset = 13, const std::vector<float>& roi = {}) {
  SCOPED_TRACE(std::string(dtype_name(t)) + " " + shape_str(x));
  Tensor xv = dtype_is_float(t) ? random_float(t, x, seed) : random_int(t, x, seed);
  std::vector<Operand> ins{{"X", xv},
                           {"roi", roi.empty() ? Tensor() : floats(roi), true},
                           {"scales", scales.empty() ? Tensor() : floats(scales), true},
                           {"sizes", sizes.empty() ? Tensor() : int64s(sizes), true}};
  if (sizes.empty()) ins.pop_back();
  check_gpu_vs_cpu(one_node_model("Resize", ins, {"Y"}, opset, attrs), ins, dtype_is_float(t) ? float_tol(t) : 0);
}

Attrs resize_attrs(const std::string& mode, const std::string& coord, const std::string& nearest = "") {
  return [=](onnx::NodeProto& n) {
    set_string(n, "mode", mode);
    set_string(n, "coordinate_transformation_mode", coord);
    if (!nearest.empty()) set_string(n, "nearest_mode", nearest);
  };
}

const char* kCoords[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"};

TEST(GpuResize, NearestEveryRoundingAndCoordinateMode) {
  for (const char* coord : kCoords)
    for (const char* nm : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
      SCOPED_TRACE(std::string(coord) + " " + nm);
      check_resize(DType::Float32, {1, 2, 5, 7}, {1, 1, 1.7f, 0.6f}, {}, resize_attrs("nearest", coord, nm), 1);
      check_resize(DType::Float32, {1, 2, 5, 7}, {}, {1, 2, 9, 3}, resize_attrs("nearest", coord, nm), 2);
    }
}

TEST(GpuResize, NearestIntegersExact) {
  check_resize(DType::Int64, {2, 3, 4, 5}, {1, 1, 2, 3}, {}, resize_attrs("nearest", "asymmetric", "floor"), 3);
  check_resize(DType::Int64, {2, 3, 4, 5}, {}, {3, 2, 7, 3}, resize_attrs("nearest", "half_pixel"), 4);
  check_resize(DType::UInt8, {1, 3, 6, 6}, {1, 1, 0.5f, 2.5f}, {}, resize_attrs("nearest", "half_pixel"), 5);
  check_resize(DType::Int8, {1, 3, 6, 6}, {1, 1, 1.5f, 1}, {}, resize_attrs("nearest", "align_corners"), 6);
  check_resize(DType::Float16, {1, 3, 6, 6}, {1, 1, 1.5f, 1}, {}, resize_attrs("nearest", "half_pixel"), 7);
}

TEST(GpuResize, Linear) {
  for (const char* coord : kCoords) {
    SCOPED_TRACE(coord);
    check_resize(DType::Float32, {1, 2, 5, 7}, {1, 1, 1.7f, 0.6f}, {}, resize_attrs("linear", coord), 8);
    check_resize(DType::Float32, {2, 3, 4, 4}, {}, {2, 3, 8, 3}, resize_attrs("linear", coord), 9);
  }
  check_resize(DType::Float32, {1, 2, 3, 4, 5}, {1, 1, 2, 1.5f, 0.5f}, {}, resize_attrs("linear", "half_pixel"), 10);
  check_resize(DType::Float64, {3, 7}, {2, 0.5f}, {}, resize_attrs("linear", "align_corners"), 11);
  check_resize(DType::Float16, {1, 1, 4, 4}, {1, 1, 2, 2}, {}, resize_attrs("linear", "half_pixel"), 12);
}

TEST(GpuResize, Cubic) {
  for (const char* coord : {"half_pixel", "align_corners", "asymmetric"}) {
    SCOPED_TRACE(coord);
    check_resize(DType::Float32, {1, 2, 5, 6}, {1, 1, 1.6f, 0.7f}, {}, resize_attrs("cubic", coord), 13);
  }
  check_resize(DType::Float32, {1, 2, 5, 6}, {}, {1, 2, 3, 11}, [](onnx::NodeProto& n) {
    set_string(n, "mode", "cubic");
    set_float(n, "cubic_coeff_a", -0.5f);
    set_int(n, "exclude_outside", 1);
  }, 14);
}

TEST(GpuResize, CropAndResizeExtrapolates) {
  auto attrs = [](const std::string& mode) {
    return [=](onnx::NodeProto& n) {
      set_string(n, "mode", mode);
      set_string(n, "coordinate_transformation_mode", "tf_crop_and_resize");
      set_float(n, "extrapolation_value", 7.25f);
    };
  };
  std::vector<float> roi{0, 0, -0.2f, 0.3f, 1, 1, 0.9f, 1.4f};
  check_resize(DType::Float32, {1, 2, 6, 6}, {}, {1, 2, 5, 4}, attrs("linear"), 15, 13, roi);
  check_resize(DType::Float32, {1, 2, 6, 6}, {}, {1, 2, 5, 4}, attrs("nearest"), 16, 13, roi);
  check_resize(DType::Int64, {1, 2, 6, 6}, {}, {1, 2, 5, 4}, attrs("nearest"), 17, 13, roi);
}

TEST(GpuResize, Opset18AxesPolicyAntialias) {
  check_resize(DType::Float32, {1, 3, 8, 9}, {}, {5, 4}, [](onnx::NodeProto& n) {
    set_string(n, "mode", "linear");
    set_ints(n, "axes", {2, -1});
    set_string(n, "keep_aspect_ratio_policy", "not_larger");
  }, 18, 18);
  check_resize(DType::Float32, {1, 3, 8, 9}, {0.6f, 0.45f}, {}, [](onnx::NodeProto& n) {
    set_string(n, "mode", "linear");
    set_ints(n, "axes", {2, 3});
    set_int(n, "antialias", 1);
  }, 19, 18);
  check_resize(DType::Float32, {1, 3, 8, 9}, {0.6f, 0.45f}, {}, [](onnx::NodeProto& n) {
    set_string(n, "mode", "cubic");
    set_ints(n, "axes", {2, 3});
    set_int(n, "antialias", 1);
  }, 20, 18);
}

TEST(GpuResize, IdentityAxesAndOldOpset) {
  check_resize(DType::Float32, {2, 3, 4, 5}, {1, 1, 1, 1}, {}, resize_attrs("linear", "half_pixel"), 21);
  // Resize-10: X, scales.
  std::vector<Operand> ins{{"X", random_float(DType::Float32, {1, 2, 3, 4}, 22)},
                           {"scales", floats({1, 1, 2.5f, 1.5f}), true}};
  for (const char* mode : {"nearest", "linear"}) {
    SCOPED_TRACE(mode);
    check_gpu_vs_cpu(one_node_model("Resize", ins, {"Y"}, 10, [=](onnx::NodeProto& n) { set_string(n, "mode", mode); }),
                     ins);
  }
}

TEST(GpuResize, Upsample) {
  std::vector<Operand> ins{{"X", random_float(DType::Float32, {1, 2, 3, 4}, 23)},
                           {"scales", floats({1, 1, 2, 3}), true}};
  check_gpu_vs_cpu(one_node_model("Upsample", ins, {"Y"}, 9), ins);
  check_gpu_vs_cpu(one_node_model("Upsample", ins, {"Y"}, 9, [](onnx::NodeProto& n) { set_string(n, "mode", "linear"); }),
                   ins);
  std::vector<Operand> x_only{ins[0]};
  check_gpu_vs_cpu(one_node_model("Upsample", x_only, {"Y"}, 7, [](onnx::NodeProto& n) {
    set_string(n, "mode", "nearest");
    set_floats(n, "scales", {1, 1, 2, 1.5f});
  }), x_only);
  std::vector<Operand> ints{{"X", random_int(DType::Int64, {1, 2, 3, 4}, 24)}, ins[1]};
  check_gpu_vs_cpu(one_node_model("Upsample", ints, {"Y"}, 9), ints, 0);
}

TEST(GpuResize, FallsBack) {
  GTEST_SKIP() << "shape-like graph inputs key the plan on their values and run on the GPU "
                  "(RuntimeCapture.ShapeLikeGraphInputsKeyThePlanOnTheirValues); this fallback case needs a "
                  "value computed at run time instead of a graph input";
  // Scales that are not constants: the output shape depends on run-time values.
  std::vector<Operand> ins{{"X", random_float(DType::Float32, {1, 1, 2, 2}, 25)},
                           {"roi", Tensor()},
                           {"scales", floats({1, 1, 2, 2})}};
  check_falls_back(one_node_model("Resize", ins, {"Y"}, 13), ins, "not a constant");
  // Linear interpolation of integers runs on the CPU.
  std::vector<Operand> ints{{"X", random_int(DType::UInt8, {1, 1, 3, 3}, 26)},
                            {"roi", Tensor()},
                            {"scales", floats({1, 1, 2, 2}), true}};
  check_falls_back(one_node_model("Resize", ints, {"Y"}, 13, [](onnx::NodeProto& n) { set_string(n, "mode", "linear"); }),
                   ints, "integers");
}

}  // namespace
}  // namespace onnxgpu
