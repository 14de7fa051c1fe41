// ONNX Runtime's contrib ops (com.microsoft, and SimplifiedLayerNormalization, which ONNX Runtime puts
// in the ONNX domain) and the opset-23 ONNX ops that share their kernels, against ONNX Runtime's own
// outputs: every case of tests/data/contrib (written by tests/data/contrib/make_cases.py with ONNX
// Runtime 1.30) runs
//   - on the CPU reference, compared with ONNX Runtime's outputs;
//   - on WebGPU with graph capture and fail-loud (every node on the GPU): recorded with the case's
//     inputs, replayed with other values (compared with the CPU reference), replayed with the case's
//     inputs again (compared with ONNX Runtime's outputs).
// ai.onnx.ml's cases (tests/data/ml, the same script) run on the CPU reference and in a WebGPU session,
// where the node falls back alone (fail-loud refuses it). Then the errors: an unknown domain or op, the com.microsoft opset, a domain not imported, attribute
// types, bad shapes and out-of-range position ids name the node, the op, the tensor and what was
// expected, on both EPs.
//
// Run: XDG_RUNTIME_DIR=/tmp build/tests/unit_tests --gtest_filter='Contrib*'
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "loader/tensor_proto.h"
#include "model_builder.h"
#include "one_node.h"
#include "onnxgpu/error.h"
#include "onnxgpu/session.h"
#include "runtime/compare.h"
#include "runtime/conformance.h"

namespace fs = std::filesystem;

namespace onnxgpu {
namespace {

using testing::Operand;

// ---- Errors: helpers ---------------------------------------------------------------------------------

// The error of running `model` on `ep` (loading included), or "" when it runs.
std::string error_of(const std::string& model, const std::vector<Operand>& inputs, const std::string& ep) {
  try {
    SessionOptions o = ep == "cpu" ? SessionOptions{} : testing::webgpu_options();
    o.ep = ep;
    Session s = Session::from_bytes(model, o);
    s.run(testing::feeds_of(inputs));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::string& model, const std::vector<Operand>& inputs, const std::vector<std::string>& parts) {
  for (const char* ep : {"cpu", "webgpu"}) {
    if (std::string(ep) == "webgpu" && testing::skip_gpu()) continue;
    std::string e = error_of(model, inputs, ep);
    EXPECT_FALSE(e.empty()) << ep << ": no error";
    for (const auto& p : parts) EXPECT_NE(e.find(p), std::string::npos) << ep << ": '" << p << "' not in: " << e;
  }
}

Tensor f32(const Shape& s, uint32_t seed = 1) { return testing::random_float(DType::Float32, s, seed); }

testing::ModelOptions named_n0() {
  testing::ModelOptions m;
  m.node_name = "n0";
  return m;
}

// The one-node model with its node in `domain`, imported at `version` (0: not imported).
std::string in_domain(const std::string& model, const std::string& domain, int version = 1) {
  onnx::ModelProto m;
  m.ParseFromString(model);
  m.mutable_graph()->mutable_node(0)->set_domain(domain);
  if (version > 0) {
    auto* d = m.add_opset_import();
    d->set_domain(domain);
    d->set_version(version);
  }
  return m.SerializeAsString();
}

using testing::in_domain_import;

// A one-node model of `op` with node name n0, in `domain` (imported at `version`).
std::string model_of(const std::string& op, const std::vector<Operand>& in, const std::vector<std::string>& outs,
                     const std::string& domain = "com.microsoft", int version = 1, const testing::Attrs& attrs = {},
                     int opset = 17) {
  std::string m = testing::one_node_model(op, in, outs, opset, attrs, named_n0());
  return domain.empty() ? m : in_domain(m, domain, version);
}

TEST(ContribErrors, UnknownDomainNamesTheOpAndDomain) {
  std::vector<Operand> in{{"x", f32({2, 3})}};
  expect_error(model_of("Frobnicate", in, {"y"}, "com.example"), in,
               {"node 'n0' (Frobnicate)", "no CPU kernel for op 'Frobnicate' in domain 'com.example'"});
  expect_error(model_of("Frobnicate", in, {"y"}), in,
               {"node 'n0' (Frobnicate)", "no CPU kernel for op 'Frobnicate' in domain 'com.microsoft'"});
}

TEST(ContribErrors, DomainAndOpsetAreChecked) {
  std::vector<Operand> in{{"x", f32({2, 3})}};
  expect_error(model_of("Frobnicate", in, {"y"}, "com.microsoft", 2), in,
               {"opset 2 of domain 'com.microsoft'", "newer than this engine knows (up to 1)"});
  expect_error(model_of("Frobnicate", in, {"y"}, "com.microsoft", 0), in,
               {"node 'n0' (Frobnicate) is in domain 'com.microsoft', which the model does not import"});
}

// ---- ONNX Runtime's outputs (tests/data/contrib) ----------------------------------------------------

const std::string kCases = std::string(ONNXGPU_SOURCE_DIR) + "/tests/data/contrib/";

std::vector<std::string> case_names(const std::string& dir = kCases) {
  std::vector<std::string> r;
  for (const auto& e : fs::directory_iterator(dir))
    if (fs::exists(e.path() / "model.onnx")) r.push_back(e.path().filename().string());
  std::sort(r.begin(), r.end());
  return r;
}

std::vector<fs::path> files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> r;
  for (int k = 0; fs::exists(dir / (prefix + std::to_string(k) + ".pb")); ++k) r.push_back(dir / (prefix + std::to_string(k) + ".pb"));
  return r;
}

struct StoredCase {
  std::string model;  // path
  std::unordered_map<std::string, Tensor> feeds;
  std::vector<Tensor> want;  // ONNX Runtime's outputs
};

StoredCase load_from(const std::string& dir, const std::string& name) {
  StoredCase c;
  c.model = dir + name + "/model.onnx";
  const fs::path data = dir + name + "/test_data_set_0";
  for (const auto& f : files(data, "input_")) {
    auto [n, t] = loader::read_tensor_pb(f.string());
    c.feeds[n] = t;
  }
  for (const auto& f : files(data, "output_")) c.want.push_back(loader::read_tensor_pb(f.string()).second);
  return c;
}

StoredCase load(const std::string& name) { return load_from(kCases, name); }

// Other values for a replay: floats scaled and shifted (integers, the position ids, kept).
std::unordered_map<std::string, Tensor> other_values(const std::unordered_map<std::string, Tensor>& feeds) {
  std::unordered_map<std::string, Tensor> r;
  for (const auto& [n, t] : feeds) {
    if (!dtype_is_float(t.dtype())) {
      r[n] = t;
      continue;
    }
    Tensor d = t.cast(DType::Float64);
    for (double& v : d.span<double>()) v = v * 0.75 - 0.125;
    r[n] = d.cast(t.dtype());
  }
  return r;
}

// ONNX Runtime's outputs against ours: float32 within 1e-5 + 1e-3 |x| (the conformance runner's
// tolerance); float16 within a float16 rounding step or two.
void expect_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size(); ++k) {
    runtime::Tolerance tol;
    if (want[k].dtype() == DType::Float16) tol = {4e-3, 1e-3};
    auto c = runtime::compare_tensors(got[k], want[k], tol);
    EXPECT_TRUE(c.passed) << what << " output " << k << ": " << c.message;
  }
}

class ContribOrt : public ::testing::TestWithParam<std::string> {};

TEST_P(ContribOrt, CpuReferenceMatchesOnnxRuntime) {
  StoredCase c = load(GetParam());
  SessionOptions o;
  o.ep = "cpu";
  Session s(c.model, o);
  expect_close(s.run(c.feeds), c.want, GetParam() + " (cpu)");
}

