// The `onnxgpu._onnxgpu` extension: a thin layer over onnxgpu::Session. ONNX Runtime's API shape
// (SessionOptions, providers, NodeArg, ...) is written in Python on top of this (python/onnxgpu/).
//
// Threads: run() releases the GIL. Every WebGPU session shares one process-wide webgpu::Device,
// which is not thread-safe (buffer pool, pipeline cache, staging buffer, queue). The engine locks
// runtime::device_mutex() for runs, last_plan and executor destruction; creating a session (which
// may create the shared device) is not covered. So every operation of a WebGPU session here (create,
// run, last_plan, destroy) also holds gpu_mutex(), always taken before the engine's device mutex.
// CPU sessions run in parallel.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "onnxgpu/error.h"
#include "onnxgpu/int64_policy.h"
#include "onnxgpu/session.h"
#include "onnxgpu/tensor.h"

namespace py = pybind11;
using namespace onnxgpu;

namespace {

// Never destroyed: sessions may still be released while the interpreter shuts down.
std::mutex& gpu_mutex() {
  static auto* m = new std::mutex;
  return *m;
}

// ---- numpy <-> Tensor ----------------------------------------------------------------------------

// The numpy dtype of a DType (bfloat16 has none: it is returned as float32; the narrow types, below).
py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::Float32: return py::dtype("float32");
    case DType::Float64: return py::dtype("float64");
    case DType::Float16: return py::dtype("float16");
    case DType::Int8: return py::dtype("int8");
    case DType::UInt8: return py::dtype("uint8");
    case DType::Int16: return py::dtype("int16");
    case DType::UInt16: return py::dtype("uint16");
    case DType::Int32: return py::dtype("int32");
    case DType::UInt32: return py::dtype("uint32");
    case DType::Int64: return py::dtype("int64");
    case DType::UInt64: return py::dtype("uint64");
    case DType::Bool: return py::dtype("bool");
    default: throw NotImplemented("no numpy dtype for " + std::string(dtype_name(t)));
  }
}

// The DType of a numpy array, or Undefined (kind + itemsize, so platform aliases all map).
DType dtype_of_numpy(const py::dtype& d) {
  char kind = d.kind();
  size_t size = size_t(d.itemsize());
  if (kind == 'b' && size == 1) return DType::Bool;
  if (kind == 'f') {
    if (size == 2) return DType::Float16;
    if (size == 4) return DType::Float32;
    if (size == 8) return DType::Float64;
  }
  if (kind == 'i') {
    if (size == 1) return DType::Int8;
    if (size == 2) return DType::Int16;
    if (size == 4) return DType::Int32;
    if (size == 8) return DType::Int64;
  }
  if (kind == 'u') {
    if (size == 1) return DType::UInt8;
    if (size == 2) return DType::UInt16;
    if (size == 4) return DType::UInt32;
    if (size == 8) return DType::UInt64;
  }
  if (kind == 'U' || kind == 'S' || kind == 'O') return DType::String;
  return DType::Undefined;
}

Tensor tensor_from_numpy(const std::string& name, const py::handle& obj) {
  py::array arr = py::array::ensure(obj);
  if (!arr) throw InvalidArgument("input '" + name + "': expected a numpy array");
  DType dt = dtype_of_numpy(arr.dtype());
  Shape shape(arr.shape(), arr.shape() + arr.ndim());
  if (dt == DType::Undefined)
    throw InvalidArgument("input '" + name + "': numpy dtype " + std::string(py::str(arr.dtype())) +
                          " has no ONNX tensor type");
  if (dt == DType::String) {
    std::vector<std::string> values;
    py::object flat = arr.attr("reshape")(-1);
    for (py::handle v : flat) {
      if (py::isinstance<py::bytes>(v)) values.push_back(v.cast<std::string>());
      else values.push_back(py::str(v).cast<std::string>());
    }
    return Tensor::strings(std::move(shape), std::move(values));
  }
  py::array c = py::array::ensure(arr, py::array::c_style);  // same dtype, contiguous
  Tensor t(dt, shape);
  if (t.nbytes() != 0) std::memcpy(t.raw(), c.data(), t.nbytes());
  return t;
}

