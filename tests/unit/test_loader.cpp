// Loader robustness: truncated, bit-flipped, garbage and malformed models must be rejected with an
// onnxgpu::Error carrying a message, never a crash or another exception type. Whatever still loads
// is also put through Session (ep cpu) and run once with generated inputs, catching onnxgpu::Error.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>
#include <typeinfo>
#include <unordered_map>

#include "../fuzz/mutate.h"
#include "loader/model_loader.h"
#include "onnxgpu/error.h"
#include "onnxgpu/session.h"

namespace fs = std::filesystem;
using namespace onnxgpu;

namespace {

const std::string kNodeData = "/usr/share/libonnx-testdata/data/node/";
const std::string kSmallModel = kNodeData + "test_add/model.onnx";                                      // 129 bytes
const std::string kBigModel = "/usr/share/libonnx-testdata/data/pytorch-operator/test_operator_conv/model.onnx";  // 7.7 KB

std::string read_model(const std::string& path) {
  std::string bytes = fuzz::read_bytes(path);
  if (bytes.empty()) ADD_FAILURE() << "cannot read " << path << " (is Debian's libonnx-testdata installed?)";
  return bytes;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;  // ASan reserves terabytes of address space: no RLIMIT_AS then
#else
constexpr bool kAsan = false;
#endif

// Caps the address space while a mutated model runs, so that a mutation turning a dimension into 2^40
// ends as std::bad_alloc rather than taking the machine's memory. Restored on scope exit.
class MemoryCap {
 public:
  explicit MemoryCap(rlim_t extra_bytes) {
    if (kAsan) return;
    ok_ = getrlimit(RLIMIT_AS, &saved_) == 0;
    if (!ok_) return;
    rlimit cap = saved_;
    rlim_t want = current_vm_bytes() + extra_bytes;
    if (cap.rlim_max == RLIM_INFINITY || want < cap.rlim_max) cap.rlim_cur = want;
    ok_ = setrlimit(RLIMIT_AS, &cap) == 0;
  }
  ~MemoryCap() {
    if (ok_) setrlimit(RLIMIT_AS, &saved_);
  }

 private:
  static rlim_t current_vm_bytes() {
    std::ifstream f("/proc/self/statm");
    rlim_t pages = 0;
    f >> pages;
    return pages * rlim_t(sysconf(_SC_PAGESIZE));
  }
  rlimit saved_{};
  bool ok_ = false;
};

struct Tally {
  int rejected = 0, loaded = 0, ran = 0, run_errors = 0, out_of_memory = 0;
  std::string summary() const {
    return std::to_string(rejected) + " rejected, " + std::to_string(loaded) + " loaded (" + std::to_string(ran) +
           " ran, " + std::to_string(run_errors) + " run errors, " + std::to_string(out_of_memory) + " out of memory)";
  }
};

// Larger inputs are not generated (the run is skipped), which keeps every run cheap.
constexpr int64_t kMaxFeedElements = int64_t(1) << 14;

// Small deterministic inputs for every declared input; false when one can't be made (unknown dtype,
// unknown rank, or more than kMaxFeedElements).
bool generate_feeds(const Session& s, std::unordered_map<std::string, Tensor>& feeds) {
  for (const auto& in : s.inputs()) {
    if (in.dtype == DType::Undefined || in.dtype == DType::String || !in.has_shape) return false;
    Shape shape;
    int64_t numel = 1;
    for (int64_t d : in.shape) {
      int64_t v = d < 0 ? 1 : d;
      if (v > kMaxFeedElements) return false;
      shape.push_back(v);
      numel *= v;
      if (numel > kMaxFeedElements) return false;
    }
    Tensor f(DType::Float32, shape);
    for (int64_t i = 0; i < numel; ++i) f.data<float>()[i] = float(i % 7) - 3.0f;
    try {
      feeds[in.name] = f.cast(in.dtype);
    } catch (const Error&) {
      return false;
    }
  }
  return true;
}

// The check every mutated model goes through. `what` names the case in failure messages.
void check_bytes(const std::string& bytes, const std::string& what, Tally& tally) {
  try {
    (void)loader::load_model_from_bytes(bytes);
  } catch (const Error& e) {
    EXPECT_STRNE(e.what(), "") << what << ": an onnxgpu::Error without a message";
    ++tally.rejected;
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": the loader threw a " << typeid(e).name() << " that is not an onnxgpu::Error: " << e.what();
    return;
  }
  ++tally.loaded;
  // It loaded: build a CPU session and run it once. Kernels may reject the (mutated) model: that is
  // an onnxgpu::Error and fine; any other exception is a bug.
  MemoryCap cap(rlim_t(4) << 30);
  try {
    SessionOptions o;
    o.ep = "cpu";
    Session s = Session::from_bytes(bytes, o);
    std::unordered_map<std::string, Tensor> feeds;
    if (!generate_feeds(s, feeds)) return;
    ++tally.ran;
    (void)s.run(feeds);
  } catch (const Error& e) {
    EXPECT_STRNE(e.what(), "") << what << ": an onnxgpu::Error without a message";
    ++tally.run_errors;
  } catch (const std::bad_alloc&) {
    ++tally.out_of_memory;  // the memory cap above: a mutated shape asked for too much
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": Session/run threw a " << typeid(e).name() << " that is not an onnxgpu::Error: "
                  << e.what();
  }
}

// Expects loading to fail with `E` and a message containing `needle`.
template <class E = InvalidArgument>
void expect_rejected(const onnx::ModelProto& m, const std::string& needle) {
  std::string bytes;
  ASSERT_TRUE(m.SerializeToString(&bytes));
  try {
    (void)loader::load_model_from_bytes(bytes);
    ADD_FAILURE() << "the model loaded; expected an error mentioning '" << needle << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message '" << e.what() << "' does not mention '" << needle << "'";
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected " << typeid(E).name() << ", got " << typeid(e).name() << ": " << e.what();
  }
}

// y = Add(x, w) on float [2,3], w an initializer: the base the malformed-model tests edit.
onnx::ModelProto add_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto value = [](onnx::ValueInfoProto* v, const std::string& name) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto_DataType_FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(2);
    tt->mutable_shape()->add_dim()->set_dim_value(3);
  };
  value(g->add_input(), "x");
  value(g->add_output(), "y");
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto_DataType_FLOAT);
  w->add_dims(2);
  w->add_dims(3);
  for (int i = 0; i < 6; ++i) w->add_float_data(float(i));
  auto* n = g->add_node();
  n->set_op_type("Add");
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  return m;
}

