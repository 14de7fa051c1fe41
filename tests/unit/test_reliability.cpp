// The reliability cases (tests/data/reliability/README.md, found by a campaign of malformed models and
// bad inputs): external data never read from outside the model's folder nor allocated before its file
// is checked; Tanh / GELU / Log exact at the extremes on the GPU; float64 never computed in float32;
// one validation for both execution providers.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "loader/model_loader.h"
#include "loader/tensor_proto.h"
#include "one_node.h"
#include "runtime/executor.h"
#include "webgpu/device.h"
#include "onnxgpu/error.h"
#include "onnxgpu/session.h"

namespace onnxgpu {
namespace {

namespace fs = std::filesystem;
using testing::Operand;

const std::string kCases = std::string(ONNXGPU_SOURCE_DIR) + "/tests/data/reliability/";

SessionOptions ep_options(const std::string& ep, bool fail_loud = false) {
  SessionOptions o;
  o.ep = ep;
  o.int64.fail_loud = fail_loud;
  return o;
}

// The message of the error `f` throws ("" when it does not throw).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// A GPU session, or a skip / failure naming why there is none.
#define REQUIRE_GPU()                                                                                   \
  do {                                                                                                  \
    std::string why = error_of([] { Session::from_bytes(testing::one_node_model(                        \
        "Relu", {{"x", Tensor::from_vector<float>({1}, {1.0f})}}, {"y"}, 17), ep_options("webgpu")); }); \
    if (!why.empty()) {                                                                                 \
      if (testing::skip_gpu()) GTEST_SKIP() << "no WebGPU device: " << why;                              \
      FAIL() << "no WebGPU device (ONNXGPU_SKIP_GPU_TESTS=1 skips): " << why;                            \
    }                                                                                                   \
  } while (0)

// A temporary folder, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("onnxgpu-reliability-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// Identity(w) where w is a float32 initializer of `n` elements stored as external data at `location`.
std::string external_model(const std::string& location, int64_t n, int64_t offset = -1) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("ext");
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(n);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = w->add_external_data();
  kv->set_key("location");
  kv->set_value(location);
  if (offset >= 0) {
    kv = w->add_external_data();
    kv->set_key("offset");
    kv->set_value(std::to_string(offset));
  }
  auto* node = g->add_node();
  node->set_op_type("Identity");
  node->add_input("w");
  node->add_output("out");
  g->add_output()->set_name("out");
  return m.SerializeAsString();
}

void write_file(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

template <class T>
std::vector<T> values(const Tensor& t) {
  auto s = t.span<T>();
  return {s.begin(), s.end()};
}

std::string floats_bytes(const std::vector<float>& v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4); }

// ---- F1: external data stays inside the model's folder ---------------------------------------------------

TEST(Reliability, ExternalDataTraversalIsRefused) {
  std::string e = error_of([] { Session(kCases + "extdata_traversal/model.onnx", ep_options("cpu")); });
  EXPECT_NE(e.find("initializer 'leak'"), std::string::npos) << e;
  EXPECT_NE(e.find("outside the folder"), std::string::npos) << e;
  EXPECT_NE(e.find("../../../../../../../../etc/passwd"), std::string::npos) << e;
}

TEST(Reliability, ExternalDataAbsoluteLocationIsRefused) {
  for (const char* ep : {"cpu", "webgpu"}) {
    std::string e = error_of([&] { Session(kCases + "extdata_absolute/model.onnx", ep_options(ep)); });
    EXPECT_NE(e.find("'/etc/passwd' is absolute"), std::string::npos) << ep << ": " << e;
  }
  // A tensor file given as an input follows the same rule.
  std::string e = error_of([] { loader::read_tensor_file(kCases + "extdata_absolute/input_x_ext_passwd.pb"); });
  EXPECT_NE(e.find("is absolute"), std::string::npos) << e;
}

TEST(Reliability, ExternalDataThroughASymlinkOutOfTheFolderIsRefused) {
  TempDir dir;
  fs::create_directories(dir.path / "model");
  write_file(dir.path / "outside.bin", floats_bytes({1, 2, 3, 4}));
  fs::create_symlink(dir.path / "outside.bin", dir.path / "model" / "weights.bin");
  write_file(dir.path / "model" / "model.onnx", external_model("weights.bin", 4));
  std::string e = error_of([&] { Session((dir.path / "model" / "model.onnx").string(), ep_options("cpu")); });
  EXPECT_NE(e.find("outside the folder"), std::string::npos) << e;
  // A symlink to /proc/self/environ likewise.
  fs::create_symlink("/proc/self/environ", dir.path / "model" / "env.bin");
  write_file(dir.path / "model" / "env.onnx", external_model("env.bin", 4));
  e = error_of([&] { Session((dir.path / "model" / "env.onnx").string(), ep_options("cpu")); });
  EXPECT_NE(e.find("outside the folder"), std::string::npos) << e;
}

TEST(Reliability, ExternalDataInsideTheFolderLoads) {
  TempDir dir;
  write_file(dir.path / "weights" / "w.bin", floats_bytes({9, 1, 2, 3, 4}));
  write_file(dir.path / "model.onnx", external_model("weights/w.bin", 4, /*offset=*/4));
  Session s((dir.path / "model.onnx").string(), ep_options("cpu"));
  auto out = s.run({});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{1, 2, 3, 4}));
  // A folder above the model's is refused unless the caller widens the root for a trusted model.
  write_file(dir.path / "sub" / "model.onnx", external_model("../weights/w.bin", 4, 4));
  std::string e = error_of([&] { Session((dir.path / "sub" / "model.onnx").string(), ep_options("cpu")); });
  EXPECT_NE(e.find("outside the folder"), std::string::npos) << e;
  SessionOptions trusted = ep_options("cpu");
  trusted.add_config_entry("onnxgpu.external_data_root", dir.path.string());
  Session widened((dir.path / "sub" / "model.onnx").string(), trusted);
  EXPECT_EQ(values<float>(widened.run({})[0]), (std::vector<float>{1, 2, 3, 4}));
}

