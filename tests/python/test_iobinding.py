"""IOBinding and OrtValue: host bindings, and outputs kept on the GPU feeding the next run."""
import os
import numpy as np
import pytest

import onnxgpu
from conftest import assert_close, tiny_model


@pytest.fixture(scope="module")
def sess(gpt2_path):
    return onnxgpu.InferenceSession(gpt2_path, providers=["WebGpuExecutionProvider"])


def test_bind_and_run(sess, gpt2_sets):
    inputs, refs = gpt2_sets[0]
    ids = dict(inputs)["input_ids"]
    want = sess.run(None, {"input_ids": ids})[0]

    b = sess.io_binding()
    b.bind_cpu_input("input_ids", ids)
    b.bind_output("logits")
    sess.run_with_iobinding(b)
    (out,) = b.copy_outputs_to_cpu()
    np.testing.assert_array_equal(out, want)
    assert_close(out, refs[0][1])
    (v,) = b.get_outputs()
    assert v.shape() == list(want.shape) and v.data_type() == "tensor(float)" and v.device_name() == "cpu"

    # Raw pointers (device 'cpu'), a preallocated output OrtValue, OrtValue inputs.
    ids2 = dict(gpt2_sets[1][0])["input_ids"]
    want2 = sess.run(None, {"input_ids": ids2})[0]
    b.bind_input("input_ids", "cpu", 0, np.int64, list(ids2.shape), ids2.ctypes.data)
    dest = onnxgpu.OrtValue.ortvalue_from_shape_and_type(want2.shape, np.float32)
    b.bind_ortvalue_output("logits", dest)
    sess.run_with_iobinding(b)
    np.testing.assert_array_equal(dest.numpy(), want2)
    assert b.get_outputs()[0] is dest

    raw = np.empty(want.shape, dtype=np.float32)
    b.clear_binding_inputs()
    b.clear_binding_outputs()
    b.bind_ortvalue_input("input_ids", onnxgpu.OrtValue.ortvalue_from_numpy(ids))
    b.bind_output("logits", "cpu", 0, np.float32, list(raw.shape), raw.ctypes.data)
    sess.run_with_iobinding(b)
    np.testing.assert_array_equal(raw, want)


def test_errors(sess, gpt2_sets):
    ids = dict(gpt2_sets[0][0])["input_ids"]
    b = sess.io_binding()
    with pytest.raises(onnxgpu.InvalidArgument, match="'nope' is not an output"):
        b.bind_output("nope")
    with pytest.raises(onnxgpu.NotImplemented, match="'cuda'"):
        b.bind_output("logits", "cuda")
    with pytest.raises(RuntimeError, match="no results"):
        b.get_outputs()
    b.bind_cpu_input("input_ids", ids)
    b.bind_ortvalue_output("logits", onnxgpu.OrtValue.ortvalue_from_shape_and_type([1, 1, 100], np.float32))
    with pytest.raises(onnxgpu.InvalidArgument, match="output 'logits': bound value is tensor\\(float\\)\\[1, 1, 100\\]"):
        sess.run_with_iobinding(b)
    b.clear_binding_inputs()
    b.clear_binding_outputs()
    with pytest.raises(onnxgpu.InvalidArgument, match="required"):
        sess.run_with_iobinding(b)


def test_ortvalue():
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    v = onnxgpu.OrtValue.ortvalue_from_numpy(a)
    assert v.numpy() is a and v.shape() == [2, 3] and v.data_type() == "tensor(int64)" and v.element_type() == 7
    assert v.is_tensor() and v.has_value() and v.data_ptr() == a.ctypes.data
    v.update_inplace(np.ones((2, 3), dtype=np.int64))
    assert a.sum() == 6


