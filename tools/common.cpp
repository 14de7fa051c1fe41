#include "common.h"

#include <filesystem>
#include <iostream>
#include <random>
#include <sstream>

#include "loader/tensor_proto.h"

namespace fs = std::filesystem;

namespace onnxgpu::tools {

void EngineFlags::add_to(CLI::App* cmd) {
  cmd->add_option("--ep", ep, "execution provider")->check(CLI::IsMember({"webgpu", "cpu"}));
  cmd->add_flag("--capture", capture, "record GPU work once per shape signature, replay after (default)");
  cmd->add_flag("--no-capture", no_capture, "run without graph capture");
  cmd->add_option("--int64", int64, "INT64 strategy on the GPU")->check(CLI::IsMember({"bitcast", "cast", "per-op"}));
  cmd->add_flag("--fail-loud", fail_loud, "any CPU fallback or INT64 overflow is an error");
  cmd->add_option("--config", config, "session config entry KEY=VALUE (e.g. gpu_graph_capture=1)");
}

SessionOptions EngineFlags::options() const {
  SessionOptions o;
  o.ep = ep;
  o.capture = !no_capture;
  o.int64.strategy = Int64Policy::parse_strategy(int64);
  o.int64.fail_loud = fail_loud;
  for (const auto& kv : config) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) throw CLI::ValidationError("--config", "expected KEY=VALUE, got '" + kv + "'");
    o.config[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return o;
}

void InputFlags::add_to(CLI::App* cmd) {
  cmd->add_option("--input", inputs, "input NAME=FILE (.pb TensorProto or .npy)");
  cmd->add_option("--shape", shapes, "shape of a generated input, NAME=2x13");
  cmd->add_option("--data-set", data_set, "ONNX test_data_set_N folder (inputs, and outputs to compare)");
  cmd->add_option("--seed", seed, "seed of generated inputs (inputs not given by --input or --data-set are "
                                  "generated: floats in [-1, 1], integers in [0, 100), symbolic dims 1 unless --shape)");
}

namespace {

std::pair<std::string, std::string> split_kv(const std::string& s, const char* flag) {
  auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0) throw CLI::ValidationError(flag, "expected NAME=VALUE, got '" + s + "'");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

Shape parse_shape(const std::string& s) {
  Shape shape;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, 'x')) {
    try {
      size_t used = 0;
      long long v = std::stoll(item, &used);
      if (used != item.size() || v < 0) throw std::invalid_argument("");
      shape.push_back(v);
    } catch (const std::exception&) {
      throw CLI::ValidationError("--shape", "'" + s + "' is not a shape like 2x13");
    }
  }
  return shape;
}

std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> r;
  for (int k = 0;; ++k) {
    fs::path p = dir / (prefix + std::to_string(k) + ".pb");
    if (!fs::exists(p)) break;
    r.push_back(p);
  }
  return r;
}

Tensor generate(const TensorInfo& info, const Shape& shape, std::mt19937_64& rng) {
  Tensor t(info.dtype, shape);
  visit_dtype(info.dtype, [&]<class T>() {
    T* d = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, bool>) d[i] = rng() & 1;
      else if constexpr (is_float_v<T>) d[i] = T(float(std::uniform_real_distribution<double>(-1, 1)(rng)));
      else d[i] = T(rng() % 100);
    }
  }, kAllTypes, "generated input '" + info.name + "'");
  return t;
}

}  // namespace

