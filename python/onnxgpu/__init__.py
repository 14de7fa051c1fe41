"""onnxgpu: run ONNX models on WebGPU (Dawn) with graph capture and exact INT64, through
ONNX Runtime's Python API:

    import onnxgpu as ort
    so = ort.SessionOptions()
    so.add_session_config_entry("gpu_graph_capture", "1")
    sess = ort.InferenceSession("model.onnx", so, providers=["WebGpuExecutionProvider"])
    logits, = sess.run(None, {"input_ids": ids})
    sess.get_capture_plan()   # where each node ran, captured segments, INT64 placement
"""
try:
    from . import _onnxgpu
except ImportError as e:  # pragma: no cover
    raise ImportError(f"onnxgpu: the native module _onnxgpu is missing or broken ({e}). Build it (scripts/build, "
                      "then PYTHONPATH=build/python) or `pip install .` from the repository root.") from e

from ._onnxgpu import GpuError, InvalidArgument, NotImplemented, OnnxGpuError  # noqa: A004
from .io_binding import IOBinding, OrtValue
from .options import (ExecutionMode, ExecutionOrder, GraphOptimizationLevel, Int64Policy, RunOptions,
                      SessionOptions)
from .session import InferenceSession, ModelMetadata, NodeArg, get_available_providers, get_device

SessionIOBinding = IOBinding
__version__ = "0.1.0"

__all__ = [
    "InferenceSession", "SessionOptions", "RunOptions", "GraphOptimizationLevel", "ExecutionMode",
    "ExecutionOrder", "Int64Policy", "ModelMetadata", "NodeArg", "OrtValue", "IOBinding", "SessionIOBinding",
    "get_available_providers", "get_device", "OnnxGpuError", "InvalidArgument", "GpuError",
]