// A new numpy array with a copy of the tensor's data. (Not a view: an output's storage may be shared
// with another output or with the session itself, e.g. an initializer that is a graph output.)
py::array numpy_from_tensor(const Tensor& t) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  if (t.dtype() == DType::String) {
    py::array out(py::dtype("O"), shape);
    py::object flat = out.attr("reshape")(-1);  // a view
    for (size_t i = 0; i < t.string_data().size(); ++i) flat[py::int_(i)] = py::str(t.string_data()[i]);
    return out;
  }
  if (t.dtype() == DType::BFloat16) return numpy_from_tensor(t.cast(DType::Float32));
  if (dtype_is_narrow(t.dtype())) {  // numpy has none: float8 / float4 as float32, int4 / int2 as int8, uint4 / uint2 as uint8
    const DType as = dtype_is_narrow_float(t.dtype()) ? DType::Float32
                     : (t.dtype() == DType::Int4 || t.dtype() == DType::Int2) ? DType::Int8 : DType::UInt8;
    Tensor v(as, t.shape());
    const uint8_t* codes = static_cast<const uint8_t*>(t.raw());
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double x = narrow_to_double(t.dtype(), codes[i]);
      if (as == DType::Float32) v.data<float>()[i] = float(x);
      else if (as == DType::Int8) v.data<int8_t>()[i] = int8_t(x);
      else v.data<uint8_t>()[i] = uint8_t(x);
    }
    return numpy_from_tensor(v);
  }
  py::array out(numpy_dtype(t.dtype()), shape);
  if (t.nbytes() != 0) std::memcpy(out.mutable_data(), t.raw(), t.nbytes());
  return out;
}

// ---- the session ---------------------------------------------------------------------------------

py::dict plan_dict(const PlanReport& r) {
  py::list fallbacks;
  for (const auto& f : r.fallbacks) {
    py::dict d;
    d["node"] = f.node;
    d["op"] = f.op;
    d["reason"] = f.reason;
    d["dtypes"] = f.dtypes;
    fallbacks.append(d);
  }
  py::dict int64;
  int64["strategy"] = r.int64_strategy;
  int64["tensors"] = r.int64_tensors;
  int64["on_gpu"] = r.int64_on_gpu;
  py::dict d;
  d["ep"] = r.ep;
  d["adapter"] = r.adapter;
  d["signature"] = r.signature;
  d["nodes"] = r.nodes;
  d["gpu_nodes"] = r.gpu_nodes;
  d["cpu_nodes"] = r.cpu_nodes;
  d["folded_nodes"] = r.folded_nodes;
  d["fused_nodes"] = r.fused_nodes;
  d["segments"] = r.segments;
  d["dispatches"] = r.dispatches;
  d["captured"] = r.captured;
  d["replayed"] = r.replayed;
  d["refreshed"] = r.refreshed;
  d["refreshed_ahead"] = r.refreshed_ahead;
  d["refresh_ahead_ms"] = r.refresh_ahead_ms;
  d["encoded_ahead"] = r.encoded_ahead;
  d["symbolic_dims"] = r.symbolic_dims;
  d["guarded_nodes"] = r.guarded_nodes;
  d["capacity_growths"] = r.capacity_growths;
  d["appended_outputs"] = r.appended_outputs;
  d["rows_written_in_place"] = r.rows_written_in_place;
  d["appended_in_place"] = r.appended_in_place;
  d["plan_ms"] = r.plan_ms;
  d["whole_graph_fallback"] = r.whole_graph_fallback;
  d["fallbacks"] = fallbacks;
  d["int64"] = int64;
  d["gpu_buffer_bytes"] = r.gpu_buffer_bytes;
  d["value_keyed_inputs"] = r.value_keyed_inputs;
  d["branches_taken"] = r.branches_taken;
  return d;
}