TEST_P(ContribOrt, GpuCapturedMatchesOnnxRuntime) {
  StoredCase c = load(GetParam());
  SessionOptions cpu_options;
  cpu_options.ep = "cpu";
  auto other = other_values(c.feeds);
  std::vector<Tensor> other_want = Session(c.model, cpu_options).run(other);
  SessionOptions o = testing::webgpu_options();
  o.int64.fail_loud = true;
  std::unique_ptr<Session> gpu;
  try {
    gpu = std::make_unique<Session>(c.model, o);
  } catch (const std::exception& e) {
    if (testing::skip_gpu()) GTEST_SKIP() << "no WebGPU session: " << e.what();
    FAIL() << "cannot create a WebGPU session: " << e.what();
  }
  expect_close(gpu->run(c.feeds), c.want, GetParam() + " (webgpu, recorded)");
  // Every node on the GPU: the one op, or a composite op's or a whole model's nodes.
  EXPECT_GE(gpu->last_plan().gpu_nodes, 1);
  EXPECT_EQ(gpu->last_plan().cpu_nodes, 0);
  expect_close(gpu->run(other), other_want, GetParam() + " (webgpu, replayed with other values, vs the CPU reference)");
  EXPECT_TRUE(gpu->last_plan().replayed);
  expect_close(gpu->run(c.feeds), c.want, GetParam() + " (webgpu, replayed)");
  EXPECT_TRUE(gpu->last_plan().replayed);
}

