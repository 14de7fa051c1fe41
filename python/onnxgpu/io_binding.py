"""OrtValue and IOBinding, shaped like onnxruntime's.

Every OrtValue lives in host memory for now: binding inputs and outputs saves no copy, it goes
through the host exactly like InferenceSession.run (device_type other than 'cpu' is refused).
"""
import ctypes

import numpy as np

from . import _onnxgpu as _C

# numpy dtype -> ONNX TensorProto element type and ORT's type string.
_ONNX_TYPES = {
    np.dtype("float32"): (1, "tensor(float)"),
    np.dtype("uint8"): (2, "tensor(uint8)"),
    np.dtype("int8"): (3, "tensor(int8)"),
    np.dtype("uint16"): (4, "tensor(uint16)"),
    np.dtype("int16"): (5, "tensor(int16)"),
    np.dtype("int32"): (6, "tensor(int32)"),
    np.dtype("int64"): (7, "tensor(int64)"),
    np.dtype("bool"): (9, "tensor(bool)"),
    np.dtype("float16"): (10, "tensor(float16)"),
    np.dtype("float64"): (11, "tensor(double)"),
    np.dtype("uint32"): (12, "tensor(uint32)"),
    np.dtype("uint64"): (13, "tensor(uint64)"),
}


def _check_device(device_type):
    if str(device_type).lower() != "cpu":
        raise _C.NotImplemented(f"device_type '{device_type}': onnxgpu keeps OrtValues and bound buffers in host "
                                "memory for now (use 'cpu')")


def _array_at(buffer_ptr, element_type, shape):
    """A numpy view of caller-owned memory."""
    dt = np.dtype(element_type)
    n = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    buf = (ctypes.c_char * (n * dt.itemsize)).from_address(int(buffer_ptr))
    return np.frombuffer(buf, dtype=dt, count=n).reshape(tuple(shape))


class OrtValue:
    """A tensor held for a session's IOBinding (host memory, sharing the numpy array it was made from)."""

    def __init__(self, array):
        self._array = array

    @staticmethod
    def ortvalue_from_numpy(numpy_obj, device_type="cpu", device_id=0):
        _check_device(device_type)
        return OrtValue(np.asarray(numpy_obj))

    @staticmethod
    def ortvalue_from_shape_and_type(shape, element_type, device_type="cpu", device_id=0):
        _check_device(device_type)
        return OrtValue(np.zeros(tuple(shape), dtype=element_type))

    def numpy(self):
        return self._array

    def shape(self):
        return list(self._array.shape)

    def data_type(self):
        return _ONNX_TYPES.get(self._array.dtype, (0, f"tensor({self._array.dtype})"))[1]

    def element_type(self):
        return _ONNX_TYPES.get(self._array.dtype, (0, ""))[0]

    def device_name(self):
        return "cpu"

    def data_ptr(self):
        return self._array.ctypes.data

    def is_tensor(self):
        return True

    def has_value(self):
        return True

    def update_inplace(self, np_arr):
        np.copyto(self._array, np.asarray(np_arr))

    def __repr__(self):
        return f"OrtValue({self.data_type()}{self.shape()})"


class IOBinding:
    """onnxruntime.IOBinding: inputs and outputs bound by name, then session.run_with_iobinding()."""

    def __init__(self, session):
        self._session = session
        self._inputs = {}
        self._outputs = []  # [(name, destination OrtValue or None)] in binding order
        self._results = None

    # -- inputs
    def bind_cpu_input(self, name, arr_on_cpu):
        self._inputs[name] = np.asarray(arr_on_cpu)

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        _check_device(device_type)
        self._inputs[name] = _array_at(buffer_ptr, element_type, shape)  # read at run time

    def bind_ortvalue_input(self, name, ortvalue):
        self._inputs[name] = ortvalue.numpy()

    def clear_binding_inputs(self):
        self._inputs = {}

    def synchronize_inputs(self):
        pass

    # -- outputs
    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        _check_device(device_type)
        dest = None
        if buffer_ptr is not None:
            if element_type is None or shape is None:
                raise ValueError(f"bind_output('{name}'): a buffer_ptr needs element_type and shape")
            dest = OrtValue(_array_at(buffer_ptr, element_type, shape))
        self._bind_out(name, dest)

    def bind_ortvalue_output(self, name, ortvalue):
        self._bind_out(name, ortvalue)

    def _bind_out(self, name, dest):
        known = [m.name for m in self._session.get_outputs()]
        if name not in known:
            raise _C.InvalidArgument(f"output '{name}' is not an output of the model (its outputs: {', '.join(known)})")
        self._outputs = [(n, d) for n, d in self._outputs if n != name] + [(name, dest)]

    def clear_binding_outputs(self):
        self._outputs = []
        self._results = None

    def synchronize_outputs(self):
        pass

    # -- results
    def _run(self, run_options):
        names = [n for n, _ in self._outputs] or [m.name for m in self._session.get_outputs()]
        arrays = self._session.run(names, self._inputs, run_options)
        results = []
        dests = dict(self._outputs)
        for name, arr in zip(names, arrays):
            dest = dests.get(name)
            if dest is None:
                results.append(OrtValue(arr))
                continue
            got = dest.numpy()
            if got.shape != arr.shape or got.dtype != arr.dtype:
                raise _C.InvalidArgument(f"output '{name}': bound buffer is {got.dtype}{list(got.shape)}, the model "
                                         f"produced {arr.dtype}{list(arr.shape)}")
            np.copyto(got, arr)
            results.append(dest)
        self._results = results

    def get_outputs(self):
        if self._results is None:
            raise RuntimeError("IOBinding: no results yet (call session.run_with_iobinding first)")
        return list(self._results)

    def copy_outputs_to_cpu(self):
        return [np.array(v.numpy(), copy=True) for v in self.get_outputs()]
