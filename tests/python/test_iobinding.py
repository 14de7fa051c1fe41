"""IOBinding and OrtValue (host memory: they copy through the host like run())."""
import numpy as np
import pytest

import onnxgpu
from conftest import assert_close


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
    with pytest.raises(onnxgpu.NotImplemented, match="host memory"):
        b.bind_output("logits", "webgpu")
    with pytest.raises(RuntimeError, match="no results"):
        b.get_outputs()
    b.bind_cpu_input("input_ids", ids)
    b.bind_ortvalue_output("logits", onnxgpu.OrtValue.ortvalue_from_shape_and_type([1, 1, 100], np.float32))
    with pytest.raises(onnxgpu.InvalidArgument, match="output 'logits': bound buffer is float32\\[1, 1, 100\\]"):
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