std::string temp_file(const std::string& name, const std::string& bytes) {
  fs::path p = fs::temp_directory_path() / ("onnxgpu_test_loader_" + std::to_string(getpid()) + "_" + name);
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

}  // namespace

TEST(LoaderMalformed, BaseModelLoads) {
  std::string bytes;
  ASSERT_TRUE(add_model().SerializeToString(&bytes));
  ir::Model m = loader::load_model_from_bytes(bytes);
  EXPECT_EQ(m.graph.nodes.size(), 1u);
}

TEST(LoaderMalformed, EmptyBytesAndEmptyFile) {
  EXPECT_THROW(loader::load_model_from_bytes(""), InvalidArgument);
  std::string path = temp_file("empty.onnx", "");
  try {
    loader::load_model(path);
    ADD_FAILURE() << "an empty file loaded";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  fs::remove(path);
}

TEST(LoaderMalformed, MissingFile) {
  std::string path = "/nonexistent/onnxgpu/model.onnx";
  try {
    loader::load_model(path);
    ADD_FAILURE() << "a missing file loaded";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  SessionOptions o;
  o.ep = "cpu";
  EXPECT_THROW(Session(path, o), InvalidArgument);
}

TEST(LoaderMalformed, DirectoryInsteadOfFile) {
  EXPECT_THROW(loader::load_model(fs::temp_directory_path().string()), Error);
}

TEST(LoaderMalformed, NodeReadsUndefinedValue) {
  auto m = add_model();
  m.mutable_graph()->mutable_node(0)->set_input(1, "nowhere");
  expect_rejected(m, "nowhere");
}

TEST(LoaderMalformed, Cycle) {
  auto m = add_model();
  auto* g = m.mutable_graph();
  // y = Add(x, b); b = Relu(y): y and b depend on each other.
  g->mutable_node(0)->set_input(1, "b");
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("y");
  relu->add_output("b");
  expect_rejected(m, "cycle");
}

TEST(LoaderMalformed, SelfLoop) {
  auto m = add_model();
  m.mutable_graph()->mutable_node(0)->set_input(1, "y");
  expect_rejected(m, "cycle");
}

TEST(LoaderMalformed, OutputProducedTwice) {
  auto m = add_model();
  *m.mutable_graph()->add_node() = m.graph().node(0);
  expect_rejected(m, "'y'");
}

TEST(LoaderMalformed, GraphOutputNobodyProduces) {
  auto m = add_model();
  m.mutable_graph()->mutable_output(0)->set_name("orphan");
  expect_rejected(m, "orphan");
}

TEST(LoaderMalformed, RawDataOfTheWrongSize) {
  auto m = add_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_raw_data(std::string(20, '\0'));  // [2,3] float needs 24 bytes
  expect_rejected(m, "raw_data");
}

TEST(LoaderMalformed, TypedDataOfTheWrongCount) {
  auto m = add_model();
  m.mutable_graph()->mutable_initializer(0)->add_float_data(7.0f);  // 7 values for [2,3]
  expect_rejected(m, "'w'");
}

TEST(LoaderMalformed, NegativeDims) {
  auto m = add_model();
  m.mutable_graph()->mutable_initializer(0)->set_dims(0, -2);
  expect_rejected(m, "negative");
}

TEST(LoaderMalformed, UnknownElementType) {
  auto m = add_model();
  m.mutable_graph()->mutable_initializer(0)->set_data_type(99);
  expect_rejected<NotImplemented>(m, "99");
}

TEST(LoaderMalformed, NodeWithoutOpType) {
  auto m = add_model();
  m.mutable_graph()->mutable_node(0)->clear_op_type();
  expect_rejected(m, "op_type");
}

TEST(LoaderMalformed, InitializerWithoutName) {
  auto m = add_model();
  m.mutable_graph()->mutable_initializer(0)->clear_name();
  expect_rejected(m, "no name");
}

TEST(LoaderMalformed, NoGraph) {
  auto m = add_model();
  m.clear_graph();
  expect_rejected(m, "graph");
}

TEST(LoaderMalformed, ExternalDataFileMissing) {
  auto m = add_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  auto* kv = w->add_external_data();
  kv->set_key("location");
  kv->set_value("no_such_weights.bin");
  expect_rejected(m, "no_such_weights.bin");
}

TEST(LoaderMalformed, ExternalDataBadOffset) {
  auto m = add_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  auto* kv = w->add_external_data();
  kv->set_key("location");
  kv->set_value("weights.bin");
  kv = w->add_external_data();
  kv->set_key("offset");
  kv->set_value("not a number");
  expect_rejected(m, "");
}

TEST(LoaderMalformed, SubgraphReadsUndefinedValue) {
  auto m = add_model();
  auto* g = m.mutable_graph();
  // y2 = If(cond) then { t = Identity(missing) } else { t = Identity(x) }; y stays as before.
  auto* cond = g->add_initializer();
  cond->set_name("cond");
  cond->set_data_type(onnx::TensorProto_DataType_BOOL);
  cond->add_int32_data(1);
  auto* n = g->add_node();
  n->set_op_type("If");
  n->add_input("cond");
  n->add_output("y2");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = n->add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto_AttributeType_GRAPH);
    auto* sg = a->mutable_g();
    sg->set_name(branch);
    auto* id = sg->add_node();
    id->set_op_type("Identity");
    id->add_input(std::string(branch) == "then_branch" ? "missing" : "x");
    id->add_output("t");
    sg->add_output()->set_name("t");
  }
  expect_rejected(m, "missing");
}