INSTANTIATE_TEST_SUITE_P(Contrib, ContribOrt, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// ---- The normalizations

TEST(ContribErrors, NormalizationAttributesAndOpsets) {
  std::vector<Operand> in{{"input", f32({2, 3, 4})}, {"skip", f32({2, 3, 4})}, {"gamma", f32({4})}};
  auto model = model_of("SkipLayerNormalization", in, {"y"}, "com.microsoft", 1,
                        [](onnx::NodeProto& n) { testing::set_string(n, "epsilon", "small"); });
  expect_error(model, in, {"node 'n0' (SkipLayerNormalization): attribute 'epsilon' is a string", "expects a float"});
  // RMSNormalization is an opset-23 op.
  std::vector<Operand> rms{{"X", f32({2, 3})}, {"scale", f32({3})}};
  expect_error(model_of("RMSNormalization", rms, {"Y"}, ""), rms,
               {"RMSNormalization is an ONNX op from opset 23 on; the model imports opset 17"});
}

TEST(ContribErrors, NormalizationShapes) {
  std::vector<Operand> in{{"input", f32({2, 3, 4})}, {"skip", f32({2, 4, 4})}, {"gamma", f32({4})}};
  expect_error(model_of("SkipLayerNormalization", in, {"y"}), in,
               {"node 'n0' (SkipLayerNormalization)", "skip float32[2,4,4] must have input's shape [2,3,4], or [1,3,4] or [3,4]"});
  in[1].value = f32({2, 3, 4});
  in[2].value = f32({3});
  expect_error(model_of("SkipLayerNormalization", in, {"y"}), in, {"gamma float32[3] must be 1-D with input's hidden size 4"});
  in[2].value = f32({4});
  expect_error(model_of("SkipLayerNormalization", in, {"y", "", "", "s", "extra"}), in,
               {"has at most 4 outputs (output, mean, inv_std_var, input_skip_bias_sum), the node has 5"});
  std::vector<Operand> rms{{"X", f32({2, 3})}, {"scale", f32({2})}};
  expect_error(model_of("SimplifiedLayerNormalization", rms, {"Y"}, ""), rms,
               {"node 'n0' (SimplifiedLayerNormalization)", "scale float32[2] must have the normalized size 3"});
}

// ---- The fused activations

TEST(ContribErrors, Activations) {
  // A com.microsoft op in the default domain is not that op.
  std::vector<Operand> in{{"X", f32({2, 3})}};
  expect_error(model_of("QuickGelu", in, {"Y"}, ""), in, {"no CPU kernel for op 'QuickGelu'"});
  expect_error(model_of("QuickGelu", in, {"Y", "Z"}), in, {"node 'n0' (QuickGelu): has one output (Y), the node has 2"});
  std::vector<Operand> gelu{{"X", f32({2, 3})}, {"bias", f32({2})}};
  expect_error(model_of("BiasGelu", gelu, {"Y"}), gelu,
               {"node 'n0' (BiasGelu)", "bias float32[2] must be 1-D with X's last dim 3"});
  std::vector<Operand> add{{"X", f32({2, 3})}, {"bias", f32({3})}, {"skip", f32({2, 3})}};
  expect_error(model_of("BiasAdd", add, {"Y"}), add, {"node 'n0' (BiasAdd)", "X float32[2,3] must be [batch, sequence, channels]"});
}

// ---- The QOperator ops

TEST(ContribErrors, QLinearOps) {
  auto u8 = [](const Shape& s) { return Tensor(DType::UInt8, s); };
  auto scale = [](float v) { return Tensor::scalar<float>(v); };
  // B of another type than A.
  std::vector<Operand> add{{"A", u8({2, 3})}, {"as", scale(0.1f), true}, {"az", Tensor::scalar<uint8_t>(0), true},
                           {"B", Tensor(DType::Int8, {3})}, {"bs", scale(0.1f), true}, {"bz", Tensor::scalar<int8_t>(0), true},
                           {"cs", scale(0.1f), true}};
  expect_error(model_of("QLinearAdd", add, {"C"}), add, {"node 'n0' (QLinearAdd)", "B must be uint8 (as the other quantized tensors), got int8[3]"});
  // A scale of one value per channel (ONNX Runtime's QOperator ops take per-tensor parameters).
  std::vector<Operand> sig{{"X", u8({2, 3})}, {"xs", Tensor::from_vector<float>({3}, {0.1f, 0.2f, 0.3f}), true},
                           {"xz", Tensor::scalar<uint8_t>(0), true}, {"ys", scale(0.1f), true}};
  expect_error(model_of("QLinearSigmoid", sig, {"Y"}), sig, {"node 'n0' (QLinearSigmoid)", "X's scale must be a float scalar, got float32[3]"});
  // A pool over no spatial dim.
  std::vector<Operand> gap{{"X", u8({2, 3})}, {"xs", scale(0.1f), true}, {"xz", Tensor::scalar<uint8_t>(0), true},
                           {"ys", scale(0.1f), true}, {"yz", Tensor::scalar<uint8_t>(0), true}};
  expect_error(model_of("QLinearGlobalAveragePool", gap, {"Y"}), gap,
               {"node 'n0' (QLinearGlobalAveragePool)", "X must have a batch, a channel and at least one spatial dim"});
  // Tensors that differ off the axis; inputs not in triples.
  std::vector<Operand> cat{{"ys", scale(0.1f), true}, {"yz", Tensor::scalar<uint8_t>(0), true},
                           {"X0", u8({2, 3})}, {"s0", scale(0.1f), true}, {"z0", Tensor::scalar<uint8_t>(0), true},
                           {"X1", u8({3, 3})}, {"s1", scale(0.1f), true}, {"z1", Tensor::scalar<uint8_t>(0), true}};
  testing::Attrs axis1 = [](onnx::NodeProto& n) { testing::set_int(n, "axis", 1); };
  expect_error(model_of("QLinearConcat", cat, {"Y"}, "com.microsoft", 1, axis1), cat,
               {"node 'n0' (QLinearConcat)", "X1 uint8[3,3] must match X0 uint8[2,3] except along axis 1"});
  std::vector<Operand> pairs(cat.begin(), cat.end() - 1);
  expect_error(model_of("QLinearConcat", pairs, {"Y"}, "com.microsoft", 1, axis1), pairs,
               {"node 'n0' (QLinearConcat)", "takes Y_scale, Y_zero_point and then (X, X_scale, X_zero_point) per tensor"});
}

// ---- Composite ops (src/loader/composite_ops.h): what a composition does not cover fails at load,
// naming the node.

TEST(ContribErrors, CompositeOpsNameWhatTheyDoNotCover) {
  std::vector<Operand> conv{{"X", f32({1, 2, 4, 4})}, {"W", f32({3, 2, 3, 3}, 2), true}};
  testing::Attrs softplus = [](onnx::NodeProto& n) { testing::set_string(n, "activation", "Softplus"); };
  expect_error(model_of("FusedConv", conv, {"Y"}, "com.microsoft", 1, softplus), conv,
               {"node 'n0' (com.microsoft.FusedConv)", "activation 'Softplus' is not supported"});
  std::vector<Operand> attention{{"input", f32({1, 3, 8})},     {"weights", f32({8, 24}, 2), true},
                                 {"bias", f32({24}, 3), true},  {"mask_index", Tensor()},
                                 {"past", f32({2, 1, 2, 2, 4})}, {"attention_bias", Tensor()},
                                 {"past_sequence_length", Tensor::scalar<int32_t>(2), true}};
  testing::Attrs heads = [](onnx::NodeProto& n) { testing::set_int(n, "num_heads", 2); };
  expect_error(model_of("Attention", attention, {"output", "present"}, "com.microsoft", 1, heads), attention,
               {"node 'n0' (com.microsoft.Attention)", "past_sequence_length"});
}

// ---- RotaryEmbedding

TEST(ContribErrors, RotaryPositionsOutsideTheCaches) {
  const Tensor cache = f32({4, 4});
  std::vector<Operand> in{{"input", f32({1, 2, 8})}, {"position_ids", Tensor::from_vector<int64_t>({1, 2}, {0, 20})},
                          {"cos_cache", cache}, {"sin_cache", cache}};
  // The CPU says ONNX Runtime's message; the GPU reads the positions at run time and flags the first
  // position beyond the caches: the run fails naming the node and that position.
  auto expect = [&](const std::string& cpu_message, const std::string& gpu_position) {
    const std::string model = model_of("RotaryEmbedding", in, {"output"});
    const std::string cpu = error_of(model, in, "cpu");
    EXPECT_NE(cpu.find("node 'n0' (RotaryEmbedding): " + cpu_message), std::string::npos) << cpu;
    if (testing::skip_gpu()) return;
    const std::string gpu = error_of(model, in, "webgpu");
    EXPECT_NE(gpu.find("node 'n0' (RotaryEmbedding) on the GPU: an index is out of range (index " + gpu_position + ")"),
              std::string::npos) << gpu;
  };
  expect("position_ids value 20 at index 1 is out of range [0, 4)", "20");
  in[1].value = Tensor::from_vector<int64_t>({1}, {3});  // the first token's position: rows 3 and 4
  expect("position_ids 3 with sequence length 2 reads beyond the caches' 4 positions", "4");
}

TEST(ContribErrors, RotaryShapes) {
  std::vector<Operand> in{{"input", f32({1, 2, 8})}, {"position_ids", Tensor::from_vector<int64_t>({1, 2}, {0, 1})},
                          {"cos_cache", f32({4, 3})}, {"sin_cache", f32({4, 3})}};
  expect_error(model_of("RotaryEmbedding", in, {"output"}, "com.microsoft", 1,
                        [](onnx::NodeProto& n) { testing::set_int(n, "num_heads", 2); }),
               in, {"node 'n0' (RotaryEmbedding)", "cos_cache float32[4,3] must be [max_position, 2] (half the rotary dim 4)"});
  std::vector<Operand> onnx{{"X", f32({1, 2, 8})}, {"cos_cache", f32({4, 4})}, {"sin_cache", f32({4, 4})},
                            {"position_ids", Tensor::from_vector<int64_t>({1, 2}, {0, 1})}};
  expect_error(model_of("RotaryEmbedding", onnx, {"Y"}, "", 1, {}, 23), onnx,
               {"node 'n0' (RotaryEmbedding)", "num_heads is required for a 3-D X float32[1,2,8]"});
  expect_error(model_of("RotaryEmbedding", onnx, {"Y"}, ""), onnx,
               {"RotaryEmbedding is an ONNX op from opset 23 on; the model imports opset 17"});
}

// ---- Block-quantized weights: MatMulNBits, GatherBlockQuantized

Tensor bytes(const Shape& s, uint8_t fill = 0x5a) {
  Tensor t(DType::UInt8, s);
  for (auto& v : t.span<uint8_t>()) v = fill;
  return t;
}

testing::Attrs nbits_attrs(int64_t K, int64_t N, int64_t bits, int64_t block) {
  return [=](onnx::NodeProto& n) {
    testing::set_int(n, "K", K);
    testing::set_int(n, "N", N);
    testing::set_int(n, "bits", bits);
    testing::set_int(n, "block_size", block);
  };
}

// MatMulNBits with K = 40, N = 6 in blocks of 16 (3 blocks), B's shape and the attributes as given.
std::vector<Operand> nbits_inputs(const Shape& b_shape, int64_t bits = 4) {
  return {{"A", f32({2, 40})}, {"B", bytes(b_shape), true}, {"scales", f32({6, 3}, 2), true},
          {"zero_points", bytes({6, (3 * bits + 7) / 8}), true}};
}

TEST(ContribErrors, MatMulNBitsShapesAndAttributes) {
  auto in = nbits_inputs({6, 3, 9});
  expect_error(model_of("MatMulNBits", in, {"Y"}, "com.microsoft", 1, nbits_attrs(40, 6, 4, 16)), in,
               {"node 'n0' (MatMulNBits)", "B uint8[6,3,9] must be uint8 [6,3,8] ([N, ceil(K / block_size), block_size * bits / 8])"});
  in = nbits_inputs({6, 3, 8});
  expect_error(model_of("MatMulNBits", in, {"Y"}, "com.microsoft", 1, nbits_attrs(40, 6, 3, 16)), in,
               {"node 'n0' (MatMulNBits)", "bits 3 is not supported: expected 2, 4 or 8"});
  expect_error(model_of("MatMulNBits", in, {"Y"}, "com.microsoft", 1, nbits_attrs(40, 6, 4, 24)), in,
               {"node 'n0' (MatMulNBits)", "block_size 24 must be a power of 2 and at least 16"});
  expect_error(model_of("MatMulNBits", in, {"Y"}, "com.microsoft", 1, nbits_attrs(41, 6, 4, 16)), in,
               {"node 'n0' (MatMulNBits)", "A float32[2,40] must have K = 41 as its last dim"});
  in[3].value = bytes({6, 3});  // packed 4-bit zero points of 3 blocks take 2 bytes per row
  expect_error(model_of("MatMulNBits", in, {"Y"}, "com.microsoft", 1, nbits_attrs(40, 6, 4, 16)), in,
               {"node 'n0' (MatMulNBits)", "zero_points uint8[6,3] must be uint8 [6,2]"});
  in = nbits_inputs({6, 3, 8});
  in.push_back({"g_idx", Tensor::from_vector<int32_t>({40}, std::vector<int32_t>(40, 0)), true});
  expect_error(model_of("MatMulNBits", in, {"Y"}, "com.microsoft", 1, nbits_attrs(40, 6, 4, 16)), in,
               {"node 'n0' (MatMulNBits)", "input 4 (g_idx, deprecated) is not supported"});
  in = nbits_inputs({6, 3, 8});
  auto model = model_of("MatMulNBits", in, {"Y"}, "com.microsoft", 1, [](onnx::NodeProto& n) {
    nbits_attrs(40, 6, 4, 16)(n);
    testing::set_string(n, "K", "forty");
  });
  expect_error(model, in, {"node 'n0' (MatMulNBits): attribute 'K' is a string", "expects an int"});
}

TEST(ContribErrors, GatherBlockQuantizedIndicesAndAxes) {
  // 4 rows of 16 4-bit values (one block of 16): index 7 is beyond the rows.
  std::vector<Operand> in{{"data", bytes({4, 8}), true}, {"indices", Tensor::from_vector<int64_t>({3}, {1, -1, 7})},
                          {"scales", f32({4, 1}), true}};
  auto attrs = [](onnx::NodeProto& n) {
    testing::set_int(n, "bits", 4);
    testing::set_int(n, "block_size", 16);
  };
  const std::string model = model_of("GatherBlockQuantized", in, {"y"}, "com.microsoft", 1, attrs);
  const std::string cpu = error_of(model, in, "cpu");
  EXPECT_NE(cpu.find("node 'n0' (GatherBlockQuantized): indices element 7 at index 2 is out of range: data has 4 rows"),
            std::string::npos) << cpu;
  if (!testing::skip_gpu()) {
    // The GPU reads the indices at run time and flags the first one outside [-4, 4), int64 beyond 32 bits
    // included (its low word 1 would be a valid row).
    const std::string gpu = error_of(model, in, "webgpu");
    EXPECT_NE(gpu.find("node 'n0' (GatherBlockQuantized) on the GPU: an index is out of range (index 7)"), std::string::npos) << gpu;
    in[1].value = Tensor::from_vector<int64_t>({3}, {0, (int64_t(1) << 32) + 1, 1});
    const std::string wide = error_of(model, in, "webgpu");
    EXPECT_NE(wide.find("an index is out of range (index 4294967297)"), std::string::npos) << wide;
  }
  in[1].value = Tensor::from_vector<int64_t>({3}, {0, 1, 2});
  expect_error(model_of("GatherBlockQuantized", in, {"y"}, "com.microsoft", 1,
                        [&](onnx::NodeProto& n) {
                          attrs(n);
                          testing::set_int(n, "gather_axis", 1);
                        }),
               in, {"node 'n0' (GatherBlockQuantized)", "uint8 data takes gather_axis 0 and quantize_axis 1 (the last), got 1 and 1"});
  in[2].value = f32({4, 2});
  expect_error(model_of("GatherBlockQuantized", in, {"y"}, "com.microsoft", 1, attrs), in,
               {"node 'n0' (GatherBlockQuantized)", "scales float32[4,2] must be [4,1]"});
}

// ---- GroupQueryAttention

// The inputs of a GroupQueryAttention decode step: 4 heads, 2 kv heads of 16 (one sequence) after a
// past of `past` positions (a static buffer of `buffer` positions: seqlens_k = past).
std::vector<Operand> gqa_step(int64_t past, int64_t buffer, int64_t total, uint32_t seed, const Tensor& pk, const Tensor& pv) {
  return {{"query", f32({1, 1, 64}, seed)},
          {"key", f32({1, 1, 32}, seed + 1)},
          {"value", f32({1, 1, 32}, seed + 2)},
          {"past_key", pk.defined() ? pk : Tensor(DType::Float32, {1, 2, buffer, 16})},
          {"past_value", pv.defined() ? pv : Tensor(DType::Float32, {1, 2, buffer, 16})},
          {"seqlens_k", Tensor::from_vector<int32_t>({1}, {int32_t(past)})},
          {"total_sequence_length", Tensor::from_vector<int32_t>({}, {int32_t(total)})}};
}

testing::Attrs gqa_attrs(int64_t heads = 4, int64_t kv_heads = 2) {
  return [=](onnx::NodeProto& n) {
    testing::set_int(n, "num_heads", heads);
    testing::set_int(n, "kv_num_heads", kv_heads);
  };
}

TEST(ContribErrors, GqaHeadsAndShapes) {
  std::vector<Operand> in = gqa_step(3, 8, 8, 1, {}, {});
  auto model = [&](int64_t heads, int64_t kv) {
    return model_of("GroupQueryAttention", in, {"output", "present_key", "present_value"}, "com.microsoft", 1,
                    gqa_attrs(heads, kv));
  };
  expect_error(model(4, 3), in, {"node 'n0' (GroupQueryAttention)", "num_heads 4 must be a multiple of kv_num_heads 3"});
  expect_error(model(0, 2), in, {"num_heads (0) and kv_num_heads (2) must be given and positive"});
  expect_error(model(4, 1), in, {"key float32[1,1,32] must be [batch, sequence, kv_num_heads * head_size] = [1,1,16]"});
  in[3].value = Tensor(DType::Float32, {1, 3, 8, 16});
  expect_error(model(4, 2), in, {"past_key float32[1,3,8,16] must be [batch, kv_num_heads, length, head_size] = [1,2,length,16]"});
  in = gqa_step(3, 8, 8, 1, {}, {});
  in[5].value = Tensor::from_vector<int64_t>({1}, {3});
  expect_error(model(4, 2), in, {"seqlens_k int64[1] must be int32 [batch] = [1]"});
  // A step after the prompt without a past.
  in = gqa_step(3, 8, 8, 1, {}, {});
  in[3].value = in[4].value = Tensor();
  expect_error(model(4, 2), in, {"a step after the prompt (sequence length 1 != total_sequence_length 8) needs past_key and past_value"});
}

TEST(ContribErrors, GqaSequenceLengthsOutOfRange) {
  // The CPU checks each sequence's length against the tensors; the GPU reads seqlens_k at run time and
  // flags the first one out of range: the run fails naming the node and the value.
  auto expect = [&](int64_t past, int64_t total, const std::string& cpu_message, const std::string& gpu_value) {
    std::vector<Operand> in = gqa_step(past, 8, total, 1, {}, {});
    const std::string model = model_of("GroupQueryAttention", in, {"output", "present_key", "present_value"},
                                       "com.microsoft", 1, gqa_attrs());
    const std::string cpu = error_of(model, in, "cpu");
    EXPECT_NE(cpu.find("node 'n0' (GroupQueryAttention): " + cpu_message), std::string::npos) << cpu;
    if (testing::skip_gpu()) return;
    const std::string gpu = error_of(model, in, "webgpu");
    EXPECT_NE(gpu.find("node 'n0' (GroupQueryAttention) on the GPU: an index is out of range (index " + gpu_value + ")"),
              std::string::npos) << gpu;
  };
  expect(8, 8, "seqlens_k[0] = 8 is out of range: the total length exceeds the present's 8 positions", "8");
  expect(-1, 8, "seqlens_k[0] = -1 is out of range: the total length (seqlens_k + 1) must be at least the sequence length 1", "-1");
  expect(9, 10, "seqlens_k[0] = 9 is out of range: the past (seqlens_k + 1 - sequence length) exceeds past_key's 8 positions", "9");
}

TEST(ContribErrors, GqaPositionIdsOutsideTheCaches) {
  // After the prompt, rotary positions come from position_ids: the CPU checks them against the caches,
  // the GPU reads them at run time and flags the first one outside.
  std::vector<Operand> in = gqa_step(3, 8, 8, 1, {}, {});
  in.push_back({"cos_cache", f32({8, 8})});
  in.push_back({"sin_cache", f32({8, 8})});
  in.push_back({"position_ids", Tensor::from_vector<int64_t>({1, 1}, {9})});
  const std::string model = model_of("GroupQueryAttention", in, {"output", "present_key", "present_value"}, "com.microsoft", 1,
                                     [](onnx::NodeProto& n) {
                                       testing::set_int(n, "num_heads", 4);
                                       testing::set_int(n, "kv_num_heads", 2);
                                       testing::set_int(n, "do_rotary", 1);
                                     });
  const std::string cpu = error_of(model, in, "cpu");
  EXPECT_NE(cpu.find("node 'n0' (GroupQueryAttention): position_ids value 9 at index 0 is out of range [0, 8)"), std::string::npos)
      << cpu;
  if (testing::skip_gpu()) return;
  const std::string gpu = error_of(model, in, "webgpu");
  EXPECT_NE(gpu.find("node 'n0' (GroupQueryAttention) on the GPU: an index is out of range (index 9)"), std::string::npos) << gpu;
}

// A decode loop over a static max-length KV buffer, captured: every step's presents are fed back as
// the next step's past (on the GPU), total_sequence_length stays the buffer's length and seqlens_k
// grows, so one recorded plan serves every step (replays). From the second step (the first with its past
// on the GPU) the presents are written in place in their pasts' buffer (runtime/resident.h): only the new
// row, no copy. Each step matches the CPU reference fed its own presents, and the copying path: a second
// GPU session fed the same pasts as host tensors, whose present writer copies the whole buffer.
// packed_rotary: Q, K and V packed in the query with rotary inside, as ONNX Runtime's model builder writes
// its decoders (the in-place writers and Q's rotation then run as one dispatch).
void static_buffer_loop(bool packed_rotary) {
  if (testing::skip_gpu()) GTEST_SKIP() << "no WebGPU device";
  const int64_t kBuffer = 12;
  const Tensor cos = f32({16, 8}, 51), sin = f32({16, 8}, 52);
  auto shaped = [&](std::vector<Operand> in, uint32_t seed) {
    if (!packed_rotary) return in;
    in[0] = {"query", f32({1, 1, 128}, seed)};  // (4 + 2 * 2) heads of 16
    in[1] = {"key", Tensor()};
    in[2] = {"value", Tensor()};
    in.push_back({"cos_cache", cos, true});
    in.push_back({"sin_cache", sin, true});
    return in;
  };
  std::vector<Operand> first = shaped(gqa_step(4, kBuffer, kBuffer, 1, {}, {}), 1);
  first[3].value = f32({1, 2, kBuffer, 16}, 7);
  first[4].value = f32({1, 2, kBuffer, 16}, 8);
  const std::string model = model_of("GroupQueryAttention", first, {"output", "present_key", "present_value"},
                                     "com.microsoft", 1, [&](onnx::NodeProto& n) {
                                       gqa_attrs()(n);
                                       if (packed_rotary) testing::set_int(n, "do_rotary", 1);
                                     });
  SessionOptions cpu_options;
  cpu_options.ep = "cpu";
  Session cpu = Session::from_bytes(model, cpu_options);
  SessionOptions o = testing::webgpu_options();
  o.int64.fail_loud = true;
  Session gpu = Session::from_bytes(model, o);
  Session copying = Session::from_bytes(model, o);
  Tensor pk = first[3].value, pv = first[4].value;
  std::vector<DeviceTensor> presents;
  for (int step = 0; step < 6; ++step) {
    std::vector<Operand> in = shaped(gqa_step(4 + step, kBuffer, kBuffer, 10 + 3 * uint32_t(step), pk, pv), 10 + 3 * uint32_t(step));
    std::vector<Tensor> want = cpu.run(testing::feeds_of(in));
    std::unordered_map<std::string, Tensor> host = testing::feeds_of(in);
    std::unordered_map<std::string, Tensor> copy_feeds = host;
    std::unordered_map<std::string, DeviceTensor> device;
    if (step > 0) {
      host.erase("past_key");
      host.erase("past_value");
      device = {{"past_key", presents[1]}, {"past_value", presents[2]}};
      copy_feeds["past_key"] = presents[1].to_host();  // the in-place loop's own pasts, through the host
      copy_feeds["past_value"] = presents[2].to_host();
    }
    std::vector<Tensor> copied = copying.run(copy_feeds);
    EXPECT_TRUE(copying.last_plan().appended_outputs.empty()) << "host pasts: no buffer kept resident";
    presents = gpu.run_on_device(host, device);
    const PlanReport& report = gpu.last_plan();
    for (size_t k = 0; k < 3; ++k) {
      const Tensor got = presents[k].to_host();
      auto c = runtime::compare_tensors(got, want[k], {1e-5, 1e-3});
      EXPECT_TRUE(c.passed) << "step " << step << " output " << k << ": " << c.message;
      auto same = runtime::compare_tensors(got, copied[k], {0, 0});
      EXPECT_TRUE(same.passed) << "step " << step << " output " << k << ", in place vs copying: " << same.message;
    }
    EXPECT_EQ(report.cpu_nodes, 0);
    if (step >= 1) {
      EXPECT_EQ(report.appended_outputs, (std::vector<std::string>{"present_key", "present_value"})) << "step " << step;
    }
    if (step >= 2) {
      EXPECT_TRUE(report.replayed) << "step " << step;
      EXPECT_EQ(report.appended_in_place, 2) << "step " << step << ": a past copied into its buffer";
      EXPECT_EQ(presents[1].storage(), device.at("past_key").storage()) << "the present is the past's buffer";
    }
    pk = want[1];
    pv = want[2];
  }
}

TEST(ContribGqa, StaticBufferDecodeLoopCaptured) { static_buffer_loop(false); }
TEST(ContribGqa, StaticBufferDecodeLoopCapturedPackedRotary) { static_buffer_loop(true); }

// A decode loop whose total_sequence_length is made from an attention mask's shape (Shape -> Gather ->
// Cast, as ONNX Runtime's model builder writes it) and grows by one position per step, over a past
// that grows as much (its present one position longer) or over a static buffer of 12 positions (the
// present as long as the past): the plan is refreshed for each new length, not planned anew.
void decode_loop_with_mask_total(bool static_buffer) {
  if (testing::skip_gpu()) GTEST_SKIP() << "no WebGPU device";
  testing::ModelBuilder b;
  b.input("query", DType::Float32, {1, 1, 64})
      .input("key", DType::Float32, {1, 1, 32})
      .input("value", DType::Float32, {1, 1, 32})
      .input("past_key", DType::Float32, {1, 2, -1, 16})
      .input("past_value", DType::Float32, {1, 2, -1, 16})
      .input("seqlens_k", DType::Int32, {1})
      .input("attention_mask", DType::Int64, {1, -1})
      .initializer("one", Tensor::from_vector<int64_t>({}, {1}))
      .output("output", DType::Float32)
      .output("present_key", DType::Float32)
      .output("present_value", DType::Float32);
  b.node("Shape", {"attention_mask"}, {"mask_shape"});
  b.node("Gather", {"mask_shape", "one"}, {"total64"});
  testing::ModelBuilder::attr(b.node("Cast", {"total64"}, {"total"}), "to", int64_t(DType::Int32));
  auto& n = b.node("GroupQueryAttention", {"query", "key", "value", "past_key", "past_value", "seqlens_k", "total"},
                   {"output", "present_key", "present_value"}, "gqa");
  n.set_domain("com.microsoft");
  testing::ModelBuilder::attr(n, "num_heads", 4);
  testing::ModelBuilder::attr(n, "kv_num_heads", 2);
  const std::string model = in_domain_import(b.bytes(), "com.microsoft");
  SessionOptions cpu_options;
  cpu_options.ep = "cpu";
  Session cpu = Session::from_bytes(model, cpu_options);
  SessionOptions o = testing::webgpu_options();
  o.int64.fail_loud = true;
  Session gpu = Session::from_bytes(model, o);
  const int64_t kBuffer = 12;
  Tensor pk = f32({1, 2, static_buffer ? kBuffer : 3, 16}, 5), pv = f32({1, 2, static_buffer ? kBuffer : 3, 16}, 6);
  std::vector<DeviceTensor> presents;
  for (int step = 0; step < 5; ++step) {
    const int64_t past = 3 + step;
    std::vector<Operand> in = gqa_step(past, static_buffer ? kBuffer : past, past + 1, 20 + 3 * uint32_t(step), pk, pv);
    in.pop_back();  // total_sequence_length comes from the mask
    in.push_back({"attention_mask", Tensor(DType::Int64, {1, past + 1})});
    std::vector<Tensor> want = cpu.run(testing::feeds_of(in));
    ASSERT_EQ(want[1].shape()[2], static_buffer ? kBuffer : past + 1);
    std::unordered_map<std::string, Tensor> host = testing::feeds_of(in);
    std::unordered_map<std::string, DeviceTensor> device;
    if (step > 0) {
      host.erase("past_key");
      host.erase("past_value");
      device = {{"past_key", presents[1]}, {"past_value", presents[2]}};
    }
    presents = gpu.run_on_device(host, device);
    for (size_t k = 0; k < 3; ++k) {
      auto c = runtime::compare_tensors(presents[k].to_host(), want[k], {1e-5, 1e-3});
      EXPECT_TRUE(c.passed) << "step " << step << " output " << k << ": " << c.message;
    }
    EXPECT_EQ(gpu.last_plan().cpu_nodes, 0);
    if (step > 1) {  // (step 1 is the first with its pasts on the GPU: a family of its own)
      EXPECT_TRUE(gpu.last_plan().refreshed) << "step " << step;
    }
    pk = want[1];
    pv = want[2];
  }
}

// total_sequence_length computed on the GPU (seqlens_k + 1 here; ONNX Runtime's builder derives it from
// the attention mask for graph capture): the kernel reads it at run time, the present is the static
// buffer (12 positions) and whether a run is the prompt is decided per run. Decode steps with rotary, a
// prompt of 3 tokens over the buffer (S == total: no past read) and a decode step after it match the CPU
// reference, with every node on the GPU; a total beyond the buffer is the GPU's error naming the node.
TEST(ContribGqa, TotalComputedOnTheGpu) {
  if (testing::skip_gpu()) GTEST_SKIP() << "no WebGPU device";
  const int64_t kBuffer = 12;
  testing::ModelBuilder b;
  b.input("query", DType::Float32, {1, -1, 64})
      .input("key", DType::Float32, {1, -1, 32})
      .input("value", DType::Float32, {1, -1, 32})
      .input("past_key", DType::Float32, {1, 2, kBuffer, 16})
      .input("past_value", DType::Float32, {1, 2, kBuffer, 16})
      .input("seqlens_k", DType::Int32, {1})
      .initializer("one", Tensor::from_vector<int32_t>({1}, {1}))
      .initializer("cos_cache", f32({16, 8}, 41))
      .initializer("sin_cache", f32({16, 8}, 42))
      .output("output", DType::Float32)
      .output("present_key", DType::Float32)
      .output("present_value", DType::Float32);
  b.node("Add", {"seqlens_k", "one"}, {"total"});
  auto& n = b.node("GroupQueryAttention",
                   {"query", "key", "value", "past_key", "past_value", "seqlens_k", "total", "cos_cache", "sin_cache"},
                   {"output", "present_key", "present_value"}, "gqa");
  n.set_domain("com.microsoft");
  testing::ModelBuilder::attr(n, "num_heads", 4);
  testing::ModelBuilder::attr(n, "kv_num_heads", 2);
  testing::ModelBuilder::attr(n, "do_rotary", 1);
  const std::string model = in_domain_import(b.bytes(), "com.microsoft");
  SessionOptions cpu_options;
  cpu_options.ep = "cpu";
  Session cpu = Session::from_bytes(model, cpu_options);
  SessionOptions o = testing::webgpu_options();
  o.int64.fail_loud = true;
  Session gpu = Session::from_bytes(model, o);
  auto step = [&](int64_t seq, int64_t seqlens, const Tensor& pk, const Tensor& pv, uint32_t seed) {
    return std::vector<Operand>{{"query", f32({1, seq, 64}, seed)},
                                {"key", f32({1, seq, 32}, seed + 1)},
                                {"value", f32({1, seq, 32}, seed + 2)},
                                {"past_key", pk},
                                {"past_value", pv},
                                {"seqlens_k", Tensor::from_vector<int32_t>({1}, {int32_t(seqlens)})}};
  };
  auto check = [&](const std::vector<Operand>& in, const std::string& what) -> std::vector<Tensor> {
    std::vector<Tensor> want = cpu.run(testing::feeds_of(in));
    std::vector<Tensor> got = gpu.run(testing::feeds_of(in));
    EXPECT_EQ(want[1].shape(), (Shape{1, 2, kBuffer, 16})) << what;
    for (size_t k = 0; k < 3; ++k) {
      auto c = runtime::compare_tensors(got[k], want[k], {1e-5, 1e-3});
      EXPECT_TRUE(c.passed) << what << " output " << k << ": " << c.message;
    }
    EXPECT_EQ(gpu.last_plan().cpu_nodes, 0) << what;
    return want;
  };
  // Decode steps after a past of 4..6 positions (the buffer's rows past them random: not read).
  Tensor pk = f32({1, 2, kBuffer, 16}, 7), pv = f32({1, 2, kBuffer, 16}, 8);
  for (int64_t past = 4; past < 7; ++past) check(step(1, past, pk, pv, uint32_t(10 * past)), "decode after " + std::to_string(past));
  // The prompt: 3 tokens, total 3 == S; then one step after it, over the prompt's presents.
  std::vector<Tensor> prompt = check(step(3, 2, pk, pv, 100), "prompt");
  check(step(1, 3, prompt[1], prompt[2], 200), "decode after the prompt");
  // A total beyond the buffer: the CPU makes a longer present, the GPU (whose present is the buffer) refuses.
  std::vector<Operand> beyond = step(1, kBuffer, pk, pv, 300);
  const std::string e = error_of(model, beyond, "webgpu");
  EXPECT_NE(e.find("node 'gqa' (GroupQueryAttention) on the GPU: an index is out of range (index 12)"), std::string::npos) << e;
}

TEST(ContribGqa, GrowingPastDecodeLoopRefreshed) { decode_loop_with_mask_total(false); }
TEST(ContribGqa, StaticBufferGrowingTotalDecodeLoopRefreshed) { decode_loop_with_mask_total(true); }


// ---- ai.onnx.ml (tests/data/ml): CPU kernels only --------------------------------------------------------

const std::string kMlCases = std::string(ONNXGPU_SOURCE_DIR) + "/tests/data/ml/";

class MlOrt : public ::testing::TestWithParam<std::string> {};

TEST_P(MlOrt, CpuReferenceMatchesOnnxRuntime) {
  StoredCase c = load_from(kMlCases, GetParam());
  SessionOptions o;
  o.ep = "cpu";
  expect_close(Session(c.model, o).run(c.feeds), c.want, GetParam() + " (cpu)");
}

// In a WebGPU session the node falls back alone: it runs on the CPU between captured segments (here the
// whole model), recorded and replayed like any other; fail-loud refuses it, naming the node.
TEST_P(MlOrt, WebGpuSessionRunsTheNodeOnTheCpu) {
  StoredCase c = load_from(kMlCases, GetParam());
  std::unique_ptr<Session> gpu;
  try {
    gpu = std::make_unique<Session>(c.model, testing::webgpu_options());
  } catch (const std::exception& e) {
    if (testing::skip_gpu()) GTEST_SKIP() << "no WebGPU session: " << e.what();
    FAIL() << "cannot create a WebGPU session: " << e.what();
  }
  expect_close(gpu->run(c.feeds), c.want, GetParam() + " (webgpu, recorded)");
  EXPECT_EQ(gpu->last_plan().cpu_nodes, 1);
  expect_close(gpu->run(c.feeds), c.want, GetParam() + " (webgpu, replayed)");
  SessionOptions loud = testing::webgpu_options();
  loud.int64.fail_loud = true;
  try {
    Session(c.model, loud).run(c.feeds);
    ADD_FAILURE() << "fail-loud ran a CPU-only node";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("node 'node'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot run on the GPU"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Ml, MlOrt, ::testing::ValuesIn(case_names(kMlCases)),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// A data set without expected outputs fails: it would pass whatever the model computed.
TEST(MlErrors, ADataSetWithoutOutputsFailsTheConformanceRun) {
  const fs::path dir = fs::temp_directory_path() / "onnxgpu_no_outputs" / "case";
  fs::remove_all(dir.parent_path());
  fs::create_directories(dir / "test_data_set_0");
  const fs::path from = kMlCases + "ml_binarizer";
  fs::copy_file(from / "model.onnx", dir / "model.onnx");
  fs::copy_file(from / "test_data_set_0" / "input_0.pb", dir / "test_data_set_0" / "input_0.pb");
  runtime::ConformanceOptions o;
  o.session.ep = "cpu";
  runtime::ConformanceTest t = runtime::run_conformance_test(dir.string(), o);
  EXPECT_EQ(t.status, "failed");
  EXPECT_NE(t.detail.find("no output_*.pb to compare with"), std::string::npos) << t.detail;
  fs::copy_file(from / "test_data_set_0" / "output_0.pb", dir / "test_data_set_0" / "output_0.pb");
  EXPECT_EQ(runtime::run_conformance_test(dir.string(), o).status, "passed");
  fs::remove_all(dir.parent_path());
}

void set_strings(onnx::NodeProto& n, const std::string& name, const std::vector<std::string>& v) {
  auto* a = testing::new_attr(n, name, onnx::AttributeProto::STRINGS);
  for (const auto& x : v) a->add_strings(x);
}

// A TreeEnsembleRegressor of one tree: node 0 (feature `feature` <= 0.5) to leaves 1 and 2, each edited by `edit`.
std::string tree_model(const std::vector<Operand>& in, int64_t feature, const testing::Attrs& edit = {}) {
  return model_of("TreeEnsembleRegressor", in, {"Y"}, "ai.onnx.ml", 1, [&](onnx::NodeProto& n) {
    testing::set_ints(n, "nodes_treeids", {0, 0, 0});
    testing::set_ints(n, "nodes_nodeids", {0, 1, 2});
    testing::set_ints(n, "nodes_featureids", {feature, 0, 0});
    set_strings(n, "nodes_modes", {"BRANCH_LEQ", "LEAF", "LEAF"});
    testing::set_floats(n, "nodes_values", {0.5f, 0, 0});
    testing::set_ints(n, "nodes_truenodeids", {1, 0, 0});
    testing::set_ints(n, "nodes_falsenodeids", {2, 0, 0});
    testing::set_ints(n, "target_treeids", {0, 0});
    testing::set_ints(n, "target_nodeids", {1, 2});
    testing::set_ints(n, "target_ids", {0, 0});
    testing::set_floats(n, "target_weights", {1.0f, 2.0f});
    testing::set_int(n, "n_targets", 1);
    if (edit) edit(n);
  });
}

void replace_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  for (auto& a : *n.mutable_attribute())
    if (a.name() == name) {
      a.clear_ints();
      for (int64_t x : v) a.add_ints(x);
    }
}

TEST(MlErrors, TreesNameTheNodeAndWhatIsWrong) {
  std::vector<Operand> in{{"X", f32({2, 3})}};
  ASSERT_EQ(error_of(tree_model(in, 2), in, "cpu"), "");
  expect_error(tree_model(in, 3), in, {"node 'n0' (TreeEnsembleRegressor)", "a node reads feature 3, but input 'X' has 3 per row"});
  expect_error(tree_model(in, 0, [](onnx::NodeProto& n) { replace_ints(n, "nodes_falsenodeids", {7, 0, 0}); }), in,
               {"node 'n0' (TreeEnsembleRegressor)", "node 0 of tree 0 has child 7, which the tree does not have"});
  expect_error(tree_model(in, 0, [](onnx::NodeProto& n) { replace_ints(n, "target_ids", {0, 5}); }), in,
               {"a leaf's target id 5 is outside [0, n_targets = 1)"});
  expect_error(tree_model(in, 0, [](onnx::NodeProto& n) { replace_ints(n, "target_nodeids", {1, 0}); }), in,
               {"a target weight is given to node 0 of tree 0, which is not a leaf"});
  expect_error(tree_model(in, 0, [](onnx::NodeProto& n) {
                 for (auto& a : *n.mutable_attribute())
                   if (a.name() == "nodes_modes") a.set_strings(0, "BRANCH_XX");
               }), in, {"attribute 'nodes_modes' has 'BRANCH_XX'"});
  // Two roots in one tree: node 2 is no node's child once node 0's false branch is node 1 too.
  expect_error(tree_model(in, 0, [](onnx::NodeProto& n) { replace_ints(n, "nodes_falsenodeids", {1, 0, 0}); }), in,
               {"tree 0 has 2 nodes that are no node's child, expected one root"});
}

TEST(MlErrors, TreeEnsembleCycleAndOtherOps) {
  std::vector<Operand> in{{"X", f32({2, 3})}};
  // TreeEnsemble (opset 5): node 0's true branch is node 0.
  std::string v5 = model_of("TreeEnsemble", in, {"Y"}, "ai.onnx.ml", 5, [](onnx::NodeProto& n) {
    testing::set_ints(n, "nodes_featureids", {0});
    auto* m = testing::new_attr(n, "nodes_modes", onnx::AttributeProto::TENSOR)->mutable_t();
    m->set_data_type(onnx::TensorProto::UINT8);
    m->add_dims(1);
    m->set_raw_data(std::string(1, '\0'));
    auto* sp = testing::new_attr(n, "nodes_splits", onnx::AttributeProto::TENSOR)->mutable_t();
    sp->set_data_type(onnx::TensorProto::FLOAT);
    sp->add_dims(1);
    sp->add_float_data(0.5f);
    testing::set_ints(n, "nodes_truenodeids", {0});
    testing::set_ints(n, "nodes_trueleafs", {0});
    testing::set_ints(n, "nodes_falsenodeids", {0});
    testing::set_ints(n, "nodes_falseleafs", {1});
    testing::set_ints(n, "leaf_targetids", {0});
    auto* w = testing::new_attr(n, "leaf_weights", onnx::AttributeProto::TENSOR)->mutable_t();
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(1);
    w->add_float_data(1.0f);
    testing::set_int(n, "n_targets", 1);
    testing::set_ints(n, "tree_roots", {0});
  }, 21);
  expect_error(v5, in, {"node 'n0' (TreeEnsemble)", "the trees' nodes form a cycle"});

  std::vector<Operand> afe{{"X", f32({2, 3})}, {"Y", Tensor::from_vector<int64_t>({2}, {0, 5})}};
  expect_error(model_of("ArrayFeatureExtractor", afe, {"Z"}, "ai.onnx.ml"), afe,
               {"node 'n0' (ArrayFeatureExtractor)", "input 'Y' holds index 5, outside [0, 3) of X's last axis"});
  expect_error(model_of("Scaler", in, {"Y"}, "ai.onnx.ml", 1, [](onnx::NodeProto& n) {
                 testing::set_floats(n, "offset", {1, 2});
                 testing::set_floats(n, "scale", {1});
               }), in, {"node 'n0' (Scaler)", "attribute 'offset' has 2 values, expected 1 or one per feature (3)"});
  expect_error(model_of("LinearRegressor", in, {"Y"}, "ai.onnx.ml", 1, [](onnx::NodeProto& n) {
                 testing::set_floats(n, "coefficients", {1, 2});
               }), in, {"node 'n0' (LinearRegressor)", "attribute 'coefficients' has 2 values, expected targets x features = 1 x 3"});
  // Classifiers: string labels (out of scope), too few labels, intercepts that do not match them.
  auto classifier = [&](const testing::Attrs& labels) {
    return model_of("LinearClassifier", in, {"Y", "Z"}, "ai.onnx.ml", 1, [&](onnx::NodeProto& n) {
      testing::set_floats(n, "coefficients", {1, 2, 3, 4, 5, 6});
      testing::set_floats(n, "intercepts", {0, 1});
      labels(n);
    });
  };
  expect_error(classifier([](onnx::NodeProto& n) { set_strings(n, "classlabels_strings", {"a", "b"}); }), in,
               {"node 'n0' (LinearClassifier)", "string labels are out of scope"});
  expect_error(classifier([](onnx::NodeProto& n) { testing::set_ints(n, "classlabels_ints", {4}); }), in,
               {"attribute 'classlabels_ints' has 1 labels, expected two or more"});
  expect_error(classifier([](onnx::NodeProto& n) { testing::set_ints(n, "classlabels_ints", {4, 5, 6}); }), in,
               {"there are 2 intercepts but 3 class labels"});
  // Imputer without values; OneHotEncoder meeting no category with zeros 0; LabelEncoder keys of another type.
  expect_error(model_of("Imputer", in, {"Y"}, "ai.onnx.ml"), in,
               {"node 'n0' (Imputer)", "attribute 'imputed_value_floats' is missing or empty, for input 'X' of float32[2,3]"});
  std::vector<Operand> cats{{"X", Tensor::from_vector<int64_t>({3}, {1, 4, 2})}};
  expect_error(model_of("OneHotEncoder", cats, {"Y"}, "ai.onnx.ml", 1, [](onnx::NodeProto& n) {
                 testing::set_ints(n, "cats_int64s", {1, 2});
                 testing::set_int(n, "zeros", 0);
               }), cats, {"node 'n0' (OneHotEncoder)", "input 'X' holds 4.000000, which is no category, and attribute 'zeros' is 0"});
  expect_error(model_of("LabelEncoder", in, {"Y"}, "ai.onnx.ml", 2, [](onnx::NodeProto& n) {
                 testing::set_ints(n, "keys_int64s", {1, 2});
                 testing::set_floats(n, "values_floats", {0.5f, 1.5f});
               }), in, {"node 'n0' (LabelEncoder)", "input 'X' is float32[2,3], expected the keys' type int64"});
  std::vector<Operand> r3{{"X", f32({2, 3, 4})}};
  expect_error(model_of("Normalizer", r3, {"Y"}, "ai.onnx.ml"), r3, {"node 'n0' (Normalizer)", "input 'X' must be [N, F] or [F], got float32[2,3,4]"});
}

// SVMClassifier: attribute sizes against the classes, vectors and features, and the case without a reference.
TEST(MlErrors, SvmClassifier) {
  std::vector<Operand> in{{"X", f32({2, 3})}};
  // Three classes, one support vector each (3 x 3 values), coefficients (classes - 1) x vectors, a rho per pair.
  auto svc = [&](const testing::Attrs& edit, const std::string& kernel = "RBF") {
    return model_of("SVMClassifier", in, {"Y", "Z"}, "ai.onnx.ml", 1, [&](onnx::NodeProto& n) {
      testing::set_ints(n, "classlabels_ints", {0, 1, 2});
      testing::set_ints(n, "vectors_per_class", {1, 1, 1});
      testing::set_floats(n, "support_vectors", {1, 0, 0, 0, 1, 0, 0, 0, 1});
      testing::set_floats(n, "coefficients", {1, -1, 0.5f, 1, -0.5f, 1});
      testing::set_floats(n, "rho", {0.1f, 0.2f, 0.3f});
      testing::set_floats(n, "kernel_params", {0.5f, 0, 0});
      testing::set_string(n, "kernel_type", kernel);
      if (edit) edit(n);
    });
  };
  ASSERT_EQ(error_of(svc({}), in, "cpu"), "");
  expect_error(svc([](onnx::NodeProto& n) { replace_ints(n, "vectors_per_class", {1, 2}); }), in,
               {"node 'n0' (SVMClassifier)", "attribute 'vectors_per_class' has 2 counts for 3 classes"});
  expect_error(svc([](onnx::NodeProto& n) { replace_ints(n, "vectors_per_class", {1, 1, 2}); }), in,
               {"attribute 'support_vectors' has 9 values, expected vectors x features = 4 x 3"});
  expect_error(svc([](onnx::NodeProto& n) {
                 for (auto& a : *n.mutable_attribute())
                   if (a.name() == "rho") a.clear_floats(), a.add_floats(0.1f);
               }), in,
               {"attribute 'rho' has 1 values, expected one per pair of classes (3)"});
  expect_error(svc([](onnx::NodeProto& n) {
                 testing::set_floats(n, "prob_a", {-1, -1, -1});
                 testing::set_floats(n, "prob_b", {0});
               }), in, {"attributes 'prob_a' and 'prob_b' have 3 and 1 values, expected as many"});
  expect_error(svc({}, "CUBIC"), in,
               {"attribute 'kernel_type' is 'CUBIC', expected LINEAR, POLY, RBF or SIGMOID"});
  // Two classes' single decision under PROBIT: ONNX Runtime leaves the second score unwritten.
  expect_error(model_of("SVMClassifier", in, {"Y", "Z"}, "ai.onnx.ml", 1, [](onnx::NodeProto& n) {
                 testing::set_ints(n, "classlabels_ints", {0, 1});
                 testing::set_ints(n, "vectors_per_class", {1, 1});
                 testing::set_floats(n, "support_vectors", {1, 0, 0, 0, 1, 0});
                 testing::set_floats(n, "coefficients", {1, -1});
                 testing::set_floats(n, "rho", {0.1f});
                 testing::set_string(n, "post_transform", "PROBIT");
               }), in, {"node 'n0' (SVMClassifier)", "post_transform PROBIT of two classes' single decision"});
  // The linear form: coefficients one row per class.
  expect_error(model_of("SVMClassifier", in, {"Y", "Z"}, "ai.onnx.ml", 1, [](onnx::NodeProto& n) {
                 testing::set_ints(n, "classlabels_ints", {0, 1, 2});
                 testing::set_floats(n, "coefficients", {1, 2, 3, 4});
                 testing::set_floats(n, "rho", {0});
               }), in, {"attribute 'coefficients' has 4 values, expected classes x features = 3 x 3"});
}

}  // namespace
}  // namespace onnxgpu