// External data is the mapped file's pages where its offset aligns the elements, else a copy: both load
// the same values, from one file read by two tensors at two offsets, and the runs change nothing in it.
TEST(Reliability, ExternalDataMappedOrCopiedByItsAlignment) {
  TempDir dir;
  const std::string bytes = "xy" + floats_bytes({1, 2, 3, 4}) + "zw" + floats_bytes({5, 6, 7, 8});
  write_file(dir.path / "w.bin", bytes);
  for (int64_t offset : {2, 20}) {  // (a copy, then the mapped pages: the file is mapped from a page's start)
    write_file(dir.path / "model.onnx", external_model("w.bin", 4, offset));
    Session s((dir.path / "model.onnx").string(), ep_options("cpu"));
    auto out = s.run({});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(values<float>(out[0]), offset == 2 ? (std::vector<float>{1, 2, 3, 4}) : (std::vector<float>{5, 6, 7, 8}))
        << "offset " << offset;
  }
  std::ifstream f(dir.path / "w.bin", std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(f), {}), bytes);
}

// ---- F2: the file and its length are checked before anything is allocated ------------------------------

// Peak resident memory (KiB) of a child process that loads `path`; -1 when the child failed to report.
long child_peak_rss_kib(const std::string& path, std::string& error) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string msg = error_of([&] { loader::load_model(path); });
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    std::string out = std::to_string(ru.ru_maxrss) + "\n" + msg;
    (void)!write(fds[1], out.data(), out.size());
    _exit(0);
  }
  close(fds[1]);
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  size_t nl = got.find('\n');
  if (nl == std::string::npos) return -1;
  error = got.substr(nl + 1);
  return std::stol(got.substr(0, nl));
}

