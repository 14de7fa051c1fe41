"""Session and run options, shaped like onnxruntime's."""
import enum

from . import _onnxgpu as _C


class GraphOptimizationLevel(enum.IntEnum):
    """Accepted and stored for compatibility; onnxgpu always folds constants and shape arithmetic."""
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class ExecutionOrder(enum.IntEnum):
    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


class Int64Policy:
    """How INT64 tensors live on the GPU (C++: onnxgpu::Int64Policy).

    strategy: 'bitcast_to_i32' (default; two 32-bit words per value, exact 64-bit semantics),
              'cast_to_i32' (one i32 per value; a value outside int32 is an error naming the tensor),
              'per_op_optin' (only a few data-movement ops take INT64 on the GPU, the rest fall back).
    fallback_per_op_not_whole_graph: a node the GPU can't run falls back alone (else the whole graph).
    fail_loud: any CPU fallback or INT64 overflow is an error instead.
    """

    def __init__(self, strategy="bitcast_to_i32", fallback_per_op_not_whole_graph=True, fail_loud=False):
        self.strategy = strategy
        self.fallback_per_op_not_whole_graph = fallback_per_op_not_whole_graph
        self.fail_loud = fail_loud

    @property
    def strategy(self):
        return self._strategy

    @strategy.setter
    def strategy(self, value):
        # Canonical name; aliases ('bitcast', 'cast', 'per-op') accepted; InvalidArgument (a ValueError) if unknown.
        self._strategy = _C.parse_int64_strategy(str(value))

    @property
    def fallback_per_op_not_whole_graph(self):
        return self._fallback_per_op

    @fallback_per_op_not_whole_graph.setter
    def fallback_per_op_not_whole_graph(self, value):
        self._fallback_per_op = bool(value)

    @property
    def fail_loud(self):
        return self._fail_loud

    @fail_loud.setter
    def fail_loud(self, value):
        self._fail_loud = bool(value)

    def __eq__(self, other):
        return isinstance(other, Int64Policy) and (self.strategy, self.fallback_per_op_not_whole_graph,
                                                   self.fail_loud) == (other.strategy,
                                                                       other.fallback_per_op_not_whole_graph,
                                                                       other.fail_loud)

    def __repr__(self):
        return (f"Int64Policy(strategy={self.strategy!r}, fallback_per_op_not_whole_graph="
                f"{self.fallback_per_op_not_whole_graph}, fail_loud={self.fail_loud})")

    def _fields(self):
        f = _C._Int64Fields()
        f.strategy = self.strategy
        f.fallback_per_op = self.fallback_per_op_not_whole_graph
        f.fail_loud = self.fail_loud
        return f


def _check_int(name, value, lo=None, hi=None):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ValueError(f"{name} must be in [{lo}, {hi}], got {value}")
    return value


class SessionOptions:
    """onnxruntime.SessionOptions. Config entries ('gpu_graph_capture', 'onnxgpu.int64.strategy',
    'onnxgpu.int64.fail_loud', 'onnxgpu.int64.fallback_per_op', 'onnxgpu.ep', 'onnxgpu.fusion',
    'onnxgpu.profile') are applied by the engine on top of int64_policy; other keys (ORT's 'session.*' ...)
    are accepted and ignored by the engine. graph_optimization_level ORT_DISABLE_ALL turns fusion off.
    intra_op_num_threads sets the CPU kernels' threads (config entry 'onnxgpu.intra_op_num_threads'); the
    other threading, logging, profiling and memory attributes are accepted and stored only."""

    def __init__(self):
        self._config = {}
        self._graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self._log_severity_level = 2
        self._intra = 0
        self._inter = 0
        self._int64_policy = Int64Policy()
        self.log_verbosity_level = 0
        self.logid = ""
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.execution_order = ExecutionOrder.DEFAULT
        self.enable_profiling = False
        self.profile_file_prefix = "onnxruntime_profile_"
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.enable_cpu_mem_arena = True
        self.optimized_model_filepath = ""
        self.use_deterministic_compute = False

    # -- config entries
    def add_session_config_entry(self, key, value):
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError("add_session_config_entry(key: str, value: str)")
        self._config[key] = value

    def get_session_config_entry(self, key):
        if key not in self._config:
            raise RuntimeError(f"SessionOptions does not have configuration with key: {key}")
        return self._config[key]

    def _config_entries(self):
        config = dict(self._config)
        # ORT_DISABLE_ALL: no graph rewrites, so no fused kernels either (unless set explicitly).
        if self._graph_optimization_level == GraphOptimizationLevel.ORT_DISABLE_ALL:
            config.setdefault("onnxgpu.fusion", "0")
        # intra_op_num_threads: the threads of the CPU kernels' library products (0 = the number of cores).
        if self._intra > 0:
            config.setdefault("onnxgpu.intra_op_num_threads", str(self._intra))
        return config

    # -- stored-only attributes, validated like ORT's pybind layer
    @property
    def graph_optimization_level(self):
        return self._graph_optimization_level

    @graph_optimization_level.setter
    def graph_optimization_level(self, value):
        if not isinstance(value, GraphOptimizationLevel):
            try:
                value = GraphOptimizationLevel(value)
            except ValueError:
                raise TypeError(f"graph_optimization_level must be a GraphOptimizationLevel, got {value!r}") from None
        self._graph_optimization_level = value

    @property
    def log_severity_level(self):
        return self._log_severity_level

    @log_severity_level.setter
    def log_severity_level(self, value):
        self._log_severity_level = _check_int("log_severity_level", value, 0, 4)

    @property
    def intra_op_num_threads(self):
        return self._intra

    @intra_op_num_threads.setter
    def intra_op_num_threads(self, value):
        self._intra = _check_int("intra_op_num_threads", value, 0)

    @property
    def inter_op_num_threads(self):
        return self._inter

    @inter_op_num_threads.setter
    def inter_op_num_threads(self, value):
        self._inter = _check_int("inter_op_num_threads", value, 0)

    @property
    def int64_policy(self):
        return self._int64_policy

    @int64_policy.setter
    def int64_policy(self, value):
        if not isinstance(value, Int64Policy):
            raise TypeError(f"int64_policy must be an onnxgpu.Int64Policy, got {type(value).__name__}")
        self._int64_policy = value

    def __repr__(self):
        return (f"SessionOptions(graph_optimization_level={self.graph_optimization_level.name}, "
                f"int64_policy={self.int64_policy!r}, config={self._config!r})")


class RunOptions:
    """onnxruntime.RunOptions: accepted, stored only."""

    def __init__(self):
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.run_tag = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False
        self._config = {}

    def add_run_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key):
        if key not in self._config:
            raise RuntimeError(f"RunOptions does not have configuration with key: {key}")
        return self._config[key]