TEST(LoaderMalformed, DeeplyNestedSubgraphs) {
  auto m = add_model();
  onnx::GraphProto* g = m.mutable_graph();
  for (int depth = 0; depth < 200; ++depth) {
    auto* n = g->add_node();
    n->set_op_type("If");
    n->add_input("x");
    n->add_output("nested" + std::to_string(depth));
    auto* a = n->add_attribute();
    a->set_name("then_branch");
    a->set_type(onnx::AttributeProto_AttributeType_GRAPH);
    g = a->mutable_g();
  }
  // protobuf's own recursion limit (100 messages) or the loader's (64 graphs) rejects it.
  expect_rejected(m, "");
}

TEST(LoaderMalformed, HugeDimsDoNotOverflow) {
  auto m = add_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->clear_dims();
  for (int i = 0; i < 3; ++i) w->add_dims(int64_t(1) << 31);  // 2^93 elements
  expect_rejected(m, "");
}

// A 60-byte model must not make the loader allocate gigabytes: the data size is checked against the
// shape before the tensor is allocated. Under a memory cap, allocating first ends as bad_alloc
// ("malformed model: std::bad_alloc") instead of the raw_data message.
TEST(LoaderMalformed, RawDataSizeCheckedBeforeAllocating) {
  if (kAsan) GTEST_SKIP() << "needs RLIMIT_AS, which ASan builds can't use";
  auto m = add_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->clear_dims();
  w->add_dims(int64_t(1) << 30);  // 4 GiB of float32
  w->set_raw_data(std::string(4, '\0'));
  MemoryCap cap(rlim_t(512) << 20);
  expect_rejected(m, "raw_data");
}

