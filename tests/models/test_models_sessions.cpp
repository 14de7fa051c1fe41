// Runs every data set of each test model through ONE Session, on the CPU reference and on WebGPU with
// capture: the data sets have different shapes (gpt2_tiny: 1x7 then 2x16 tokens), so this checks that
// a session handles a new input shape after a first run, and going back to the first shape (a replay).
// Run by ctest (models_sessions), which generates the models first and sets ONNXGPU_MODELS_DIR;
// without it every test fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "loader/tensor_proto.h"
#include "onnxgpu/error.h"
#include "onnxgpu/session.h"
#include "runtime/compare.h"

namespace fs = std::filesystem;
using namespace onnxgpu;

namespace {

const runtime::Tolerance kTol{/*rtol=*/1e-3, /*atol=*/1e-4};

SessionOptions cpu_options() {
  SessionOptions o;
  o.ep = "cpu";
  return o;
}

SessionOptions gpu_options() {
  SessionOptions o;
  o.ep = "webgpu";
  o.capture = true;
  return o;
}

fs::path models_dir() {
  const char* d = std::getenv("ONNXGPU_MODELS_DIR");
  return d ? fs::path(d) : fs::path();
}

std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, fs::path>> r;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string f = e.path().filename().string();
    if (f.rfind(prefix, 0) == 0) r.emplace_back(std::atoi(f.c_str() + prefix.size()), e.path());
  }
  std::sort(r.begin(), r.end());
  std::vector<fs::path> out;
  for (auto& [k, p] : r) out.push_back(p);
  return out;
}

// Runs data set `set` through `session` and compares every output; failures name the set and output.
void run_data_set(Session& session, const fs::path& set, int runs = 1) {
  SCOPED_TRACE("data set " + set.string());
  std::unordered_map<std::string, Tensor> feeds;
  auto inputs = numbered(set, "input_");
  for (size_t k = 0; k < inputs.size(); ++k) {
    auto [name, t] = loader::read_tensor_pb(inputs[k].string());
    bool known = std::any_of(session.inputs().begin(), session.inputs().end(),
                             [&](const TensorInfo& i) { return i.name == name; });
    if (!known) {
      ASSERT_LT(k, session.inputs().size()) << inputs[k] << ": more input files than model inputs";
      name = session.inputs()[k].name;
    }
    feeds[name] = std::move(t);
  }
  auto expected = numbered(set, "output_");
  ASSERT_FALSE(expected.empty()) << "no output_K.pb in " << set;
  for (int run = 0; run < runs; ++run) {
    std::vector<Tensor> outs;
    try {
      outs = session.run(feeds);
    } catch (const Error& e) {
      FAIL() << "run " << run + 1 << " failed: " << e.what();
    }
    ASSERT_EQ(outs.size(), expected.size()) << "model outputs vs output_K.pb files";
    for (size_t k = 0; k < expected.size(); ++k) {
      Tensor want = loader::read_tensor_pb(expected[k].string()).second;
      auto c = runtime::compare_tensors(outs[k], want, kTol);
      EXPECT_TRUE(c.passed) << "run " << run + 1 << ", output " << k << " ('" << session.outputs()[k].name
                            << "'): " << c.message;
    }
  }
}

// The model's folder; fails the test (not skips) when the models were not generated.
fs::path model_dir(const std::string& model) {
  fs::path root = models_dir();
  if (root.empty()) {
    ADD_FAILURE() << "ONNXGPU_MODELS_DIR is not set: run this through ctest (ctest -R models_sessions), "
                     "or set it to the output folder of tests/models/make_models.py";
    return {};
  }
  fs::path dir = root / model;
  if (!fs::exists(dir / "model.onnx")) {
    ADD_FAILURE() << (dir / "model.onnx") << " does not exist (did models_generate run?)";
    return {};
  }
  return dir;
}

}  // namespace

// Two different sequence lengths in one process (and one session), then the first
// length again, so a cached plan for one shape must not leak into the other.
TEST(ModelsCpu, Gpt2TwoSequenceLengthsOneSession) {
  fs::path dir = model_dir("gpt2_tiny");
  if (dir.empty()) return;
  try {
    Session session((dir / "model.onnx").string(), cpu_options());
    run_data_set(session, dir / "test_data_set_0");  // 1 x 7 tokens
    run_data_set(session, dir / "test_data_set_1");  // 2 x 16 tokens
    run_data_set(session, dir / "test_data_set_0");
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

// Two sessions of the same model alive at once, each at its own length.
TEST(ModelsCpu, Gpt2TwoSessionsInterleaved) {
  fs::path dir = model_dir("gpt2_tiny");
  if (dir.empty()) return;
  try {
    Session a((dir / "model.onnx").string(), cpu_options());
    Session b((dir / "model.onnx").string(), cpu_options());
    run_data_set(a, dir / "test_data_set_0");
    run_data_set(b, dir / "test_data_set_1");
    run_data_set(a, dir / "test_data_set_0");
    run_data_set(b, dir / "test_data_set_1");
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

class ModelsCpuAllSets : public testing::TestWithParam<std::string> {};

// Every data set of the model, in order and then in reverse order, through one session.
TEST_P(ModelsCpuAllSets, OneSession) {
  fs::path dir = model_dir(GetParam());
  if (dir.empty()) return;
  auto sets = numbered(dir, "test_data_set_");
  ASSERT_FALSE(sets.empty()) << "no test_data_set_* in " << dir;
  try {
    Session session((dir / "model.onnx").string(), cpu_options());
    for (const auto& s : sets) run_data_set(session, s);
    for (auto it = sets.rbegin(); it != sets.rend(); ++it) run_data_set(session, *it);
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ModelsCpuAllSets,
                         testing::Values("gpt2_tiny", "bert_tiny", "int64_arith", "int64_sentinels",
                                         "int64_embedding", "mlp", "cnn_tiny"),
                         [](const testing::TestParamInfo<std::string>& p) { return p.param; });

// GPT-2 and BERT with dynamic batch and sequence, no dimension pinned, captured
// whole on the GPU (0 CPU nodes), matching torch over three runs (record + 2 replays) at two sequence
// lengths in one session, then the first length again (replayed from the signature cache).
class ModelsGpuWhole : public testing::TestWithParam<std::string> {};

TEST_P(ModelsGpuWhole, CapturedWholeOnTheGpuAtTwoLengths) {
  if (std::getenv("ONNXGPU_SKIP_GPU_TESTS")) GTEST_SKIP() << "ONNXGPU_SKIP_GPU_TESTS is set";
  fs::path dir = model_dir(GetParam());
  if (dir.empty()) return;
  try {
    Session session((dir / "model.onnx").string(), gpu_options());
    for (const char* set : {"test_data_set_0", "test_data_set_1", "test_data_set_0"}) {
      run_data_set(session, dir / set, 3);
      const PlanReport& p = session.last_plan();
      EXPECT_TRUE(p.captured);
      EXPECT_TRUE(p.replayed);
      EXPECT_FALSE(p.whole_graph_fallback);
      EXPECT_EQ(p.cpu_nodes, 0) << set << ": " << (p.fallbacks.empty() ? "" : p.fallbacks[0].node + " (" + p.fallbacks[0].op + "): " + p.fallbacks[0].reason);
      EXPECT_EQ(p.segments, 1);
    }
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ModelsGpuWhole, testing::Values("gpt2_tiny", "bert_tiny", "int64_embedding"),
                         [](const testing::TestParamInfo<std::string>& p) { return p.param; });
