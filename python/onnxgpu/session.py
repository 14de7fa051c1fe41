"""InferenceSession, shaped like onnxruntime.InferenceSession."""
import atexit
import os
import threading
import warnings
import weakref

import numpy as np

from . import _onnxgpu as _C
from .io_binding import IOBinding, OrtValue, _release_device_values
from .options import RunOptions, SessionOptions

# ORT provider name -> onnxgpu execution provider ("ep"), in the order a session prefers them.
_PROVIDERS = {
    "WebGpuExecutionProvider": "webgpu",
    "CPUExecutionProvider": "cpu",
}
_EP_PROVIDER = {ep: name for name, ep in _PROVIDERS.items()}

# WebGPU provider options -> session config entries (applied after the session's own entries).
_WEBGPU_OPTIONS = {
    "enableGraphCapture": "gpu_graph_capture",
    "int64_strategy": "onnxgpu.int64.strategy",
    "fail_loud": "onnxgpu.int64.fail_loud",
    "fallback_per_op": "onnxgpu.int64.fallback_per_op",
}
# ORT WebGPU options that have no meaning here: accepted silently.
_WEBGPU_IGNORED = {"deviceId", "preferredLayout", "storageBufferCacheMode", "uniformBufferCacheMode",
                   "queryResolveBufferCacheMode", "defaultBufferCacheMode", "validationMode",
                   "forceCpuNodeNames", "enablePIXCapture"}


def get_available_providers():
    """The execution providers this build has, best first (like onnxruntime.get_available_providers)."""
    return list(_PROVIDERS)


def get_device():
    return "WEBGPU"


class NodeArg:
    """A graph input or output: name, type ('tensor(int64)') and shape (ints, symbolic dims as str,
    None for an unnamed unknown dim; [] when the rank is unknown), like onnxruntime.NodeArg."""
    __slots__ = ("name", "type", "shape")

    def __init__(self, name, type, shape):
        self.name = name
        self.type = type
        self.shape = shape

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


class ModelMetadata:
    """What the model file says of itself, like onnxruntime.ModelMetadata: producer_name, graph_name,
    domain, description (the model's doc string), graph_description, version and custom_metadata_map
    (its metadata_props)."""
    __slots__ = ("producer_name", "graph_name", "domain", "description", "graph_description", "version",
                 "custom_metadata_map")

    def __init__(self, fields):
        for k in self.__slots__:
            setattr(self, k, fields[k])

    def __repr__(self):
        return f"ModelMetadata(producer_name={self.producer_name!r}, graph_name={self.graph_name!r}, version={self.version})"


def _normalize_providers(providers, provider_options):
    """[(name, {str: str})] in the caller's order; ValueError/TypeError like ORT."""
    if providers is None or len(providers) == 0:
        if provider_options:
            raise ValueError("'provider_options' was given without 'providers'")
        return [(name, {}) for name in get_available_providers()]
    if isinstance(providers, str):
        providers = [providers]
    if provider_options is not None and len(provider_options) != len(providers):
        raise ValueError("'providers' and 'provider_options' should be the same length if both are given")
    out, seen = [], set()
    for i, p in enumerate(providers):
        if isinstance(p, (tuple, list)):
            if len(p) != 2 or not isinstance(p[0], str) or not isinstance(p[1], dict):
                raise ValueError(f"provider tuple must be (name: str, options: dict), got {p!r}")
            if provider_options is not None:
                raise ValueError("'provider_options' must not be given when 'providers' has (name, options) tuples")
            name, opts = p
        elif isinstance(p, str):
            name, opts = p, (provider_options[i] if provider_options is not None else {})
        else:
            raise TypeError(f"a provider must be a name or a (name, options) tuple, got {type(p).__name__}")
        if name not in _PROVIDERS:
            raise ValueError(f"Unknown execution provider '{name}'. Available providers: "
                             f"{', '.join(get_available_providers())}")
        if name in seen:
            raise ValueError(f"Duplicate provider '{name}' encountered.")
        if not isinstance(opts, dict):
            raise TypeError(f"options of provider '{name}' must be a dict, got {type(opts).__name__}")
        seen.add(name)
        out.append((name, {str(k): str(v) for k, v in opts.items()}))
    return out


def _provider_config(name, opts):
    """Session config entries for the chosen provider's options."""
    config = {}
    if name == "WebGpuExecutionProvider":
        for k, v in opts.items():
            if k in _WEBGPU_OPTIONS:
                config[_WEBGPU_OPTIONS[k]] = v
            elif k not in _WEBGPU_IGNORED:
                warnings.warn(f"WebGpuExecutionProvider option '{k}' is not known to onnxgpu and is ignored "
                              f"(known: {', '.join(sorted(_WEBGPU_OPTIONS))})", stacklevel=4)
    return config


def _as_array(name, value):
    if isinstance(value, OrtValue):
        value = value.numpy()
    arr = np.asarray(value)
    if arr.dtype.byteorder not in ("=", "|"):  # non-native byte order: the engine reads native words
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


_live_sessions = weakref.WeakSet()
_live_lock = threading.Lock()


@atexit.register
def _close_all_sessions():
    # Every GPU device must be destroyed before the process exits (SwiftShader crashes otherwise):
    # release the GPU values and close the sessions the program still holds.
    _release_device_values()
    with _live_lock:
        sessions = list(_live_sessions)
    for s in sessions:
        s._close()


