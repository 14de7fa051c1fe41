"""OrtValue and IOBinding, shaped like onnxruntime's.

An OrtValue is either in host memory (a numpy array, shared, not copied) or on the GPU: an output
bound with device_type 'webgpu' stays in GPU memory and can feed the next run without a round trip
through the host (e.g. a KV cache). An OrtValue made from numpy for 'webgpu' keeps the array on the
host until a run uploads it. A CPU-provider session only takes host values.
"""
import ctypes
import threading
import weakref

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
_TYPE_ELEMENT = {name: code for code, name in _ONNX_TYPES.values()}
_TYPE_ELEMENT["tensor(bfloat16)"] = 16
_TYPE_ELEMENT["tensor(string)"] = 8

_DEVICES = {"cpu": "cpu", "webgpu": "webgpu", "gpu": "webgpu"}

# GPU values still alive; released at exit, before the device is destroyed (see session.py).
_live_device_values = weakref.WeakSet()
_live_lock = threading.Lock()


def _release_device_values():
    with _live_lock:
        values = list(_live_device_values)
    for v in values:
        v.release()


def _device(device_type):
    d = _DEVICES.get(str(device_type).lower())
    if d is None:
        raise _C.NotImplemented(f"device_type '{device_type}': onnxgpu has 'cpu' and 'webgpu'")
    return d


def _array_at(buffer_ptr, element_type, shape):
    """A numpy view of caller-owned host memory."""
    dt = np.dtype(element_type)
    n = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    buf = (ctypes.c_char * (n * dt.itemsize)).from_address(int(buffer_ptr))
    return np.frombuffer(buf, dtype=dt, count=n).reshape(tuple(shape))


class OrtValue:
    """A tensor: a host numpy array (shared) or a GPU buffer left by a run (device 'webgpu')."""

    def __init__(self, array=None, device="cpu", _gpu=None):
        self._array = array
        self._gpu = _gpu
        self._device = "webgpu" if _gpu is not None else device
        if _gpu is not None:
            with _live_lock:
                _live_device_values.add(_gpu)

    @staticmethod
    def ortvalue_from_numpy(numpy_obj, device_type="cpu", device_id=0):
        return OrtValue(np.asarray(numpy_obj), _device(device_type))

    @staticmethod
    def ortvalue_from_shape_and_type(shape, element_type, device_type="cpu", device_id=0):
        return OrtValue(np.zeros(tuple(shape), dtype=element_type), _device(device_type))

    def numpy(self):
        """The host array (shared), or a copy read back from the GPU."""
        return self._gpu.to_numpy() if self._array is None else self._array

    def shape(self):
        return list(self._gpu.shape) if self._gpu is not None else list(self._array.shape)

    def data_type(self):
        if self._gpu is not None:
            return self._gpu.type
        return _ONNX_TYPES.get(self._array.dtype, (0, f"tensor({self._array.dtype})"))[1]

    def element_type(self):
        return _TYPE_ELEMENT.get(self.data_type(), 0)

    def device_name(self):
        return self._device

    def data_ptr(self):
        if self._gpu is not None:
            raise _C.NotImplemented("data_ptr of a GPU OrtValue: WebGPU buffers have no address")
        return self._array.ctypes.data

    def is_tensor(self):
        return True

    def has_value(self):
        return self._gpu.alive if self._gpu is not None else True

    def update_inplace(self, np_arr):
        if self._gpu is not None:
            if self._array is None:
                raise _C.NotImplemented("update_inplace of a GPU OrtValue made by a run")
            self._gpu.release()  # a host array placed on 'webgpu': copied again at its next run
            self._gpu = None
        np.copyto(self._array, np.asarray(np_arr))

    def _place(self, gpu):
        """Keeps the GPU copy of this value's host array (made at its first run on the device)."""
        self._gpu = gpu
        with _live_lock:
            _live_device_values.add(gpu)

    def _take(self, other):
        """Becomes `other` (a run's output written into this bound value)."""
        self._array, self._gpu = other._array, other._gpu

    def __repr__(self):
        return f"OrtValue({self.data_type()}{self.shape()}, {self._device})"


