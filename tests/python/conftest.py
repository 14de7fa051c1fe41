"""Fixtures for the onnxgpu Python tests.

Run through ctest (label `python`: PYTHONPATH=build/python, models from the models_generate fixture),
or by hand:  PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python
Without ONNXGPU_MODELS_DIR the GPT-2 test model is generated into a temporary folder.
"""
import glob
import os
import subprocess
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# The engine finds its Vulkan driver itself (SwiftShader when the machine has no GPU): no VK_ICD_FILENAMES,
# as a user has none. XDG_RUNTIME_DIR silences a loader warning.
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

# The build tree's package when not on the path already.
if "onnxgpu" not in sys.modules:
    try:
        import onnxgpu  # noqa: F401
    except ImportError:
        sys.path.insert(0, os.path.join(REPO, "build", "python"))


def _generate(out_dir, *names):
    subprocess.run(["/usr/bin/python3", os.path.join(REPO, "tests", "models", "make_models.py"), out_dir, *names],
                   check=True)


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory):
    d = os.environ.get("ONNXGPU_MODELS_DIR")
    if d and os.path.exists(os.path.join(d, "gpt2_tiny", "model.onnx")):
        return d
    d = str(tmp_path_factory.mktemp("models"))
    _generate(d, "gpt2_tiny")
    return d


@pytest.fixture(scope="session")
def gpt2_path(models_dir):
    return os.path.join(models_dir, "gpt2_tiny", "model.onnx")


def load_data_set(set_dir):
    """([(name, array)] inputs, [(name, array)] reference outputs) of one test_data_set_k folder."""
    import onnx
    from onnx import numpy_helper

    def read(prefix):
        files = sorted(glob.glob(os.path.join(set_dir, prefix + "*.pb")),
                       key=lambda p: int(os.path.basename(p)[len(prefix):-3]))
        out = []
        for f in files:
            t = onnx.load_tensor(f)
            out.append((t.name, numpy_helper.to_array(t)))
        return out

    return read("input_"), read("output_")


@pytest.fixture(scope="session")
def gpt2_sets(models_dir):
    sets = sorted(glob.glob(os.path.join(models_dir, "gpt2_tiny", "test_data_set_*")))
    assert len(sets) >= 2, "gpt2_tiny needs two data sets (1x7 and 2x16 tokens)"
    return [load_data_set(s) for s in sets]


def assert_close(got, want, atol=1e-4, rtol=1e-3, what=""):
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} vs {want.dtype}"
    np.testing.assert_allclose(got, want, atol=atol, rtol=rtol, err_msg=what)


def tiny_model(op, inputs, outputs, **attrs):
    """A one-node opset-17 model as bytes. inputs/outputs: [(name, numpy dtype, shape)]."""
    import onnx
    from onnx import helper
    from onnx.mapping import NP_TYPE_TO_TENSOR_TYPE

    def vi(name, dt, shape):
        return helper.make_tensor_value_info(name, NP_TYPE_TO_TENSOR_TYPE[np.dtype(dt)], shape)

    node = helper.make_node(op, [n for n, _, _ in inputs], [n for n, _, _ in outputs], **attrs)
    graph = helper.make_graph([node], f"tiny_{op}", [vi(*i) for i in inputs], [vi(*o) for o in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()