class InferenceSession:
    """onnxruntime.InferenceSession on onnxgpu.

    path_or_bytes: model file path or the serialized model.
    sess_options: SessionOptions (config entries, int64_policy).
    providers: names or (name, options) tuples; the first one listed is used. None = best available
               (WebGPU). 'CPUExecutionProvider' runs onnxgpu's CPU reference.
    provider_options: one dict per provider name (or use tuples). WebGPU options: 'enableGraphCapture'
               ('1'/'0'), 'int64_strategy', 'fail_loud', 'fallback_per_op'.
    """

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        if isinstance(path_or_bytes, (str, os.PathLike)):
            self._model_path, self._model_bytes = os.fspath(path_or_bytes), None
        elif isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._model_path, self._model_bytes = None, bytes(path_or_bytes)
        else:
            raise TypeError(f"Unable to load from type '{type(path_or_bytes)}'")
        if sess_options is None:
            sess_options = SessionOptions()
        elif not isinstance(sess_options, SessionOptions):
            raise TypeError(f"sess_options must be an onnxgpu.SessionOptions, got {type(sess_options).__name__}")
        self._sess_options = sess_options
        self._sess = None
        self._create(providers, provider_options)

    def _create(self, providers, provider_options):
        normalized = _normalize_providers(providers, provider_options)
        name, opts = normalized[0]
        config = self._sess_options._config_entries()
        config.update(_provider_config(name, opts))
        model = self._model_path if self._model_bytes is None else self._model_bytes
        sess = _C.Session(model, _PROVIDERS[name], None, self._sess_options.int64_policy._fields(), config)
        if self._sess is not None:
            self._sess.close()
        self._sess = sess
        self._options = sess.options()
        self._provider_options = {name: opts}
        self._inputs_meta = [NodeArg(*t) for t in sess.inputs()]
        self._outputs_meta = [NodeArg(*t) for t in sess.outputs()]
        for meta in self._inputs_meta + self._outputs_meta:
            if meta.shape is None:
                meta.shape = []
        with _live_lock:
            _live_sessions.add(self)

    def _close(self):
        if self._sess is not None:
            self._sess.close()

    # -- metadata
    def get_inputs(self):
        return list(self._inputs_meta)

    def get_outputs(self):
        return list(self._outputs_meta)

    def get_modelmeta(self):
        return ModelMetadata(self._sess.metadata())

    def get_overridable_initializers(self):
        return []

    def get_providers(self):
        """The providers in use: WebGPU lists the CPU too, which runs the nodes the GPU can't."""
        provider = _EP_PROVIDER[self._options["ep"]]
        return [provider, "CPUExecutionProvider"] if provider != "CPUExecutionProvider" else [provider]

    def get_provider_options(self):
        return {k: dict(v) for k, v in self._provider_options.items()}

    def get_session_options(self):
        return self._sess_options

    def set_providers(self, providers=None, provider_options=None):
        """Recreates the session with other providers (like ORT)."""
        self._create(providers, provider_options)

    def end_profiling(self):
        return ""

    def get_capture_plan(self):
        """The plan of the last run: where each node ran, captured segments, fallbacks, INT64 placement:
        {ep, signature, nodes, gpu_nodes, cpu_nodes, folded_nodes, segments, dispatches, captured,
         replayed, whole_graph_fallback, fallbacks: [{node, op, reason, dtypes}],
         int64: {strategy, tensors, on_gpu}, gpu_buffer_bytes}."""
        return self._sess.last_plan()

    # -- running
    def _feeds(self, input_feed):
        if not isinstance(input_feed, dict):
            raise TypeError(f"input_feed must be a dict of name -> numpy array, got {type(input_feed).__name__}")
        return {str(k): _as_array(k, v) for k, v in input_feed.items()}

    def _select(self, output_names, outputs):
        if not output_names:
            return outputs
        index = {m.name: i for i, m in enumerate(self._outputs_meta)}
        picked = []
        for n in output_names:
            if n not in index:
                raise _C.InvalidArgument(f"output '{n}' is not an output of the model (its outputs: "
                                         f"{', '.join(index)})")
            picked.append(outputs[index[n]])
        return picked

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model: returns the requested outputs (all when output_names is None or empty) as numpy
        arrays. The GIL is released while the model runs; a session may be used from several threads."""
        if run_options is not None and not isinstance(run_options, RunOptions):
            raise TypeError(f"run_options must be an onnxgpu.RunOptions, got {type(run_options).__name__}")
        if output_names is not None and isinstance(output_names, str):
            raise TypeError("output_names must be a list of names or None")
        return self._select(output_names, self._sess.run(self._feeds(input_feed)))

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None):
        return [OrtValue(a) for a in self.run(output_names, input_dict_ort_values, run_options)]

    def _run_on_device(self, output_names, inputs):
        """IO binding on the GPU: [OrtValue on 'webgpu'] for output_names (all when empty)."""
        host, device = {}, {}
        for k, v in inputs.items():
            if isinstance(v, OrtValue) and v._gpu is None and v.device_name() == "webgpu":
                # A host array placed on 'webgpu' (ortvalue_from_numpy): copied to the GPU at its first
                # run, then fed from there, as ONNX Runtime's GPU OrtValue is.
                v._place(self._sess.to_device(str(k), _as_array(k, v._array)))
            if isinstance(v, OrtValue) and v._gpu is not None:
                device[str(k)] = v._gpu
            else:
                host[str(k)] = _as_array(k, v)
        values = self._sess.run_on_device(host, device)
        return [OrtValue(_gpu=v) for v in self._select(output_names, values)]

    def io_binding(self):
        return IOBinding(self)

    def run_with_iobinding(self, iobinding, run_options=None):
        iobinding._run(run_options)
