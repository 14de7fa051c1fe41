"""C++ errors surface as onnxgpu exceptions with the engine's message."""
import numpy as np
import pytest

import onnxgpu

PROVIDERS = ["WebGpuExecutionProvider", "CPUExecutionProvider"]


def test_hierarchy():
    assert issubclass(onnxgpu.OnnxGpuError, RuntimeError)
    assert issubclass(onnxgpu.InvalidArgument, onnxgpu.OnnxGpuError)
    assert issubclass(onnxgpu.InvalidArgument, ValueError)
    assert issubclass(onnxgpu.NotImplemented, onnxgpu.OnnxGpuError)
    assert issubclass(onnxgpu.NotImplemented, NotImplementedError)
    assert issubclass(onnxgpu.GpuError, onnxgpu.OnnxGpuError)
    assert onnxgpu.InvalidArgument.__module__ == "onnxgpu"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_wrong_dtype(gpt2_path, provider):
    sess = onnxgpu.InferenceSession(gpt2_path, providers=[provider])
    ids = np.zeros((1, 4), dtype=np.int32)
    with pytest.raises(onnxgpu.InvalidArgument) as e:
        sess.run(None, {"input_ids": ids})
    msg = str(e.value)
    assert "input_ids" in msg and "tensor(int64)" in msg and "tensor(int32)" in msg, msg
    print(msg)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_wrong_rank(gpt2_path, provider):
    sess = onnxgpu.InferenceSession(gpt2_path, providers=[provider])
    with pytest.raises(onnxgpu.InvalidArgument, match="input 'input_ids': expected shape .*rank 2"):
        sess.run(None, {"input_ids": np.zeros((4,), dtype=np.int64)})


@pytest.mark.parametrize("provider", PROVIDERS)
def test_missing_and_unknown_input(gpt2_path, provider):
    sess = onnxgpu.InferenceSession(gpt2_path, providers=[provider])
    with pytest.raises(onnxgpu.InvalidArgument) as e:
        sess.run(None, {})
    assert "input 'input_ids'" in str(e.value) and "required" in str(e.value), str(e.value)
    print(e.value)
    with pytest.raises(onnxgpu.InvalidArgument, match="'typo' is not an input of the model .*input_ids"):
        sess.run(None, {"typo": np.zeros((1, 4), dtype=np.int64)})


def test_unsupported_numpy_dtype(gpt2_path):
    sess = onnxgpu.InferenceSession(gpt2_path, providers=["CPUExecutionProvider"])
    with pytest.raises(onnxgpu.InvalidArgument, match="input 'input_ids': numpy dtype complex64"):
        sess.run(None, {"input_ids": np.zeros((1, 4), dtype=np.complex64)})


def test_bad_model_bytes():
    with pytest.raises(onnxgpu.InvalidArgument) as e:
        onnxgpu.InferenceSession(b"this is not an onnx model", providers=["CPUExecutionProvider"])
    assert str(e.value), "empty message"
    print(e.value)
    with pytest.raises(onnxgpu.OnnxGpuError):
        onnxgpu.InferenceSession(b"", providers=["WebGpuExecutionProvider"])


def test_bad_model_path(tmp_path):
    missing = str(tmp_path / "missing.onnx")
    with pytest.raises(onnxgpu.OnnxGpuError) as e:
        onnxgpu.InferenceSession(missing, providers=["CPUExecutionProvider"])
    assert "missing.onnx" in str(e.value), str(e.value)
    with pytest.raises(TypeError, match="Unable to load"):
        onnxgpu.InferenceSession(12, providers=["CPUExecutionProvider"])


def test_bad_config_entries(gpt2_path):
    so = onnxgpu.SessionOptions()
    so.add_session_config_entry("gpu_graph_capture", "maybe")
    with pytest.raises(onnxgpu.InvalidArgument, match="gpu_graph_capture.*maybe"):
        onnxgpu.InferenceSession(gpt2_path, so, providers=["CPUExecutionProvider"])
    so = onnxgpu.SessionOptions()
    so.add_session_config_entry("onnxgpu.no_such_key", "1")
    with pytest.raises(onnxgpu.InvalidArgument, match="onnxgpu.no_such_key"):
        onnxgpu.InferenceSession(gpt2_path, so, providers=["CPUExecutionProvider"])
    so = onnxgpu.SessionOptions()
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")  # ORT's own keys are accepted
    onnxgpu.InferenceSession(gpt2_path, so, providers=["CPUExecutionProvider"])
    with pytest.raises(onnxgpu.InvalidArgument, match="INT64 strategy 'fast'"):
        onnxgpu.InferenceSession(gpt2_path, providers=[("WebGpuExecutionProvider", {"int64_strategy": "fast"})])


def test_closed_session(gpt2_path):
    sess = onnxgpu.InferenceSession(gpt2_path, providers=["CPUExecutionProvider"])
    sess._close()
    with pytest.raises(onnxgpu.InvalidArgument, match="closed"):
        sess.run(None, {"input_ids": np.zeros((1, 4), dtype=np.int64)})