std::unordered_map<std::string, Tensor> InputFlags::feeds(const Session& session) const {
  std::unordered_map<std::string, Tensor> feeds;
  for (const auto& kv : inputs) {
    auto [name, file] = split_kv(kv, "--input");
    feeds[name] = loader::read_tensor_file(file);
  }
  if (!data_set.empty()) {
    auto files = numbered(data_set, "input_");
    if (files.empty()) throw InvalidArgument("data set '" + data_set + "' has no input_0.pb");
    for (size_t k = 0; k < files.size(); ++k) {
      auto [name, t] = loader::read_tensor_pb(files[k].string());
      bool known = false;
      for (const auto& i : session.inputs()) known |= i.name == name;
      if (!known) {
        if (k >= session.inputs().size()) throw InvalidArgument(files[k].string() + ": more input files than model inputs");
        name = session.inputs()[k].name;
      }
      if (!feeds.count(name)) feeds[name] = std::move(t);
    }
  }
  std::map<std::string, Shape> shape_of;
  for (const auto& kv : shapes) {
    auto [name, s] = split_kv(kv, "--shape");
    shape_of[name] = parse_shape(s);
    bool known = false;
    std::string names;
    for (const auto& i : session.inputs()) {
      known |= i.name == name;
      names += (names.empty() ? "" : ", ") + i.name;
    }
    if (!known) throw InvalidArgument("--shape " + kv + ": '" + name + "' is not an input of the model (its inputs: " + names + ")");
  }
  std::mt19937_64 rng(seed);
  for (const auto& info : session.inputs()) {
    if (feeds.count(info.name)) continue;
    Shape shape;
    if (shape_of.count(info.name)) {
      shape = shape_of[info.name];
    } else {
      if (!info.has_shape)
        throw InvalidArgument("input '" + info.name + "' has no declared shape: give --input " + info.name +
                              "=FILE, or --shape " + info.name + "=2x3 for generated values (--seed N)");
      // A symbolic dimension of a generated input is 1 unless --shape says otherwise (said on stderr).
      std::string symbolic;
      for (size_t d = 0; d < info.shape.size(); ++d) {
        if (info.shape[d] < 0) symbolic += (symbolic.empty() ? "" : ", ") + (info.dim_params[d].empty() ? "?" : info.dim_params[d]);
        shape.push_back(info.shape[d] < 0 ? 1 : info.shape[d]);
      }
      if (!symbolic.empty())
        std::cerr << "onnxgpu: input '" << info.name << "' generated with its symbolic dimensions (" << symbolic
                  << ") as 1: " << shape_str(shape) << " (--shape " << info.name << "=... or --input to choose)\n";
    }
    feeds[info.name] = generate(info, shape, rng);
  }
  return feeds;
}

std::vector<Tensor> InputFlags::expected_outputs() const {
  std::vector<Tensor> r;
  if (data_set.empty()) return r;
  for (const auto& f : numbered(data_set, "output_")) r.push_back(loader::read_tensor_pb(f.string()).second);
  return r;
}

nlohmann::json plan_json(const PlanReport& p) {
  nlohmann::json fallbacks = nlohmann::json::array();
  for (const auto& f : p.fallbacks)
    fallbacks.push_back({{"node", f.node}, {"op", f.op}, {"reason", f.reason}, {"dtypes", f.dtypes}});
  return {{"ep", p.ep},
          {"signature", p.signature},
          {"nodes", p.nodes},
          {"gpu_nodes", p.gpu_nodes},
          {"adapter", p.adapter},
          {"cpu_nodes", p.cpu_nodes},
          {"folded_nodes", p.folded_nodes},
          {"fused_nodes", p.fused_nodes},
          {"segments", p.segments},
          {"dispatches", p.dispatches},
          {"captured", p.captured},
          {"replayed", p.replayed},
          {"refreshed", p.refreshed},
          {"refreshed_ahead", p.refreshed_ahead},
          {"refresh_ahead_ms", p.refresh_ahead_ms},
          {"encoded_ahead", p.encoded_ahead},
          {"symbolic_dims", p.symbolic_dims},
          {"guarded_nodes", p.guarded_nodes},
          {"capacity_growths", p.capacity_growths},
          {"appended_outputs", p.appended_outputs},
          {"appended_in_place", p.appended_in_place},
          {"rows_written_in_place", p.rows_written_in_place},
          {"plan_ms", p.plan_ms},
          {"whole_graph_fallback", p.whole_graph_fallback},
          {"fallbacks", fallbacks},
          {"int64", {{"strategy", p.int64_strategy}, {"tensors", p.int64_tensors}, {"on_gpu", p.int64_on_gpu}}},
          {"gpu_buffer_bytes", p.gpu_buffer_bytes},
          {"value_keyed_inputs", p.value_keyed_inputs},
          {"branches_taken", p.branches_taken}};
}

std::string checksum(const Tensor& t) {
  uint64_t h = 1469598103934665603ull;
  if (t.dtype() == DType::String) {
    for (const auto& s : t.string_data())
      for (char c : s) h = (h ^ uint8_t(c)) * 1099511628211ull;
  } else {
    for (std::byte b : t.bytes()) h = (h ^ uint8_t(b)) * 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

nlohmann::json tensor_summary(const std::string& name, const Tensor& t) {
  nlohmann::json j;
  j["name"] = name;
  j["dtype"] = std::string(dtype_name(t.dtype()));
  j["shape"] = t.shape();
  j["checksum"] = checksum(t);
  if (t.dtype() != DType::String) {
    double sum = 0;
    nlohmann::json first = nlohmann::json::array();
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v = t.double_at(i);
      sum += v;
      if (i < 8) {
        if (dtype_is_float(t.dtype())) first.push_back(v);
        else first.push_back(t.int_at(i));
      }
    }
    j["sum"] = sum;
    j["first"] = first;
  }
  return j;
}

}  // namespace onnxgpu::tools
