// Model fuzz driver, built with AddressSanitizer and UBSan (tests/fuzz/CMakeLists.txt):
//   fuzz_loader [--iterations N] [--seed S] [--run-cpu] SEED_MODEL...
// mutates the seed models deterministically (truncation, bit flips, byte insertion/overwrite/erasure)
// and loads every mutant with loader::load_model_from_bytes. A mutant must either load or throw an
// onnxgpu::Error with a message; any other exception fails the run (exit 1), and memory errors or
// undefined behaviour abort it through the sanitizers. Models that load are walked completely
// (every attribute, tensor and subgraph) so that the sanitizers see their contents. With --run-cpu,
// every mutant that loads is also run on the CPU reference (shape inference, attribute checks and the
// kernels) with generated inputs: it must run or throw an onnxgpu::Error. A mutant whose shapes ask
// for more memory than ASan's max_allocation_size allows counts as rejected (std::bad_alloc).
//
// Built with -DONNXGPU_LIBFUZZER and clang's -fsanitize=fuzzer, the same file is a libFuzzer target.
#include <fcntl.h>
#include <sanitizer/common_interface_defs.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <unordered_map>
#include <string>
#include <typeinfo>
#include <vector>

#include "cpu/graph_runner.h"
#include "ir/graph.h"
#include "loader/model_loader.h"
#include "mutate.h"
#include "onnxgpu/error.h"

namespace {

using onnxgpu::ir::Graph;

// Reads every byte of a tensor, so ASan checks that its storage is really as large as its shape says.
uint64_t touch(const onnxgpu::Tensor& t) {
  uint64_t h = uint64_t(t.numel());
  if (!t.defined()) return h;
  if (t.dtype() == onnxgpu::DType::String) {
    for (const auto& s : t.string_data()) h = h * 31 + s.size();
    return h;
  }
  const auto bytes = t.bytes();
  for (std::byte b : bytes) h = h * 31 + uint64_t(b);
  return h;
}

uint64_t walk(const Graph& g) {
  uint64_t h = g.nodes.size();
  for (const auto& [name, t] : g.initializers) h += touch(t) + name.size();
  for (const auto& n : g.nodes) {
    h = h * 7 + n.describe().size() + n.inputs.size() + n.outputs.size();
    for (const auto& [name, a] : n.attrs) {
      h += touch(a.t) + a.ints.size() + a.floats.size() + a.strings.size() + a.s.size();
      for (const auto& t : a.tensors) h += touch(t);
      if (a.g) h += walk(*a.g);
      for (const auto& sg : a.graphs) h += walk(*sg);
    }
  }
  for (const auto& v : g.inputs) h += v.shape_str().size();
  for (const auto& v : g.outputs) h += v.shape_str().size();
  return h;
}

struct Counts {
  long loaded = 0, rejected = 0, ran = 0, run_rejected = 0, too_large = 0;
};

bool g_run_cpu = false;

// Inputs for every graph input: its declared dtype (float32 when undeclared) and dims (2 where
// symbolic), small deterministic values. False when they would be large (the mutant is not run).
bool make_feeds(const Graph& g, std::unordered_map<std::string, onnxgpu::Tensor>& feeds) {
  using onnxgpu::DType;
  for (const auto& v : g.inputs) {
    if (g.is_initializer(v.name)) continue;
    DType dt = v.dtype == DType::Undefined ? DType::Float32 : v.dtype;
    if (dt == DType::String || onnxgpu::dtype_size(dt) == 0) return false;
    onnxgpu::Shape shape;
    int64_t n = 1;
    for (const auto& d : v.dims) {
      int64_t s = d.concrete() ? d.value : 2;
      if (s < 0 || s > 4096) return false;
      shape.push_back(s);
      n *= s;
      if (n > 4096) return false;
    }
    onnxgpu::Tensor t(DType::Int64, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = (i * 7 + 3) % 5 - 1;
    feeds[v.name] = t.cast(dt);
  }
  return true;
}

// Runs a loaded mutant on the CPU reference. False when it misbehaved.
bool run_cpu(const onnxgpu::ir::Model& m, Counts& c, uint64_t& sink) {
  std::unordered_map<std::string, onnxgpu::Tensor> feeds;
  if (!make_feeds(m.graph, feeds)) return true;
  try {
    for (const auto& t : onnxgpu::cpu::run_graph(m.graph, m.opsets, feeds)) sink += touch(t);
    ++c.ran;
  } catch (const onnxgpu::Error& e) {
    ++c.run_rejected;
    if (std::strlen(e.what()) == 0) {
      std::fprintf(stderr, "the CPU reference threw an onnxgpu::Error without a message\n");
      return false;
    }
  } catch (const std::bad_alloc&) {
    ++c.too_large;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "the CPU reference threw %s (not an onnxgpu::Error): %s\n", typeid(e).name(), e.what());
    return false;
  }
  return true;
}

// Returns false when the loader (or, with --run-cpu, the CPU reference) misbehaved: an exception that
// is not an onnxgpu::Error, or an Error without a message.
bool load_one(const std::string& bytes, Counts& c, uint64_t& sink) {
  try {
    onnxgpu::ir::Model m = onnxgpu::loader::load_model_from_bytes(bytes);
    sink += walk(m.graph);
    ++c.loaded;
    if (g_run_cpu) return run_cpu(m, c, sink);
  } catch (const onnxgpu::Error& e) {
    ++c.rejected;
    if (std::strlen(e.what()) == 0) {
      std::fprintf(stderr, "an onnxgpu::Error without a message\n");
      return false;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "the loader threw %s (not an onnxgpu::Error): %s\n", typeid(e).name(), e.what());
    return false;
  }
  return true;
}

void dump(const std::string& bytes, const char* path) {
  if (FILE* f = std::fopen(path, "wb")) {
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
    std::fprintf(stderr, "the failing input is in %s (%zu bytes)\n", path, bytes.size());
  }
}

// The mutant being loaded, written out when a sanitizer stops the run: ASan calls its death callback;
// UBSan (a separate runtime with GCC) aborts (UBSAN_OPTIONS=abort_on_error=1), caught as SIGABRT.
const std::string* g_current = nullptr;
constexpr const char* kFailurePath = "fuzz_loader_failure.onnx";
void dump_current() {
  if (g_current) dump(*g_current, kFailurePath);
}
void on_abort(int) {
  if (g_current) {  // async-signal-safe calls only
    int fd = ::open(kFailurePath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ssize_t unused = ::write(fd, g_current->data(), g_current->size());
      (void)unused;
      ::close(fd);
      const char msg[] = "the failing input is in fuzz_loader_failure.onnx\n";
      unused = ::write(2, msg, sizeof msg - 1);
    }
  }
  std::signal(SIGABRT, SIG_DFL);
  std::raise(SIGABRT);
}

}  // namespace

