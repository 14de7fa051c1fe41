// ONNX Runtime's contrib domain (com.microsoft): both EPs find a node's kernel by (domain, op); the
// loader accepts com.microsoft's one opset and checks every node's domain is imported. An op of an
// unknown domain, or without a kernel, names the node, the op and the domain.
//
// Run: XDG_RUNTIME_DIR=/tmp build/tests/unit_tests --gtest_filter='Contrib*'
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "one_node.h"
#include "onnxgpu/error.h"
#include "onnxgpu/session.h"

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

}  // namespace
}  // namespace onnxgpu
