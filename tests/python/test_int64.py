"""INT64 policy from Python: the typed Int64Policy, config entries and provider options."""
import numpy as np
import pytest

import onnxgpu
from conftest import tiny_model

BIG = 2**31 + 5  # beyond int32


@pytest.fixture(scope="module")
def add_i64():
    return tiny_model("Add", [("a", np.int64, [4]), ("b", np.int64, [4])], [("y", np.int64, [4])])


def feed(a0):
    return {"a": np.array([a0, -3, 7, 2**40], dtype=np.int64), "b": np.array([1, 2, 3, 4], dtype=np.int64)}


def exact(a0):
    f = feed(a0)
    return f["a"] + f["b"]


def test_policy_object():
    p = onnxgpu.Int64Policy()
    assert (p.strategy, p.fallback_per_op_not_whole_graph, p.fail_loud) == ("bitcast_to_i32", True, False)
    assert onnxgpu.Int64Policy(strategy="cast").strategy == "cast_to_i32"
    assert onnxgpu.Int64Policy(strategy="per-op").strategy == "per_op_optin"
    with pytest.raises(ValueError, match="unknown INT64 strategy 'int53'"):
        onnxgpu.Int64Policy(strategy="int53")
    so = onnxgpu.SessionOptions()
    with pytest.raises(TypeError):
        so.int64_policy = "cast_to_i32"
    so.int64_policy = onnxgpu.Int64Policy("cast_to_i32", fail_loud=True)
    assert so.int64_policy == onnxgpu.Int64Policy("cast_to_i32", True, True)


def test_bitcast_exact(add_i64):
    sess = onnxgpu.InferenceSession(add_i64, providers=["WebGpuExecutionProvider"])
    (y,) = sess.run(None, feed(BIG))
    np.testing.assert_array_equal(y, exact(BIG))
    plan = sess.get_capture_plan()
    print(plan)
    assert plan["int64"]["strategy"] == "bitcast_to_i32"


def _cast_sessions(model):
    so = onnxgpu.SessionOptions()
    so.int64_policy = onnxgpu.Int64Policy(strategy="cast_to_i32")
    yield "SessionOptions.int64_policy", onnxgpu.InferenceSession(model, so, providers=["WebGpuExecutionProvider"])
    so = onnxgpu.SessionOptions()
    so.add_session_config_entry("onnxgpu.int64.strategy", "cast_to_i32")
    yield "config entry", onnxgpu.InferenceSession(model, so, providers=["WebGpuExecutionProvider"])
    yield "provider option", onnxgpu.InferenceSession(
        model, providers=[("WebGpuExecutionProvider", {"int64_strategy": "cast_to_i32"})])


def test_cast_to_i32_beyond_int32_is_an_error(add_i64):
    for how, sess in _cast_sessions(add_i64):
        small = feed(5)
        small["a"][3] = 9
        (y,) = sess.run(None, small)
        np.testing.assert_array_equal(y, small["a"] + small["b"], err_msg=how)
        assert sess.get_capture_plan()["int64"]["strategy"] == "cast_to_i32", how
        with pytest.raises(onnxgpu.InvalidArgument) as e:
            sess.run(None, feed(BIG))
        msg = str(e.value)
        print(f"{how}: {msg}")
        assert "'a'" in msg and str(BIG) in msg and "int32" in msg and "cast_to_i32" in msg, msg


def test_cast_to_i32_overflow_in_the_graph(add_i64):
    """A sum that leaves int32 on the GPU is reported (when Add runs on the GPU), never wrapped."""
    _, sess = next(_cast_sessions(add_i64))
    f = {"a": np.array([2**31 - 1, 0, 0, 0], dtype=np.int64), "b": np.array([1, 0, 0, 0], dtype=np.int64)}
    try:
        (y,) = sess.run(None, f)
    except onnxgpu.OnnxGpuError as e:
        print("overflow:", e)
        assert "int32" in str(e), str(e)
        return
    # Add fell back to the CPU: exact int64 there.
    plan = sess.get_capture_plan()
    assert plan["cpu_nodes"] == 1, plan
    np.testing.assert_array_equal(y, f["a"] + f["b"])


def test_fail_loud_option(add_i64):
    sess = onnxgpu.InferenceSession(add_i64, providers=[("WebGpuExecutionProvider", {"fail_loud": "1"})])
    try:
        (y,) = sess.run(None, feed(BIG))
    except onnxgpu.OnnxGpuError as e:  # the GPU can't run the node: fail loud names it
        print("fail loud:", e)
        assert "Add" in str(e), str(e)
        return
    np.testing.assert_array_equal(y, exact(BIG))
    assert sess.get_capture_plan()["cpu_nodes"] == 0
