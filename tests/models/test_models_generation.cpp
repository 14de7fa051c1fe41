// Generation on WebGPU with capture: a decode loop whose past grows by one position each step, and
// prompts of several lengths, served by one recorded plan refreshed for each step's sizes (a shape
// family: runtime/planner.h). Each step's outputs are checked against an uncaptured run of the same
// inputs, and the plan report must say that the steps replayed the recording.
// Run by ctest (models_generation), which generates the models and sets ONNXGPU_MODELS_DIR.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "onnxgpu/error.h"
#include "onnxgpu/session.h"
#include "runtime/compare.h"

namespace fs = std::filesystem;
using namespace onnxgpu;

namespace {

const runtime::Tolerance kTol{/*rtol=*/1e-3, /*atol=*/1e-4};

fs::path model_path(const std::string& model) {
  const char* d = std::getenv("ONNXGPU_MODELS_DIR");
  if (!d) {
    ADD_FAILURE() << "ONNXGPU_MODELS_DIR is not set: run this through ctest (ctest -R models_generation)";
    return {};
  }
  fs::path p = fs::path(d) / model / "model.onnx";
  if (!fs::exists(p)) ADD_FAILURE() << p << " does not exist (did models_generate run?)";
  return fs::exists(p) ? p : fs::path();
}

SessionOptions gpu(bool capture) {
  SessionOptions o;
  o.ep = "webgpu";
  o.capture = capture;
  return o;
}

// The decode step's past inputs (past_*) and the presents that feed them (present_*), by position.
struct KvNames {
  std::vector<std::string> past, present;
};

KvNames kv_names(const Session& s) {
  KvNames kv;
  for (const auto& i : s.inputs())
    if (i.name.rfind("past", 0) == 0) kv.past.push_back(i.name);
  for (const auto& o : s.outputs())
    if (o.name.rfind("present", 0) == 0) kv.present.push_back(o.name);
  return kv;
}

// A past's shape [batch, heads, length, head_dim] from the declared dims (symbolic ones: batch 1).
Shape past_shape(const Session& s, const std::string& name, int64_t length) {
  for (const auto& i : s.inputs())
    if (i.name == name) {
      Shape shape;
      for (size_t d = 0; d < i.shape.size(); ++d) shape.push_back(d == 2 ? length : std::max<int64_t>(i.shape[d], 1));
      return shape;
    }
  ADD_FAILURE() << "no input " << name;
  return {};
}

size_t output_index(const Session& s, const std::string& name) {
  for (size_t k = 0; k < s.outputs().size(); ++k)
    if (s.outputs()[k].name == name) return k;
  ADD_FAILURE() << "no output " << name;
  return 0;
}

int64_t argmax_last_row(const Tensor& logits) {
  const float* v = logits.data<float>();
  const int64_t vocab = logits.shape().back();
  const float* row = v + (logits.numel() - vocab);
  return int64_t(std::max_element(row, row + vocab) - row);
}

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

// 40 greedy decode steps with the KV cache kept on the GPU (presents fed back as device tensors):
// every step's outputs equal an uncaptured run's on the same inputs, and after the first steps
// every step replays the one recorded plan, refreshed for its past length, with the KV cache appended
// in place (runtime/resident.h).
// gpt2_kv_tiny: GPT-2's causal mask sliced by Shape arithmetic; llama_kv_tiny: RMSNorm, rotary
// position embedding from position_ids, grouped-query attention (K and V expanded), SiLU MLP.
class ModelsGeneration : public testing::TestWithParam<std::string> {};

TEST_P(ModelsGeneration, DecodeLoopWithGrowingPastReplaysOnePlan) {
  fs::path path = model_path(GetParam());
  if (path.empty()) return;
  try {
    Session captured(path.string(), gpu(true));
    Session reference(path.string(), gpu(false));
    const KvNames kv = kv_names(captured);
    ASSERT_FALSE(kv.past.empty());
    ASSERT_EQ(kv.past.size(), kv.present.size());
    const size_t logits_at = output_index(captured, "logits");
    const int64_t p0 = 3;
    std::unordered_map<std::string, Tensor> past_host;  // the reference's past, on the host
    std::unordered_map<std::string, DeviceTensor> past_gpu;
    for (const auto& name : kv.past) past_host[name] = Tensor(DType::Float32, past_shape(captured, name, p0));
    int64_t token = 7;
    int replayed = 0, refreshed = 0, in_place = 0, ahead = 0;
    for (int step = 0; step < 40; ++step) {
      SCOPED_TRACE("decode step " + std::to_string(step));
      const int64_t position = p0 + step;
      std::unordered_map<std::string, Tensor> feeds{
          {"input_ids", Tensor::from_vector<int64_t>({1, 1}, {token})},
          {"position_ids", Tensor::from_vector<int64_t>({1, 1}, {position})}};
      std::unordered_map<std::string, Tensor> ref_feeds = feeds;
      for (const auto& [n, t] : past_host) ref_feeds[n] = t;
      if (step == 0)
        for (const auto& [n, t] : past_host) feeds[n] = t;  // the first past comes from the host
      std::vector<DeviceTensor> outs = captured.run_on_device(feeds, past_gpu);
      std::vector<Tensor> want = reference.run(ref_feeds);
      PlanReport report = captured.last_plan();
      replayed += report.replayed;
      refreshed += report.refreshed;
      ahead += report.refreshed_ahead;  // during the step before's wait (runtime/refresh_ahead.h)
      // Every present a KV cache appended in place, its past found there (no copy) on most steps.
      if (step >= 1) {
        EXPECT_EQ(report.appended_outputs.size(), kv.present.size());
      }
      // ... and the new keys and values written there by the kernels computing them: no Concat copies.
      if (step >= 1) {
        EXPECT_EQ(report.rows_written_in_place.size(), kv.present.size());
      }
      in_place += report.appended_in_place == int(kv.present.size());
      ASSERT_EQ(outs.size(), want.size());
      for (size_t k = 0; k < outs.size(); ++k) {
        auto c = runtime::compare_tensors(outs[k].to_host(), want[k], kTol);
        ASSERT_TRUE(c.passed) << "output '" << captured.outputs()[k].name << "': " << c.message;
      }
      if (step >= 2) {
        EXPECT_TRUE(report.replayed && report.refreshed) << "signature " << report.signature;
        EXPECT_TRUE(has(report.symbolic_dims, kv.past[0] + "[2]")) << "past length not reported as symbolic";
      }
      token = argmax_last_row(want[logits_at]);
      past_gpu.clear();
      past_host.clear();
      for (size_t i = 0; i < kv.past.size(); ++i) {
        const size_t at = output_index(captured, kv.present[i]);
        ASSERT_EQ(outs[at].shape()[2], position + 1);
        past_gpu[kv.past[i]] = outs[at];
        past_host[kv.past[i]] = want[at];
      }
    }
    EXPECT_GE(replayed, 38);
    EXPECT_GE(refreshed, 38);
    EXPECT_GE(ahead, 35) << "from the fourth step on, the past's growth is predicted";
    EXPECT_GE(in_place, 35) << "steps that outgrew the buffers copy; the others append in place";
    EXPECT_GT(captured.last_plan().capacity_growths, 0) << "the past outgrew its first buffers: they regrow";
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

// A prompt of three lengths through one session: the second and third refresh the first's plan.
TEST_P(ModelsGeneration, PrefillOfThreeLengthsReplaysOnePlan) {
  fs::path path = model_path(GetParam());
  if (path.empty()) return;
  try {
    Session captured(path.string(), gpu(true));
    Session reference(path.string(), gpu(false));
    const KvNames kv = kv_names(captured);
    int n = 0;
    // (A prompt of at most 4 tokens takes the one-row products and splits its attention's keys as a
    // decode step does: another plan.)
    for (int64_t length : {5, 9, 7, 9}) {
      SCOPED_TRACE("prompt of " + std::to_string(length));
      std::vector<int64_t> ids, positions;
      for (int64_t i = 0; i < length; ++i) {
        ids.push_back((i * 37 + 11) % 50);
        positions.push_back(i);
      }
      std::unordered_map<std::string, Tensor> feeds{
          {"input_ids", Tensor::from_vector<int64_t>({1, length}, ids)},
          {"position_ids", Tensor::from_vector<int64_t>({1, length}, positions)}};
      for (const auto& name : kv.past) feeds[name] = Tensor(DType::Float32, past_shape(captured, name, 0));
      std::vector<Tensor> got = captured.run(feeds), want = reference.run(feeds);
      for (size_t k = 0; k < got.size(); ++k) {
        auto c = runtime::compare_tensors(got[k], want[k], kTol);
        EXPECT_TRUE(c.passed) << "output '" << captured.outputs()[k].name << "': " << c.message;
      }
      PlanReport report = captured.last_plan();
      if (n++ > 0) {
        EXPECT_TRUE(report.replayed && report.refreshed) << report.refresh_refused;
      }
    }
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(DecodeSteps, ModelsGeneration, testing::Values("gpt2_kv_tiny", "llama_kv_tiny"));

// A GenAI-style decoder (bench/make_genai.py --size tiny: ONNX Runtime's model builder's graph for an int4
// Llama with WebGPU graph capture: MatMulNBits, GroupQueryAttention with rotary inside over a static KV
// buffer, the lengths derived from the attention mask on the GPU, Skip/SimplifiedLayerNormalization), 20
// greedy steps as onnxruntime-genai runs it: the pasts are [1, kv_heads, 64, head_size] buffers (zeros at
// first), every step feeds the previous presents back on the GPU and a mask [1, 64] with ones for the
// first past + 1 positions. Each step's outputs equal the CPU reference's fed its own presents; every
// node runs on the GPU; from the third step on every step replays one recording, with each present
// written in place in its past's buffer (runtime/resident.h).
TEST(ModelsGenerationGenai, StaticBufferDecodeLoopReplaysInPlace) {
  fs::path path = model_path("genai_tiny");
  if (path.empty()) return;
  try {
    SessionOptions o = gpu(true);
    o.int64.fail_loud = true;
    Session captured(path.string(), o);
    SessionOptions c;
    c.ep = "cpu";
    Session reference(path.string(), c);
    const KvNames kv = kv_names(captured);
    ASSERT_EQ(kv.past.size(), 4u);
    ASSERT_EQ(kv.present.size(), 4u);
    const size_t logits_at = output_index(captured, "logits");
    const int64_t kBuffer = 64, p0 = 3;
    std::unordered_map<std::string, Tensor> past_host;
    std::unordered_map<std::string, DeviceTensor> past_gpu;
    for (const auto& name : kv.past) past_host[name] = Tensor(DType::Float32, past_shape(captured, name, kBuffer));
    int64_t token = 5;
    for (int step = 0; step < 20; ++step) {
      SCOPED_TRACE("decode step " + std::to_string(step));
      std::vector<int64_t> mask(size_t(kBuffer), 0);
      for (int64_t i = 0; i < p0 + step + 1; ++i) mask[size_t(i)] = 1;
      std::unordered_map<std::string, Tensor> feeds{{"input_ids", Tensor::from_vector<int64_t>({1, 1}, {token})},
                                                    {"attention_mask", Tensor::from_vector<int64_t>({1, kBuffer}, mask)}};
      std::unordered_map<std::string, Tensor> ref_feeds = feeds;
      for (const auto& [n, t] : past_host) ref_feeds[n] = t;
      if (step == 0)
        for (const auto& [n, t] : past_host) feeds[n] = t;  // the first past comes from the host
      std::vector<DeviceTensor> outs = captured.run_on_device(feeds, past_gpu);
      std::vector<Tensor> want = reference.run(ref_feeds);
      const PlanReport& report = captured.last_plan();
      EXPECT_EQ(report.cpu_nodes, 0);
      ASSERT_EQ(outs.size(), want.size());
      for (size_t k = 0; k < outs.size(); ++k) {
        auto cmp = runtime::compare_tensors(outs[k].to_host(), want[k], kTol);
        ASSERT_TRUE(cmp.passed) << "output '" << captured.outputs()[k].name << "': " << cmp.message;
      }
      if (step >= 2) {
        EXPECT_TRUE(report.replayed) << "signature " << report.signature;
        EXPECT_EQ(report.appended_outputs.size(), kv.present.size());
        EXPECT_EQ(report.appended_in_place, int(kv.present.size())) << "a present copied instead of written in place";
      }
      token = argmax_last_row(want[logits_at]);
      EXPECT_EQ(token, argmax_last_row(outs[logits_at].to_host()));
      past_gpu.clear();
      past_host.clear();
      for (size_t i = 0; i < kv.past.size(); ++i) {
        const size_t at = output_index(captured, kv.present[i]);
        ASSERT_EQ(outs[at].shape()[2], kBuffer);
        past_gpu[kv.past[i]] = outs[at];
        past_host[kv.past[i]] = want[at];
      }
    }
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

namespace {
// A model's session with the normalization prologues (runtime/fusion.h), one without
// ($ONNXGPU_NORM_PROLOGUE=0, read when a session is made) and the CPU reference.
struct PrologueSessions {
  Session fused, apart, reference;
  explicit PrologueSessions(const fs::path& path)
      : fused(path.string(), options()), apart(without(path)), reference(path.string(), cpu_options()) {}
  // Runs all three on the feeds: both GPU sessions' outputs must equal the reference's, returned.
  std::vector<Tensor> run_all(const std::unordered_map<std::string, Tensor>& feeds) {
    std::vector<Tensor> want = reference.run(feeds), got = fused.run(feeds), got_apart = apart.run(feeds);
    EXPECT_EQ(got.size(), want.size());
    EXPECT_EQ(got_apart.size(), want.size());
    for (size_t k = 0; k < want.size() && k < got.size() && k < got_apart.size(); ++k) {
      auto cmp = runtime::compare_tensors(got[k], want[k], kTol);
      EXPECT_TRUE(cmp.passed) << "output '" << fused.outputs()[k].name << "': " << cmp.message;
      cmp = runtime::compare_tensors(got_apart[k], want[k], kTol);
      EXPECT_TRUE(cmp.passed) << "ONNXGPU_NORM_PROLOGUE=0: output '" << fused.outputs()[k].name << "': " << cmp.message;
    }
    return want;
  }

 private:
  static SessionOptions options() {
    SessionOptions o = gpu(true);
    o.int64.fail_loud = true;
    return o;
  }
  static SessionOptions cpu_options() {
    SessionOptions c;
    c.ep = "cpu";
    return c;
  }
  static Session without(const fs::path& path) {
    setenv("ONNXGPU_NORM_PROLOGUE", "0", 1);
    Session s(path.string(), options());
    unsetenv("ONNXGPU_NORM_PROLOGUE");
    return s;
  }
};
}  // namespace

// The GenAI-style decoder's row normalizations (per layer two, and the final one: 5 in the tiny one)
// run in the prologue of the MatMulNBits kernels that read them (runtime/fusion.h): a decode step takes
// 5 dispatches fewer than with $ONNXGPU_NORM_PROLOGUE=0, with the same outputs (each run against the
// CPU reference), the residual sums that the next normalizations read included. The steps run
// from a past of 3 in a static buffer of 64, the fed-back pasts from the host.
TEST(ModelsGenerationGenai, NormalizationsRunInTheProductsKernels) {
  fs::path path = model_path("genai_tiny");
  if (path.empty()) return;
  try {
    PrologueSessions sessions(path);
    Session &fused = sessions.fused, &apart = sessions.apart;
    const KvNames kv = kv_names(fused);
    const int64_t kBuffer = 64, p0 = 3;
    std::unordered_map<std::string, Tensor> feeds;
    for (const auto& name : kv.past) feeds[name] = Tensor(DType::Float32, past_shape(fused, name, kBuffer));
    int64_t token = 5;
    for (int step = 0; step < 3; ++step) {
      SCOPED_TRACE("decode step " + std::to_string(step));
      std::vector<int64_t> mask(size_t(kBuffer), 0);
      for (int64_t i = 0; i < p0 + step + 1; ++i) mask[size_t(i)] = 1;
      feeds["input_ids"] = Tensor::from_vector<int64_t>({1, 1}, {token});
      feeds["attention_mask"] = Tensor::from_vector<int64_t>({1, kBuffer}, mask);
      std::vector<Tensor> want = sessions.run_all(feeds);
      if (testing::Test::HasFailure()) return;  // (run_all names the output)
      EXPECT_EQ(fused.last_plan().cpu_nodes, 0);
      EXPECT_EQ(fused.last_plan().dispatches + 5, apart.last_plan().dispatches);
      token = argmax_last_row(want[output_index(fused, "logits")]);
      for (size_t i = 0; i < kv.past.size(); ++i) feeds[kv.past[i]] = want[output_index(fused, kv.present[i])];
    }
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

// GPT-2's LayerNormalizations (per layer ln_1 before the q, k, v product and its Split, ln_2 before the
// MLP's first product and GELU; ln_f before the tied lm head: 5 in the tiny one) run in the prologue of
// the one-row product kernels that read them (runtime/fusion.h): a prompt of 3 tokens and the decode
// steps after it take 5 dispatches fewer than with $ONNXGPU_NORM_PROLOGUE=0, with the same outputs
// (each run against the CPU reference); a prompt of 7 tokens (the tiled products) the same number.
TEST(ModelsGenerationGpt2, LayerNormsRunInTheProductsKernels) {
  fs::path path = model_path("gpt2_kv_tiny");
  if (path.empty()) return;
  try {
    PrologueSessions sessions(path);
    Session &fused = sessions.fused, &apart = sessions.apart;
    const KvNames kv = kv_names(fused);
    for (int64_t prompt : {7, 3}) {
      std::unordered_map<std::string, Tensor> feeds;
      for (const auto& name : kv.past) feeds[name] = Tensor(DType::Float32, past_shape(fused, name, 0));
      std::vector<int64_t> ids, positions;
      for (int64_t i = 0; i < prompt; ++i) {
        ids.push_back((i * 37 + 11) % 50);
        positions.push_back(i);
      }
      feeds["input_ids"] = Tensor::from_vector<int64_t>({1, prompt}, ids);
      feeds["position_ids"] = Tensor::from_vector<int64_t>({1, prompt}, positions);
      for (int step = 0; step < (prompt <= 4 ? 4 : 1); ++step) {
        SCOPED_TRACE("prompt of " + std::to_string(prompt) + ", step " + std::to_string(step));
        std::vector<Tensor> want = sessions.run_all(feeds);
        if (testing::Test::HasFailure()) return;  // (run_all names the output)
        EXPECT_EQ(fused.last_plan().cpu_nodes, 0);
        const int64_t rows = step == 0 ? prompt : 1;
        EXPECT_EQ(fused.last_plan().dispatches + (rows <= 4 ? 5 : 0), apart.last_plan().dispatches);
        const int64_t position = feeds.at("position_ids").data<int64_t>()[rows - 1] + 1;
        feeds["input_ids"] = Tensor::from_vector<int64_t>({1, 1}, {argmax_last_row(want[output_index(fused, "logits")])});
        feeds["position_ids"] = Tensor::from_vector<int64_t>({1, 1}, {position});
        for (size_t i = 0; i < kv.past.size(); ++i) feeds[kv.past[i]] = want[output_index(fused, kv.present[i])];
      }
    }
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}