py::tuple info_tuple(const TensorInfo& t) {
  // (name, type, shape): shape is None when unknown, else one entry per dim: int, str or None.
  py::object shape = py::none();
  if (t.has_shape) {
    py::list dims;
    for (size_t i = 0; i < t.shape.size(); ++i) {
      if (t.shape[i] >= 0) dims.append(py::int_(t.shape[i]));
      else if (i < t.dim_params.size() && !t.dim_params[i].empty()) dims.append(py::str(t.dim_params[i]));
      else dims.append(py::none());
    }
    shape = dims;
  }
  std::string type = t.dtype == DType::Undefined ? std::string("tensor(undefined)") : std::string(dtype_onnx_name(t.dtype));
  return py::make_tuple(t.name, type, shape);
}

struct Int64Fields {
  std::string strategy = "bitcast_to_i32";
  bool fallback_per_op = true;
  bool fail_loud = false;
};

// A tensor left in GPU memory by run_on_device (IO binding). Its storage locks the engine's device
// mutex itself when it is read back or released.
class PyDeviceValue {
 public:
  explicit PyDeviceValue(DeviceTensor t) : t_(std::move(t)) {}
  const DeviceTensor& get() const {
    if (!t_.defined()) throw InvalidArgument("the GPU tensor was released");
    return t_;
  }
  std::vector<int64_t> shape() const { return get().shape(); }
  std::string type() const { return std::string(dtype_onnx_name(get().dtype())); }
  py::array to_numpy() const {
    DeviceTensor t = get();
    Tensor host;
    {
      py::gil_scoped_release nogil;
      host = t.to_host();
    }
    return numpy_from_tensor(host);
  }
  void release() { t_ = DeviceTensor(); }
  bool alive() const { return t_.defined(); }

 private:
  DeviceTensor t_;
};

// Deletes a session; a WebGPU session returns its buffers to the shared device (and may destroy
// it), so that takes gpu_mutex(). Never called while gpu_mutex() is held.
void delete_session(Session* s, bool gpu) {
  std::unique_lock<std::mutex> lock(gpu_mutex(), std::defer_lock);
  if (gpu) lock.lock();
  delete s;
}

class PySession {
 public:
  PySession(const py::object& model, const std::string& ep, std::optional<bool> capture, const Int64Fields& int64,
            const std::map<std::string, std::string>& config) {
    SessionOptions o;
    o.ep = ep;
    if (capture) o.capture = *capture;
    o.int64.strategy = Int64Policy::parse_strategy(int64.strategy);
    o.int64.fallback_per_op_not_whole_graph = int64.fallback_per_op;
    o.int64.fail_loud = int64.fail_loud;
    o.config = config;
    bool from_bytes = py::isinstance<py::bytes>(model);
    std::string arg = model.cast<std::string>();
    Session* created = nullptr;
    {
      py::gil_scoped_release nogil;
      // Creating a WebGPU session may create the shared device (the config entries decide the EP).
      std::lock_guard<std::mutex> lock(gpu_mutex());
      created = new Session(from_bytes ? Session::from_bytes(arg, std::move(o)) : Session(arg, std::move(o)));
    }
    bool gpu = created->options().ep == "webgpu";
    gpu_ = gpu;
    session_ = std::shared_ptr<Session>(created, [gpu](Session* s) { delete_session(s, gpu); });
  }

  // Called with the GIL held. A run in flight on another thread keeps its own reference: the
  // session is deleted when that run ends.
  void close() { session_.reset(); }

  std::shared_ptr<Session> session() const {
    if (!session_) throw InvalidArgument("the session was closed");
    return session_;
  }