class IOBinding:
    """onnxruntime.IOBinding: inputs and outputs bound by name, then session.run_with_iobinding().
    Outputs bound to 'webgpu' stay in GPU memory; 'cpu' ones are read back into host arrays."""

    def __init__(self, session):
        self._session = session
        self._inputs = {}    # name -> numpy array or OrtValue
        self._outputs = []   # [(name, device, destination OrtValue or None)] in binding order
        self._results = None

    # -- inputs
    def bind_cpu_input(self, name, arr_on_cpu):
        self._inputs[name] = np.asarray(arr_on_cpu)

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        if _device(device_type) != "cpu":
            raise _C.NotImplemented(f"bind_input('{name}') with a '{device_type}' pointer: bind an OrtValue instead")
        self._inputs[name] = _array_at(buffer_ptr, element_type, shape)  # read at run time

    def bind_ortvalue_input(self, name, ortvalue):
        if not isinstance(ortvalue, OrtValue):
            raise TypeError(f"bind_ortvalue_input('{name}'): expected an OrtValue, got {type(ortvalue).__name__}")
        self._inputs[name] = ortvalue

    def clear_binding_inputs(self):
        self._inputs = {}

    def synchronize_inputs(self):
        pass

    # -- outputs
    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        device = _device(device_type)
        dest = None
        if buffer_ptr is not None:
            if device != "cpu":
                raise _C.NotImplemented(f"bind_output('{name}') with a '{device_type}' pointer: bind an OrtValue instead")
            if element_type is None or shape is None:
                raise ValueError(f"bind_output('{name}'): a buffer_ptr needs element_type and shape")
            dest = OrtValue(_array_at(buffer_ptr, element_type, shape))
        self._bind_out(name, device, dest)

    def bind_ortvalue_output(self, name, ortvalue):
        self._bind_out(name, ortvalue.device_name(), ortvalue)

    def _bind_out(self, name, device, dest):
        known = [m.name for m in self._session.get_outputs()]
        if name not in known:
            raise _C.InvalidArgument(f"output '{name}' is not an output of the model (its outputs: {', '.join(known)})")
        self._outputs = [o for o in self._outputs if o[0] != name] + [(name, device, dest)]

    def clear_binding_outputs(self):
        self._outputs = []
        self._results = None

    def synchronize_outputs(self):
        pass

    # -- running
    def _run(self, run_options):
        outputs = self._outputs or [(m.name, "cpu", None) for m in self._session.get_outputs()]
        on_gpu = any(d != "cpu" for _, d, _ in outputs) or any(
            isinstance(v, OrtValue) and v.device_name() != "cpu" for v in self._inputs.values())
        if not on_gpu:
            host = {k: (v.numpy() if isinstance(v, OrtValue) else v) for k, v in self._inputs.items()}
            arrays = self._session.run([n for n, _, _ in outputs], host, run_options)
            produced = [OrtValue(a) for a in arrays]
        else:
            produced = self._session._run_on_device([n for n, _, _ in outputs], self._inputs)
        results = []
        for (name, device, dest), value in zip(outputs, produced):
            if device == "cpu" and value._gpu is not None:
                value = OrtValue(value.numpy())
            if dest is None:
                results.append(value)
                continue
            if dest.shape() != value.shape() or dest.data_type() != value.data_type():
                raise _C.InvalidArgument(f"output '{name}': bound value is {dest.data_type()}{dest.shape()}, the model "
                                         f"produced {value.data_type()}{value.shape()}")
            if device == "cpu" and dest._gpu is None:
                np.copyto(dest.numpy(), value.numpy())
            else:
                dest._take(value)
            results.append(dest)
        self._results = results

    def get_outputs(self):
        if self._results is None:
            raise RuntimeError("IOBinding: no results yet (call session.run_with_iobinding first)")
        return list(self._results)

    def copy_outputs_to_cpu(self):
        return [np.array(v.numpy(), copy=True) for v in self.get_outputs()]