def test_run_with_ort_values(sess, gpt2_sets):
    ids = dict(gpt2_sets[0][0])["input_ids"]
    (v,) = sess.run_with_ort_values(None, {"input_ids": onnxgpu.OrtValue.ortvalue_from_numpy(ids)})
    np.testing.assert_array_equal(v.numpy(), sess.run(None, {"input_ids": ids})[0])


def test_output_on_gpu(sess, gpt2_sets):
    ids = dict(gpt2_sets[1][0])["input_ids"]
    want = sess.run(None, {"input_ids": ids})[0]
    b = sess.io_binding()
    b.bind_cpu_input("input_ids", ids)
    b.bind_output("logits", "webgpu")
    sess.run_with_iobinding(b)
    (v,) = b.get_outputs()
    assert v.device_name() == "webgpu" and v.shape() == list(want.shape) and v.data_type() == "tensor(float)"
    assert v.element_type() == 1 and v.has_value()
    np.testing.assert_array_equal(v.numpy(), want)
    np.testing.assert_array_equal(b.copy_outputs_to_cpu()[0], want)
    with pytest.raises(onnxgpu.NotImplemented):
        v.data_ptr()
    # A GPU value in run()'s feed is read back first.
    add = onnxgpu.InferenceSession(tiny_model("Identity", [("x", np.float32, ["a", "b", "c"])],
                                              [("y", np.float32, ["a", "b", "c"])]))
    np.testing.assert_array_equal(add.run(None, {"x": v})[0], want)


@pytest.mark.parametrize("dt", [np.float32, np.int64])
def test_gpu_values_chain_runs(dt):
    """y = x + b, where x is the previous run's y left on the GPU (a KV cache's pattern)."""
    model = tiny_model("Add", [("x", dt, [2, 3]), ("b", dt, [2, 3])], [("y", dt, [2, 3])])
    sess = onnxgpu.InferenceSession(model, providers=["WebGpuExecutionProvider"])
    x0 = np.arange(6, dtype=dt).reshape(2, 3)
    step = np.full((2, 3), 2**33 + 1 if dt == np.int64 else 0.5, dtype=dt)
    b = sess.io_binding()
    b.bind_ortvalue_input("x", onnxgpu.OrtValue.ortvalue_from_numpy(x0, "webgpu", 0))
    b.bind_cpu_input("b", step)
    out = onnxgpu.OrtValue.ortvalue_from_shape_and_type([2, 3], dt, "webgpu", 0)
    b.bind_ortvalue_output("y", out)
    first = None
    for k in range(1, 4):
        sess.run_with_iobinding(b)
        assert b.get_outputs()[0] is out and out.device_name() == "webgpu"
        np.testing.assert_array_equal(out.numpy(), x0 + k * step)
        first = first or out
        b.bind_ortvalue_input("x", out)  # the next run reads this run's output on the GPU
        out = onnxgpu.OrtValue.ortvalue_from_shape_and_type([2, 3], dt, "webgpu", 0)
        b.bind_ortvalue_output("y", out)
    np.testing.assert_array_equal(first.numpy(), x0 + step)  # later runs wrote new buffers
    # A CPU session takes no GPU values.
    cpu = onnxgpu.InferenceSession(model, providers=["CPUExecutionProvider"])
    cb = cpu.io_binding()
    cb.bind_cpu_input("x", x0)
    cb.bind_cpu_input("b", step)
    cb.bind_output("y", "webgpu")
    with pytest.raises(onnxgpu.InvalidArgument, match="webgpu"):
        cpu.run_with_iobinding(cb)


