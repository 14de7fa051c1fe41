"""SessionOptions / RunOptions / enums behave like onnxruntime's."""
import numpy as np
import pytest

import onnxgpu
from conftest import tiny_model


def test_graph_optimization_level():
    L = onnxgpu.GraphOptimizationLevel
    assert [L.ORT_DISABLE_ALL, L.ORT_ENABLE_BASIC, L.ORT_ENABLE_EXTENDED, L.ORT_ENABLE_ALL] == [0, 1, 2, 99]
    so = onnxgpu.SessionOptions()
    assert so.graph_optimization_level == L.ORT_ENABLE_ALL
    so.graph_optimization_level = L.ORT_DISABLE_ALL
    assert so.graph_optimization_level is L.ORT_DISABLE_ALL
    so.graph_optimization_level = 2
    assert so.graph_optimization_level is L.ORT_ENABLE_EXTENDED
    with pytest.raises(TypeError):
        so.graph_optimization_level = 7


def test_stored_attributes():
    so = onnxgpu.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 4
    so.inter_op_num_threads = 1
    so.execution_mode = onnxgpu.ExecutionMode.ORT_PARALLEL
    so.enable_profiling = False
    assert (so.log_severity_level, so.intra_op_num_threads, so.inter_op_num_threads) == (3, 4, 1)
    with pytest.raises(ValueError):
        so.log_severity_level = 9
    with pytest.raises(TypeError):
        so.intra_op_num_threads = "4"
    so.add_session_config_entry("gpu_graph_capture", "0")
    assert so.get_session_config_entry("gpu_graph_capture") == "0"
    with pytest.raises(RuntimeError):
        so.get_session_config_entry("nope")


def test_options_reach_the_engine():
    model = tiny_model("Relu", [("x", np.float32, [4])], [("y", np.float32, [4])])
    so = onnxgpu.SessionOptions()
    so.add_session_config_entry("gpu_graph_capture", "0")
    so.int64_policy = onnxgpu.Int64Policy("per_op_optin", fallback_per_op_not_whole_graph=False)
    sess = onnxgpu.InferenceSession(model, so, providers=["WebGpuExecutionProvider"])
    assert sess.get_session_options() is so
    o = sess._options
    assert (o["ep"], o["capture"], o["int64_strategy"], o["fallback_per_op_not_whole_graph"]) == (
        "webgpu", False, "per_op_optin", False)
    (y,) = sess.run(None, {"x": np.array([-1, 0, 2, -3], dtype=np.float32)}, onnxgpu.RunOptions())
    np.testing.assert_array_equal(y, [0, 0, 2, 0])
    # The onnxgpu.ep config entry is the engine's own: it overrides the provider list.
    so = onnxgpu.SessionOptions()
    so.add_session_config_entry("onnxgpu.ep", "cpu")
    assert onnxgpu.InferenceSession(model, so).get_providers() == ["CPUExecutionProvider"]


def test_module_surface():
    for name in ["InferenceSession", "SessionOptions", "RunOptions", "GraphOptimizationLevel", "ExecutionMode",
                 "Int64Policy", "NodeArg", "OrtValue", "IOBinding", "get_available_providers", "OnnxGpuError",
                 "InvalidArgument", "NotImplemented", "GpuError", "__version__"]:
        assert hasattr(onnxgpu, name), name


def test_modelmeta():
    """get_modelmeta() gives what the file says, as onnxruntime's does (exporters such as Ultralytics' keep
    class names and strides in metadata_props and read them back through custom_metadata_map)."""
    import onnx
    model = onnx.load_from_string(tiny_model("Relu", [("x", np.float32, [2])], [("y", np.float32, [2])]))
    model.producer_name, model.domain, model.model_version, model.doc_string = "maker", "org.example", 7, "a model"
    model.graph.doc_string = "its graph"
    onnx.helper.set_model_props(model, {"names": "{0: 'cat', 1: 'dog'}", "stride": "32"})
    for provider in ["CPUExecutionProvider", "WebGpuExecutionProvider"]:
        meta = onnxgpu.InferenceSession(model.SerializeToString(), providers=[provider]).get_modelmeta()
        assert (meta.producer_name, meta.graph_name, meta.domain, meta.version) == ("maker", "tiny_Relu", "org.example", 7)
        assert (meta.description, meta.graph_description) == ("a model", "its graph")
        assert meta.custom_metadata_map == {"names": "{0: 'cat', 1: 'dog'}", "stride": "32"}
    bare = onnxgpu.InferenceSession(tiny_model("Relu", [("x", np.float32, [2])], [("y", np.float32, [2])]),
                                    providers=["CPUExecutionProvider"]).get_modelmeta()
    assert bare.custom_metadata_map == {} and bare.version == 0


def test_disable_all_turns_fusion_off():
    from onnx import helper, TensorProto
    nodes = [helper.make_node("Tanh", ["x"], ["t"]), helper.make_node("Neg", ["t"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = np.array([-1.0, 0.0, 2.0], dtype=np.float32)
    plans = {}
    for level in [onnxgpu.GraphOptimizationLevel.ORT_ENABLE_ALL, onnxgpu.GraphOptimizationLevel.ORT_DISABLE_ALL]:
        so = onnxgpu.SessionOptions()
        so.graph_optimization_level = level
        sess = onnxgpu.InferenceSession(model.SerializeToString(), so, providers=["WebGpuExecutionProvider"])
        (y,) = sess.run(None, {"x": x})
        np.testing.assert_allclose(y, -np.tanh(x), rtol=1e-6)
        plans[level] = sess.get_capture_plan()
    assert plans[onnxgpu.GraphOptimizationLevel.ORT_ENABLE_ALL]["fused_nodes"] == 2
    assert plans[onnxgpu.GraphOptimizationLevel.ORT_DISABLE_ALL]["fused_nodes"] == 0
    assert plans[onnxgpu.GraphOptimizationLevel.ORT_DISABLE_ALL]["dispatches"] == 2