TEST(Reliability, ExternalDataMissingFileAllocatesNothing) {
  // A 96-byte model declaring 1 GB of external data in a file that does not exist.
  std::string error;
  long before_kib = 0;
  {
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    before_kib = ru.ru_maxrss;  // the child starts with the parent's pages
  }
  long peak = child_peak_rss_kib(kCases + "extdata_alloc_before_check/model.onnx", error);
  ASSERT_GE(peak, 0);
  EXPECT_NE(error.find("cannot open external data file"), std::string::npos) << error;
  EXPECT_LT(peak, before_kib + 200 * 1024) << "the loader allocated the declared size before checking the file";
}

TEST(Reliability, ExternalDataShorterThanDeclaredIsAnErrorBeforeAllocation) {
  TempDir dir;
  write_file(dir.path / "w.bin", floats_bytes({1, 2, 3}));
  // 2^38 floats (1 TiB, beyond the tensor cap) declared against a 12-byte file: the file's size is the error.
  write_file(dir.path / "model.onnx", external_model("w.bin", int64_t(1) << 38));
  std::string e = error_of([&] { loader::load_model((dir.path / "model.onnx").string()); });
  EXPECT_NE(e.find("has 12 bytes"), std::string::npos) << e;
  // The 1 TiB case of the campaign (location /dev/zero).
  e = error_of([] { loader::load_model(kCases + "extdata_1TiB_alloc/model.onnx"); });
  EXPECT_NE(e.find("is absolute"), std::string::npos) << e;
  // A malformed offset names its key.
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(external_model("w.bin", 3)));
  auto* kv = m.mutable_graph()->mutable_initializer(0)->add_external_data();
  kv->set_key("offset");
  kv->set_value("12abc");
  write_file(dir.path / "bad_offset.onnx", m.SerializeAsString());
  e = error_of([&] { loader::load_model((dir.path / "bad_offset.onnx").string()); });
  EXPECT_NE(e.find("external data offset '12abc' is not a non-negative integer"), std::string::npos) << e;
}

// ---- F3, F4: transcendental functions at the extremes ---------------------------------------------------

// Runs `path` with input x on both EPs (the GPU with capture: record, replay) and returns both outputs.
std::pair<Tensor, Tensor> run_both(const std::string& model, const Tensor& x, bool from_file) {
  auto make = [&](const SessionOptions& o) { return from_file ? Session(model, o) : Session::from_bytes(model, o); };
  Session cpu = make(ep_options("cpu"));
  Session gpu = make(ep_options("webgpu", /*fail_loud=*/true));
  Tensor want = cpu.run({{"x", x}})[0];
  Tensor got = gpu.run({{"x", x}})[0];
  Tensor again = gpu.run({{"x", x}})[0];
  EXPECT_TRUE(gpu.last_plan().replayed);
  EXPECT_EQ(std::memcmp(got.raw(), again.raw(), got.nbytes()), 0) << "the replay differs from the recording run";
  return {want, got};
}