  py::list run(const py::dict& feed_dict) {
    std::shared_ptr<Session> s = session();  // outlives the lock below
    std::unordered_map<std::string, Tensor> feeds;
    for (auto [k, v] : feed_dict) {
      std::string name = py::str(k);
      feeds[name] = tensor_from_numpy(name, v);
    }
    std::vector<Tensor> outs;
    {
      py::gil_scoped_release nogil;
      std::unique_lock<std::mutex> lock(gpu_mutex(), std::defer_lock);
      if (gpu_) lock.lock();
      outs = s->run(feeds);
    }
    py::list result;
    for (const auto& t : outs) result.append(numpy_from_tensor(t));
    return result;
  }

  // IO binding: host feeds and GPU feeds in, every output left on the GPU.
  py::list run_on_device(const py::dict& feed_dict, const py::dict& device_feed_dict) {
    std::shared_ptr<Session> s = session();
    std::unordered_map<std::string, Tensor> feeds;
    for (auto [k, v] : feed_dict) {
      std::string name = py::str(k);
      feeds[name] = tensor_from_numpy(name, v);
    }
    std::unordered_map<std::string, DeviceTensor> device_feeds;
    for (auto [k, v] : device_feed_dict) device_feeds[py::str(k)] = v.cast<const PyDeviceValue&>().get();
    std::vector<DeviceTensor> outs;
    {
      py::gil_scoped_release nogil;
      std::unique_lock<std::mutex> lock(gpu_mutex(), std::defer_lock);
      if (gpu_) lock.lock();
      outs = s->run_on_device(feeds, device_feeds);
    }
    py::list result;
    for (auto& t : outs) result.append(py::cast(PyDeviceValue(std::move(t))));
    return result;
  }

  // IO binding: a host array copied into GPU memory once (an input bound to the GPU).
  PyDeviceValue to_device(const std::string& name, const py::object& array) {
    std::shared_ptr<Session> s = session();
    Tensor t = tensor_from_numpy(name, array);
    DeviceTensor d;
    {
      py::gil_scoped_release nogil;
      std::unique_lock<std::mutex> lock(gpu_mutex(), std::defer_lock);
      if (gpu_) lock.lock();
      d = s->to_device(t);
    }
    return PyDeviceValue(std::move(d));
  }

  py::dict last_plan() {
    std::shared_ptr<Session> s = session();
    PlanReport copy;
    {
      py::gil_scoped_release nogil;
      std::unique_lock<std::mutex> lock(gpu_mutex(), std::defer_lock);
      if (gpu_) lock.lock();
      copy = s->last_plan();
    }
    return plan_dict(copy);
  }

  py::list infos(bool inputs) {
    std::shared_ptr<Session> s = session();
    py::list l;
    for (const auto& t : inputs ? s->inputs() : s->outputs()) l.append(info_tuple(t));
    return l;
  }

  py::dict metadata() {
    std::shared_ptr<Session> s = session();
    const ModelMetadata m = s->metadata();
    py::dict d;
    d["producer_name"] = m.producer_name;
    d["graph_name"] = m.graph_name;
    d["domain"] = m.domain;
    d["description"] = m.description;
    d["graph_description"] = m.graph_description;
    d["version"] = m.version;
    d["custom_metadata_map"] = m.custom_metadata_map;
    return d;
  }

  py::dict options() {
    std::shared_ptr<Session> s = session();
    const SessionOptions& o = s->options();
    py::dict d;
    d["ep"] = o.ep;
    d["capture"] = o.capture;
    d["int64_strategy"] = Int64Policy::strategy_name(o.int64.strategy);
    d["fallback_per_op_not_whole_graph"] = o.int64.fallback_per_op_not_whole_graph;
    d["fail_loud"] = o.int64.fail_loud;
    d["config"] = o.config;
    return d;
  }

 private:
  std::shared_ptr<Session> session_;
  bool gpu_ = false;
};

// Python exception classes, created once and never released.
struct Errors {
  PyObject* base = nullptr;
  PyObject* invalid = nullptr;
  PyObject* not_implemented = nullptr;
  PyObject* gpu = nullptr;
};
Errors& errors() {
  static auto* e = new Errors;
  return *e;
}