def test_decode_loop_keeps_the_kv_cache_on_the_gpu_and_replays(models_dir):
    """A greedy decode loop as ONNX Runtime users write it: presents bound to 'webgpu' and fed back as the
    next step's past. The past grows by one position a step, and one recorded plan serves every step
    (refreshed for its sizes, from the fourth step on during the step before's wait), the presents kept in
    place with the new rows written there by their kernel; each step's logits match a plain run of the same
    inputs."""
    path = os.path.join(models_dir, "gpt2_kv_tiny", "model.onnx")
    if not os.path.exists(path):
        pytest.skip(f"{path} missing: run through ctest (models_generate makes it)")
    sess = onnxgpu.InferenceSession(path, providers=["WebGpuExecutionProvider"])
    so = onnxgpu.SessionOptions()
    so.add_session_config_entry("gpu_graph_capture", "0")
    plain = onnxgpu.InferenceSession(path, so, providers=["WebGpuExecutionProvider"])
    past_names = [i.name for i in sess.get_inputs() if i.name.startswith("past")]
    present_names = [o.name for o in sess.get_outputs() if o.name.startswith("present")]
    heads, head_dim = sess.get_inputs()[2].shape[1], sess.get_inputs()[2].shape[3]
    past_host = {n: np.zeros((1, heads, 2, head_dim), np.float32) for n in past_names}
    past_gpu = None
    token, refreshed, ahead = 3, 0, 0
    for step in range(12):
        position = 2 + step
        b = sess.io_binding()
        b.bind_cpu_input("input_ids", np.array([[token]], np.int64))
        b.bind_cpu_input("position_ids", np.array([[position]], np.int64))
        for i, n in enumerate(past_names):
            if past_gpu is None:
                b.bind_cpu_input(n, past_host[n])
            else:
                b.bind_ortvalue_input(n, past_gpu[i])
        b.bind_output("logits", "cpu")
        for n in present_names:
            b.bind_output(n, "webgpu")
        sess.run_with_iobinding(b)
        outs = b.get_outputs()
        assert all(v.device_name() == "webgpu" for v in outs[1:])
        want = plain.run(None, {"input_ids": np.array([[token]], np.int64),
                                "position_ids": np.array([[position]], np.int64), **past_host})
        assert_close(outs[0].numpy(), want[0], what=f"step {step} logits")
        plan = sess.get_capture_plan()
        refreshed += plan["refreshed"]
        ahead += plan["refreshed_ahead"]
        if step >= 1:  # the presents kept in place, the new keys and values written there by their kernel
            assert sorted(plan["appended_outputs"]) == sorted(present_names), plan
            assert sorted(plan["rows_written_in_place"]) == sorted(present_names), plan
        past_gpu = outs[1:]
        past_host = {n: want[1 + present_names.index(n.replace("past", "present"))] for n in past_names}
        assert past_gpu[0].shape()[2] == position + 1
        token = int(np.argmax(want[0][0, -1]))
    assert refreshed >= 10, sess.get_capture_plan()
    assert ahead >= 8, sess.get_capture_plan()


def test_input_placed_on_webgpu_is_copied_once(sess, gpt2_sets):
    """An OrtValue made on 'webgpu' from a host array is copied to the GPU at its first run and fed from
    there at the next ones (the plan reads it as a device input); update_inplace copies it again."""
    ids = dict(gpt2_sets[0][0])["input_ids"]
    ids2 = dict(gpt2_sets[1][0])["input_ids"]
    want = sess.run(None, {"input_ids": ids})[0]
    want2 = sess.run(None, {"input_ids": ids2})[0]
    placed = onnxgpu.OrtValue.ortvalue_from_numpy(ids.copy(), "webgpu")
    assert placed.device_name() == "webgpu"
    b = sess.io_binding()
    b.bind_ortvalue_input("input_ids", placed)
    b.bind_output("logits")
    for _ in range(3):
        sess.run_with_iobinding(b)
        np.testing.assert_array_equal(b.copy_outputs_to_cpu()[0], want)
    assert placed._gpu is not None and placed._gpu.alive
    np.testing.assert_array_equal(placed.numpy(), ids)
    if ids2.shape == ids.shape:
        placed.update_inplace(ids2)
        sess.run_with_iobinding(b)
        np.testing.assert_array_equal(b.copy_outputs_to_cpu()[0], want2)