void expect_close(const Tensor& want, const Tensor& got, const std::string& what, float atol = 1e-5f, float rtol = 1e-4f) {
  auto w = values<float>(want), g = values<float>(got);
  ASSERT_EQ(w.size(), g.size());
  for (size_t i = 0; i < w.size(); ++i) {
    if (std::isnan(w[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << what << " at " << i << ": expected NaN, got " << g[i];
    } else if (std::isinf(w[i])) {
      EXPECT_EQ(w[i], g[i]) << what << " at " << i;
    } else {
      EXPECT_FALSE(std::isnan(g[i])) << what << " at " << i << ": NaN, expected " << w[i];
      EXPECT_NEAR(g[i], w[i], atol + rtol * std::fabs(w[i])) << what << " at " << i;
    }
  }
}

// A case folder's model.onnx on x.npy, on both EPs (run_both), compared (expect_close): x and the GPU's values.
std::pair<std::vector<float>, std::vector<float>> check_case(const std::string& dir, const std::string& what) {
  Tensor x = loader::read_npy(kCases + dir + "/x.npy");
  auto [want, got] = run_both(kCases + dir + "/model.onnx", x, true);
  expect_close(want, got, what);
  return {values<float>(x), values<float>(got)};
}

TEST(Reliability, TanhOfLargeInputs) {
  REQUIRE_GPU();
  auto [xv, gv] = check_case("tanh_large", "Tanh");
  for (size_t i = 0; i < xv.size(); ++i)
    if (std::fabs(xv[i]) >= 20) {
      EXPECT_EQ(gv[i], xv[i] > 0 ? 1.0f : -1.0f) << "Tanh(" << xv[i] << ")";
    }
}

TEST(Reliability, FusedTanhGeluOfLargeInputs) {
  REQUIRE_GPU();
  check_case("gelu_tanh_large", "GPT-2's GELU");
}

TEST(Reliability, GeluApproximateTanhOfLargeInputs) {
  REQUIRE_GPU();
  Tensor x = Tensor::from_vector<float>({10}, {-1e30f, -100, -30, -13, -1, 0.5f, 13, 30, 100, 1e30f});
  std::string model = testing::one_node_model("Gelu", {{"x", x}}, {"y"}, 20,
                                              [](onnx::NodeProto& n) { testing::set_string(n, "approximate", "tanh"); });
  // libonnx 1.12 has no Gelu schema: the model is loaded all the same (opset 20 is known).
  auto [want, got] = run_both(model, x, false);
  expect_close(want, got, "Gelu(approximate=tanh)");
}

TEST(Reliability, LogOfZeroAndNegatives) {
  REQUIRE_GPU();
  auto [xv, gv] = check_case("log_zero_negative", "Log");
  for (size_t i = 0; i < xv.size(); ++i) {
    if (xv[i] == 0) {
      EXPECT_EQ(gv[i], -std::numeric_limits<float>::infinity()) << "log(0)";
    }
    if (xv[i] < 0) {
      EXPECT_TRUE(std::isnan(gv[i])) << "log(" << xv[i] << ") = " << gv[i];
    }
  }
}

// ---- F5: float64 is never computed in float32 -------------------------------------------------------------

TEST(Reliability, Float64ArithmeticIsExactOrRefused) {
  REQUIRE_GPU();
  const std::string model = kCases + "f64_cast/model.onnx";
  std::unordered_map<std::string, Tensor> feeds = {{"a", loader::read_npy(kCases + "f64_cast/a.npy")},
                                                   {"x", loader::read_npy(kCases + "f64_cast/x.npy")},
                                                   {"y", loader::read_npy(kCases + "f64_cast/y.npy")}};
  auto want = Session(model, ep_options("cpu")).run(feeds);
  // Fail-loud: an error naming the node and the reason.
  std::string e = error_of([&] { Session(model, ep_options("webgpu", true)).run(feeds); });
  EXPECT_NE(e.find("fail_loud"), std::string::npos) << e;
  EXPECT_NE(e.find("float64"), std::string::npos) << e;
  // Otherwise the float64 nodes run on the CPU, exactly, and the plan says why.
  Session gpu(model, ep_options("webgpu"));
  for (int run = 0; run < 2; ++run) {
    auto got = gpu.run(feeds);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) EXPECT_EQ(values<double>(got[k]), values<double>(want[k])) << "output " << k;
  }
  const PlanReport& plan = gpu.last_plan();
  EXPECT_EQ(plan.cpu_nodes, 2);
  for (const auto& f : plan.fallbacks) EXPECT_NE(f.reason.find("float64"), std::string::npos) << f.node << ": " << f.reason;
  auto d = values<double>(want[0]);
  EXPECT_EQ(d[0], 123456789012.0);
  EXPECT_EQ(values<double>(want[1])[0], 1e15 + 1);
}

TEST(Reliability, Float64MovesStayOnTheGpuBitForBit) {
  REQUIRE_GPU();
  Tensor x = Tensor::from_vector<double>({2, 3}, {1e300, 1e15 + 1, -123456789012.5, 5e-324, 0.1, -0.0});
  std::string model = testing::one_node_model("Transpose", {{"x", x}}, {"y"}, 17);
  Session gpu = Session::from_bytes(model, ep_options("webgpu", /*fail_loud=*/true));
  auto y = values<double>(gpu.run({{"x", x}})[0]);
  std::vector<double> want = {1e300, 5e-324, 1e15 + 1, 0.1, -123456789012.5, -0.0};
  ASSERT_EQ(y.size(), want.size());
  for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(std::memcmp(&y[i], &want[i], 8), 0) << i << ": " << y[i];
}

TEST(Reliability, GpuIndexErrorsNameTheIndex) {
  REQUIRE_GPU();
  std::vector<Operand> in = {{"x", Tensor::from_vector<float>({3}, {1, 2, 3})},
                             {"i", Tensor::from_vector<int64_t>({2}, {0, (int64_t(1) << 32) + 1})}};
  std::string model = testing::one_node_model("Gather", in, {"y"}, 13);
  Session gpu = Session::from_bytes(model, ep_options("webgpu", true));
  std::string e = error_of([&] { gpu.run(testing::feeds_of(in)); });
  EXPECT_NE(e.find("an index is out of range (index 4294967297)"), std::string::npos) << e;
  // The replay reports the index of its own run.
  in[1].value = Tensor::from_vector<int64_t>({2}, {-4, 1});
  e = error_of([&] { gpu.run(testing::feeds_of(in)); });
  EXPECT_NE(e.find("(index -4)"), std::string::npos) << e;
}

// ---- What the fuzz target found on the CPU reference (tests/fuzz: mutants run there under ASan/UBSan) ----

TEST(Reliability, FuzzFindingsAreClearErrors) {
  // Cast to an element type number beyond every known one (an out-of-range shift in the type set).
  std::vector<Operand> x = {{"x", Tensor::from_vector<float>({2}, {1, 2})}};
  std::string cast = testing::one_node_model("Cast", x, {"y"}, 13, [](onnx::NodeProto& n) { testing::set_int(n, "to", 75); });
  std::string e = error_of([&] { Session::from_bytes(cast, ep_options("cpu")).run(testing::feeds_of(x)); });
  EXPECT_NE(e.find("data type 75"), std::string::npos) << e;
  // LayerNormalization of a scalar (an index before the first axis), on both EPs.
  std::vector<Operand> s = {{"X", Tensor::from_vector<float>({}, {1})}, {"W", Tensor::from_vector<float>({}, {1})}};
  std::string ln = testing::one_node_model("LayerNormalization", s, {"Y"}, 17);
  for (const char* ep : {"cpu", "webgpu"}) {
    e = error_of([&] { Session::from_bytes(ln, ep_options(ep)).run(testing::feeds_of(s)); });
    if (std::string(ep) == "webgpu" && e.find("no WebGPU adapter") != std::string::npos) continue;
    EXPECT_NE(e.find("X is a scalar"), std::string::npos) << ep << ": " << e;
  }
}

// ---- Sessions in turn ------------------------------------------------------------------------------------

// A process that makes and drops sessions one after the other (a server, a conformance run) keeps one
// device: rebuilding it per session leaked SwiftShader's thread-local keys until, after ~1,000, the
// driver aborted (the whole ONNX 1.23 suite in one process).
TEST(Reliability, SessionsInTurnKeepOneDevice) {
  REQUIRE_GPU();
  std::vector<Operand> in = {{"x", Tensor::from_vector<float>({2}, {-1, 2})}};
  std::string model = testing::one_node_model("Relu", in, {"y"}, 17);
  const webgpu::Device* first = nullptr;
  for (int i = 0; i < 1100; ++i) {
    Session s = Session::from_bytes(model, ep_options("webgpu", true));
    ASSERT_EQ(values<float>(s.run(testing::feeds_of(in))[0]), (std::vector<float>{0, 2})) << "session " << i;
    if (i == 0) first = runtime::shared_device().get();
  }
  EXPECT_EQ(runtime::shared_device().get(), first);
}

// ---- One validation for both EPs -------------------------------------------------------------------------

TEST(Reliability, DeclaredOutputTypeIsChecked) {
  for (const char* ep : {"cpu", "webgpu"}) {
    std::string e = error_of([&] {
      Session s(kCases + "minor/declared_output_int64.onnx", ep_options(ep));
      s.run({{"x", testing::random_float(DType::Float32, {2, 16}, 1)}});
    });
    if (std::string(ep) == "webgpu" && e.find("no WebGPU adapter") != std::string::npos) continue;
    EXPECT_NE(e.find("output 'y': the model declares int64, the graph computes float"), std::string::npos) << ep << ": " << e;
  }
}

TEST(Reliability, CastErrorsNameTheNodeOnBothEps) {
  // A target type the engine does not know, and a string result a WebGPU session cannot hold: each names
  // the node (and the output), with or without fail-loud.
  const std::vector<Operand> in{{"x", Tensor::from_vector<float>({2}, {1.f, 2.f})}};
  auto cast = [&](int64_t to) {
    return testing::one_node_model("Cast", in, {"y"}, 21, [to](onnx::NodeProto& n) { testing::set_int(n, "to", to); });
  };
  for (bool fail_loud : {false, true}) {
    for (const char* ep : {"cpu", "webgpu"}) {
      SessionOptions o = ep_options(ep);
      o.int64.fail_loud = fail_loud;
      std::string e = error_of([&] { Session::from_bytes(cast(99), o).run(testing::feeds_of(in)); });
      if (std::string(ep) == "webgpu" && e.find("no WebGPU adapter") != std::string::npos) continue;
      EXPECT_NE(e.find("node 'Cast_0' (Cast)"), std::string::npos) << ep << ": " << e;
      EXPECT_NE(e.find("cast to ONNX data type 99 is not supported"), std::string::npos) << ep << ": " << e;
    }
  }
  SessionOptions o = ep_options("webgpu");
  std::string e = error_of([&] { Session::from_bytes(cast(8), o).run(testing::feeds_of(in)); });
  if (e.find("no WebGPU adapter") == std::string::npos) {
    EXPECT_NE(e.find("node 'Cast_0' (Cast): output 'y' is a string tensor"), std::string::npos) << e;
  }
}

TEST(Reliability, DeformConvShapeErrorsNameTheInput) {
  // An offset of the wrong size for the output, and a mask that is not the offset's half: each error names
  // the node and the input, and gives the shape expected, on both EPs.
  auto zeros = [](Shape s) { return Tensor(DType::Float32, s); };
  auto model = [&](Shape offset, Shape mask) {
    std::vector<Operand> in{{"X", zeros({1, 2, 4, 4})}, {"W", zeros({3, 2, 3, 3})}, {"offset", zeros(offset)},
                            {"B", Tensor{}}, {"mask", zeros(mask)}};
    return std::make_pair(testing::one_node_model("DeformConv", in, {"y"}, 19), in);
  };
  const std::pair<Shape, Shape> cases[] = {{{1, 18, 3, 3}, {1, 9, 2, 2}}, {{1, 18, 2, 2}, {1, 18, 2, 2}}};
  const char* want[] = {"input 'offset' must be [N, offset_group * 2 * kH * kW, oH, oW] = [1,18,2,2], got float32[1,18,3,3]",
                        "input 'mask' must be [N, offset_group * kH * kW, oH, oW] = [1,9,2,2], got float32[1,18,2,2]"};
  for (size_t i = 0; i < 2; ++i)
    for (const char* ep : {"cpu", "webgpu"}) {
      auto [bytes, in] = model(cases[i].first, cases[i].second);
      std::string e = error_of([&] { Session::from_bytes(bytes, ep_options(ep)).run(testing::feeds_of(in)); });
      if (std::string(ep) == "webgpu" && e.find("no WebGPU adapter") != std::string::npos) continue;
      EXPECT_NE(e.find("node 'DeformConv_0' (DeformConv)"), std::string::npos) << ep << ": " << e;
      EXPECT_NE(e.find(want[i]), std::string::npos) << ep << ": " << e;
    }
}

TEST(Reliability, AttributeOfTheWrongTypeIsRejectedByBothEps) {
  for (const char* ep : {"cpu", "webgpu"}) {
    std::string e = error_of([&] { Session(kCases + "minor/bn_momentum_string_attr.onnx", ep_options(ep)); });
    EXPECT_NE(e.find("attribute 'momentum' is a string, BatchNormalization expects a float"), std::string::npos) << ep << ": " << e;
  }
}

TEST(Reliability, UnknownOpsetsAndIrVersionsAreRejected) {
  for (const char* ep : {"cpu", "webgpu"}) {
    std::string e = error_of([&] { Session(kCases + "minor/mlp_opset0.onnx", ep_options(ep)); });
    EXPECT_NE(e.find("opset 0 of domain 'ai.onnx', which is not valid"), std::string::npos) << ep << ": " << e;
    e = error_of([&] { Session(kCases + "minor/mlp_opset999.onnx", ep_options(ep)); });
    EXPECT_NE(e.find("opset 999 of domain 'ai.onnx', newer than this engine knows"), std::string::npos) << ep << ": " << e;
  }
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(testing::one_node_model("Relu", {{"x", Tensor::from_vector<float>({1}, {1})}}, {"y"}, 17)));
  m.set_ir_version(999);
  std::string e = error_of([&] { Session::from_bytes(m.SerializeAsString(), ep_options("cpu")); });
  EXPECT_NE(e.find("IR version 999 is newer than this engine knows"), std::string::npos) << e;
}