// Every prefix of a small model, loaded from bytes; a few from files too.
TEST(LoaderTruncated, EveryPrefixOfSmallModel) {
  std::string full = read_model(kSmallModel);
  ASSERT_FALSE(full.empty());
  Tally tally;
  for (size_t len = 0; len < full.size(); ++len)
    check_bytes(full.substr(0, len), kSmallModel + " truncated to " + std::to_string(len) + " bytes", tally);
  EXPECT_GT(tally.rejected, int(full.size()) / 2) << tally.summary();
  RecordProperty("tally", tally.summary());
  for (size_t len : {size_t(0), size_t(1), full.size() / 2, full.size() - 1}) {
    std::string path = temp_file("prefix.onnx", full.substr(0, len));
    EXPECT_THROW(loader::load_model(path), Error) << len << " bytes";
    fs::remove(path);
  }
}

TEST(LoaderTruncated, RandomPrefixesOfBiggerModel) {
  std::string full = read_model(kBigModel);
  ASSERT_FALSE(full.empty());
  fuzz::Rng rng(1);
  Tally tally;
  for (int i = 0; i < 300; ++i) {
    size_t len = rng.below(full.size());
    check_bytes(full.substr(0, len), kBigModel + " truncated to " + std::to_string(len) + " bytes", tally);
  }
  EXPECT_GT(tally.rejected, 150) << tally.summary();
}

// A few thousand deterministic bit flips over several small models (plain graph, If and Loop
// subgraphs, a Constant tensor attribute, a model with weights).
TEST(LoaderBitFlips, SeedModels) {
  const std::vector<std::string> seeds = {kSmallModel, kNodeData + "test_if/model.onnx",
                                          kNodeData + "test_loop11/model.onnx", kNodeData + "test_constant/model.onnx",
                                          kNodeData + "test_gather_0/model.onnx", kBigModel};
  fuzz::Rng rng(2);
  Tally tally;
  for (const auto& path : seeds) {
    std::string model = read_model(path);
    ASSERT_FALSE(model.empty());
    for (int i = 0; i < 600; ++i) {
      int flips = 1 + int(rng.below(3));
      check_bytes(fuzz::bit_flipped(model, rng, flips), path + " flip #" + std::to_string(i), tally);
    }
  }
  RecordProperty("tally", tally.summary());
  std::printf("bit flips: %s\n", tally.summary().c_str());
}

