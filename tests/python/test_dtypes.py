"""numpy <-> Tensor for every dtype, through the binding and through a model on both providers."""
import numpy as np
import pytest

import onnxgpu
from onnxgpu import _onnxgpu
from conftest import tiny_model

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
          np.float16, np.float32, np.float64]


def sample(dt, shape=(2, 3)):
    dt = np.dtype(dt)
    n = int(np.prod(shape))
    if dt == np.bool_:
        return (np.arange(n) % 3 == 0).reshape(shape)
    if dt.kind == "f":
        v = np.linspace(-2.5, 3.75, n).astype(dt)
        v[0] = np.finfo(dt).max
        v[-1] = np.finfo(dt).tiny
        return v.reshape(shape)
    info = np.iinfo(dt)
    v = np.arange(n).astype(dt)
    v[0], v[-1] = info.min, info.max
    return v.reshape(shape)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_roundtrip(dt):
    for shape in [(2, 3), (), (0, 4), (1, 1, 5)]:
        a = sample(dt, shape) if np.prod(shape) else np.zeros(shape, dtype=dt)
        b = _onnxgpu._roundtrip(a)
        assert b.dtype == a.dtype and b.shape == a.shape
        np.testing.assert_array_equal(a, b)
    a = sample(dt, (4, 6))
    v = a[::2, 1::2]  # not contiguous
    np.testing.assert_array_equal(_onnxgpu._roundtrip(v), v)
    np.testing.assert_array_equal(_onnxgpu._roundtrip(a.T), a.T)


@pytest.mark.parametrize("provider", ["WebGpuExecutionProvider", "CPUExecutionProvider"])
@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_identity_model(dt, provider):
    model = tiny_model("Identity", [("x", dt, ["n", 3])], [("y", dt, ["n", 3])])
    sess = onnxgpu.InferenceSession(model, providers=[provider])
    assert sess.get_inputs()[0].shape == ["n", 3]
    x = sample(dt, (2, 3))
    (y,) = sess.run(None, {"x": x})
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(y, x)
    (y,) = sess.run(None, {"x": x[:, ::-1]})  # non-contiguous input
    np.testing.assert_array_equal(y, x[:, ::-1])


def test_byte_order():
    model = tiny_model("Identity", [("x", np.float32, [3])], [("y", np.float32, [3])])
    sess = onnxgpu.InferenceSession(model, providers=["CPUExecutionProvider"])
    big_endian = np.array([1.5, -2.0, 3.25], dtype=">f4")
    np.testing.assert_array_equal(sess.run(None, {"x": big_endian})[0], [1.5, -2.0, 3.25])


def test_list_input_wrong_dtype_message():
    model = tiny_model("Identity", [("x", np.float32, [3])], [("y", np.float32, [3])])
    sess = onnxgpu.InferenceSession(model, providers=["CPUExecutionProvider"])
    with pytest.raises(onnxgpu.InvalidArgument, match="input 'x': expected tensor\\(float\\), got tensor\\(double\\)"):
        sess.run(None, {"x": [1.0, 2.0, 3.0]})


def test_strings():
    a = np.array([["a", "bc"], ["", "déf"]])
    b = _onnxgpu._roundtrip(a)
    assert b.dtype == object and b.shape == (2, 2)
    assert b.tolist() == [["a", "bc"], ["", "déf"]]


def test_output_owns_memory():
    model = tiny_model("Identity", [("x", np.float32, [3])], [("y", np.float32, [3])])
    sess = onnxgpu.InferenceSession(model, providers=["CPUExecutionProvider"])
    x = np.array([1, 2, 3], dtype=np.float32)
    (y,) = sess.run(None, {"x": x})
    x[0] = 42  # the output is not a view of the input
    del sess
    assert y.tolist() == [1, 2, 3]
    y[1] = 7  # and it is writable
    assert y.tolist() == [1, 7, 3]


@pytest.mark.parametrize("provider", ["WebGpuExecutionProvider", "CPUExecutionProvider"])
def test_outputs_do_not_alias_the_session(provider):
    """An initializer that is a graph output, and two outputs of one value: writing into a returned
    array changes neither the model nor the other output."""
    import onnx
    from onnx import helper, numpy_helper
    w = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"]), helper.make_node("Identity", ["x"], ["z"])], "alias",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [3]) for n in ("y", "z", "w")],
        initializer=[numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    sess = onnxgpu.InferenceSession(model.SerializeToString(), providers=[provider])
    x = np.array([4.0, 5.0, 6.0], dtype=np.float32)
    y, z, wo = sess.run(None, {"x": x})
    np.testing.assert_array_equal(wo, w)
    y[:] = 0
    wo[:] = -1
    np.testing.assert_array_equal(z, x)
    y, z, wo = sess.run(None, {"x": x})
    np.testing.assert_array_equal(wo, w)
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("provider", ["WebGpuExecutionProvider", "CPUExecutionProvider"])
def test_narrow_outputs_come_back_as_their_values(provider):
    """numpy has no float8, float4, int4 or int2: such outputs come back as float32, int8 or uint8 values."""
    from onnx import helper, TensorProto
    x = np.array([-9.0, -1.5, 0.26, 3.0, 500.0], dtype=np.float32)
    # (to, numpy dtype returned, expected values: float8 e4m3fn rounds to nearest even and saturates at 448,
    # int4 wraps to its low four bits, uint2 to its low two)
    cases = [(17, np.float32, [-9.0, -1.5, 0.25, 3.0, 448.0]), (22, np.int8, [7, -1, 0, 3, 4]),
             (25, np.uint8, [3, 3, 0, 3, 0])]
    for to, dt, want in cases:
        node = helper.make_node("Cast", ["x"], ["y"], to=to)
        graph = helper.make_graph([node], "narrow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5])],
                                  [helper.make_tensor_value_info("y", to, [5])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
        model.ir_version = 10
        sess = onnxgpu.InferenceSession(model.SerializeToString(), providers=[provider])
        (y,) = sess.run(None, {"x": x})
        assert y.dtype == dt, (to, y.dtype)
        np.testing.assert_array_equal(y, np.array(want, dtype=dt))