TEST(Reliability, NegativeDeclaredDimensionsAreRejected) {
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(testing::one_node_model("Relu", {{"x", Tensor::from_vector<float>({2}, {1, 2})}}, {"y"}, 17)));
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(-3);
  std::string e = error_of([&] { Session::from_bytes(m.SerializeAsString(), ep_options("cpu")); });
  EXPECT_NE(e.find("value 'x': declared dimension 0 is -3"), std::string::npos) << e;
}

TEST(Reliability, OldOpsetBroadcastingIsTheSameOnBothEps) {
  REQUIRE_GPU();
  // Add-6 without broadcast=1 requires equal shapes: both EPs reject [2,3] + [3].
  std::vector<Operand> in = {{"a", testing::random_float(DType::Float32, {2, 3}, 1)},
                             {"b", testing::random_float(DType::Float32, {3}, 2)}};
  std::string plain = testing::one_node_model("Add", in, {"y"}, 6);
  for (const char* ep : {"cpu", "webgpu"}) {
    std::string e = error_of([&] { Session::from_bytes(plain, ep_options(ep)).run(testing::feeds_of(in)); });
    EXPECT_NE(e.find("broadcast=0"), std::string::npos) << ep << ": " << e;
  }
  // With broadcast=1 and axis=0, B [2] aligns with A's first axis on both.
  std::vector<Operand> in2 = {{"a", testing::random_float(DType::Float32, {2, 3}, 1)},
                              {"b", testing::random_float(DType::Float32, {2}, 2)}};
  std::string axis0 = testing::one_node_model("Add", in2, {"y"}, 6, [](onnx::NodeProto& n) {
    testing::set_int(n, "broadcast", 1);
    testing::set_int(n, "axis", 0);
  });
  auto want = Session::from_bytes(axis0, ep_options("cpu")).run(testing::feeds_of(in2))[0];
  auto got = Session::from_bytes(axis0, ep_options("webgpu", true)).run(testing::feeds_of(in2))[0];
  EXPECT_EQ(values<float>(want), values<float>(got));
}

}  // namespace
}  // namespace onnxgpu