#ifdef ONNXGPU_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Counts c;
  uint64_t sink = 0;
  if (!load_one(std::string(reinterpret_cast<const char*>(data), size), c, sink)) std::abort();
  return 0;
}
#else
int main(int argc, char** argv) {
  long iterations = 20000;
  uint64_t seed = 1;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--iterations" && i + 1 < argc) iterations = std::atol(argv[++i]);
    else if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--run-cpu") g_run_cpu = true;
    else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "usage: %s [--iterations N] [--seed S] [--run-cpu] SEED_MODEL...\n", argv[0]);
      return 2;
    } else paths.push_back(a);
  }
  std::vector<std::string> models;
  for (const auto& p : paths) {
    std::string bytes = onnxgpu::fuzz::read_bytes(p);
    if (bytes.empty()) {
      std::fprintf(stderr, "cannot read seed model %s\n", p.c_str());
      return 2;
    }
    models.push_back(std::move(bytes));
  }
  if (models.empty()) {
    std::fprintf(stderr, "no seed models given\n");
    return 2;
  }

  __sanitizer_set_death_callback(dump_current);
  std::signal(SIGABRT, on_abort);
  Counts c;
  uint64_t sink = 0;
  onnxgpu::fuzz::Rng rng(seed);
  // The seeds themselves must load.
  for (size_t k = 0; k < models.size(); ++k) {
    Counts seed_counts;
    g_current = &models[k];
    if (!load_one(models[k], seed_counts, sink) || seed_counts.loaded != 1) {
      std::fprintf(stderr, "seed model %s does not load\n", paths[k].c_str());
      return 1;
    }
  }
  for (long i = 0; i < iterations; ++i) {
    size_t k = size_t(i) % models.size();
    std::string bytes = onnxgpu::fuzz::mutate(models[k], rng);
    // Now and then stack a second mutation on top.
    if (rng.below(4) == 0) bytes = onnxgpu::fuzz::mutate(bytes, rng);
    g_current = &bytes;
    if (!load_one(bytes, c, sink)) {
      std::fprintf(stderr, "iteration %ld (seed model %s)\n", i, paths[k].c_str());
      dump(bytes, kFailurePath);
      return 1;
    }
    g_current = nullptr;
  }
  std::printf("fuzz_loader: %ld mutants of %zu seed models: %ld loaded, %ld rejected (checksum %llx)\n", iterations,
              models.size(), c.loaded, c.rejected, static_cast<unsigned long long>(sink));
  if (g_run_cpu)
    std::printf("fuzz_loader: on the CPU reference %ld ran, %ld rejected with an error, %ld too large for the allocator\n",
                c.ran, c.run_rejected, c.too_large);
  return 0;
}
#endif