TEST(LoaderBitFlips, MixedMutations) {
  std::string model = read_model(kNodeData + "test_loop11/model.onnx");
  ASSERT_FALSE(model.empty());
  fuzz::Rng rng(3);
  Tally tally;
  for (int i = 0; i < 1000; ++i) check_bytes(fuzz::mutate(model, rng), "mutation #" + std::to_string(i), tally);
  std::printf("mutations: %s\n", tally.summary().c_str());
}

TEST(LoaderGarbage, RandomBytes) {
  fuzz::Rng rng(4);
  Tally tally;
  for (int i = 0; i < 1000; ++i) check_bytes(fuzz::garbage(rng, 512), "garbage #" + std::to_string(i), tally);
  // Garbage behind a plausible first field (ir_version = 8).
  for (int i = 0; i < 500; ++i) check_bytes("\x08\x08" + fuzz::garbage(rng, 256), "garbage2 #" + std::to_string(i), tally);
  std::printf("garbage: %s\n", tally.summary().c_str());
}

// Large weights are parted from the file before protobuf parses it and given the file's own bytes
// (or a copy where their address does not suit the element type): every value as protobuf reads it,
// from a file and from bytes, whatever the alignment of each tensor's data in the file.
TEST(LoaderWeights, PartedFromTheFileAsProtobufReadsThem) {
  onnx::ModelProto m = add_model();
  auto* g = m.mutable_graph();
  std::vector<std::pair<std::string, Tensor>> expected;
  for (int k = 0; k < 6; ++k) {  // sizes that shift the next tensor's offset by 1..3 bytes
    auto* t = g->add_initializer();
    t->set_name("f" + std::to_string(k));
    t->set_data_type(onnx::TensorProto_DataType_FLOAT);
    const int64_t n = 1100 + k;
    t->add_dims(n);
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = float(i) * 0.5f + float(k);
    t->set_raw_data(v.data(), v.size() * 4);
    expected.emplace_back(t->name(), Tensor::from_vector<float>({n}, v));
    t->set_doc_string(std::string(size_t(k), 'x'));  // shifts what follows
  }
  auto* big = g->add_initializer();
  big->set_name("i64");
  big->set_data_type(onnx::TensorProto_DataType_INT64);
  std::vector<int64_t> iv(700);
  for (size_t i = 0; i < iv.size(); ++i) iv[i] = (int64_t(1) << 33) * int64_t(i) - 5;
  big->add_dims(int64_t(iv.size()));
  big->set_raw_data(iv.data(), iv.size() * 8);
  expected.emplace_back("i64", Tensor::from_vector<int64_t>({int64_t(iv.size())}, iv));
  std::string bytes;
  ASSERT_TRUE(m.SerializeToString(&bytes));
  const std::string path = temp_file("weights.onnx", bytes);
  for (int from_file = 0; from_file < 2; ++from_file) {
    ir::Model got = from_file ? loader::load_model(path) : loader::load_model_from_bytes(bytes);
    for (const auto& [name, want] : expected) {
      const Tensor& t = got.graph.initializers.at(name);
      ASSERT_EQ(t.dtype(), want.dtype()) << name;
      ASSERT_EQ(t.shape(), want.shape()) << name;
      EXPECT_EQ(std::memcmp(t.raw(), want.raw(), want.nbytes()), 0) << name << (from_file ? " (file)" : " (bytes)");
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % dtype_size(t.dtype()), 0u) << name;
    }
    EXPECT_EQ(got.graph.initializers.at("w").data<float>()[5], 5.0f);  // a small one, parsed by protobuf
  }
  // A tensor written in place does not change the file, nor another model loaded from it.
  {
    ir::Model a = loader::load_model(path);
    Tensor& t = a.graph.initializers.at("f0");
    t.data<float>()[0] = 1234.5f;
    ir::Model b = loader::load_model(path);
    EXPECT_EQ(b.graph.initializers.at("f0").data<float>()[0], 0.0f);
  }
  // Cut inside a weight: still a clear error.
  const std::string cut = temp_file("weights_cut.onnx", bytes.substr(0, bytes.size() - 100));
  EXPECT_THROW(loader::load_model(cut), InvalidArgument);
  fs::remove(path);
  fs::remove(cut);
}