PyObject* make_error(py::module_& m, const char* name, py::tuple bases, const char* doc) {
  py::dict ns;
  ns["__module__"] = "onnxgpu";
  ns["__doc__"] = doc;
  py::object cls = py::module_::import("builtins").attr("type")(name, bases, ns);
  m.attr(name) = cls;
  return cls.release().ptr();
}

}  // namespace

PYBIND11_MODULE(_onnxgpu, m) {
  m.doc() = "onnxgpu native layer (use the onnxgpu package)";

  Errors& e = errors();
  e.base = make_error(m, "OnnxGpuError", py::make_tuple(py::handle(PyExc_RuntimeError)),
                      "An error raised by the onnxgpu engine; the message names the node, op or tensor.");
  e.invalid = make_error(m, "InvalidArgument", py::make_tuple(py::handle(e.base), py::handle(PyExc_ValueError)),
                         "Bad model or bad input (malformed file, wrong dtype or shape, missing input...).");
  e.not_implemented =
      make_error(m, "NotImplemented", py::make_tuple(py::handle(e.base), py::handle(PyExc_NotImplementedError)),
                 "An op, attribute or dtype outside what the engine implements.");
  e.gpu = make_error(m, "GpuError", py::make_tuple(py::handle(e.base)),
                     "A failure reported by the GPU layer (Dawn validation, device loss, out of memory...).");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InvalidArgument& x) {
      PyErr_SetString(errors().invalid, x.what());
    } catch (const NotImplemented& x) {
      PyErr_SetString(errors().not_implemented, x.what());
    } catch (const GpuError& x) {
      PyErr_SetString(errors().gpu, x.what());
    } catch (const Error& x) {
      PyErr_SetString(errors().base, x.what());
    }
  });

  py::class_<Int64Fields>(m, "_Int64Fields")
      .def(py::init<>())
      .def_readwrite("strategy", &Int64Fields::strategy)
      .def_readwrite("fallback_per_op", &Int64Fields::fallback_per_op)
      .def_readwrite("fail_loud", &Int64Fields::fail_loud);

  py::class_<PyDeviceValue>(m, "DeviceValue")
      .def_property_readonly("shape", &PyDeviceValue::shape)
      .def_property_readonly("type", &PyDeviceValue::type)
      .def_property_readonly("alive", &PyDeviceValue::alive)
      .def("to_numpy", &PyDeviceValue::to_numpy, "Reads the tensor back into a new numpy array.")
      .def("release", &PyDeviceValue::release, "Returns the GPU buffer now.");

  py::class_<PySession>(m, "Session")
      .def(py::init<const py::object&, const std::string&, std::optional<bool>, const Int64Fields&,
                    const std::map<std::string, std::string>&>(),
           py::arg("model"), py::arg("ep"), py::arg("capture"), py::arg("int64"), py::arg("config"))
      .def("run", &PySession::run, py::arg("feeds"), "Runs the model; returns every output, in graph order.")
      .def("run_on_device", &PySession::run_on_device, py::arg("feeds"), py::arg("device_feeds"))
      .def("to_device", &PySession::to_device, py::arg("name"), py::arg("array"),
           "Copies a host array into GPU memory once, to feed runs as a device input.")
      .def("last_plan", &PySession::last_plan)
      .def("inputs", [](PySession& s) { return s.infos(true); })
      .def("outputs", [](PySession& s) { return s.infos(false); })
      .def("options", &PySession::options)
      .def("metadata", &PySession::metadata)
      .def("close", &PySession::close);

  m.def("parse_int64_strategy",
        [](const std::string& s) { return std::string(Int64Policy::strategy_name(Int64Policy::parse_strategy(s))); },
        "The canonical name of an INT64 strategy (aliases accepted); InvalidArgument when unknown.");
  m.def(
      "_roundtrip", [](const py::object& a) { return numpy_from_tensor(tensor_from_numpy("a", a)); },
      "numpy -> Tensor -> numpy (for tests).");
}
