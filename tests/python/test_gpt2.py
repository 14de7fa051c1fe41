"""The ONNX Runtime snippet on the project's GPT-2 test model, outputs checked against torch's
references and the CPU provider, dynamic shapes through one captured session."""
import os
import shutil

import numpy as np
import pytest

import onnxgpu
from conftest import assert_close


def test_ort_snippet(gpt2_path, gpt2_sets, tmp_path, monkeypatch):
    shutil.copy(gpt2_path, tmp_path / "model_with_int64.onnx")
    monkeypatch.chdir(tmp_path)

    # The snippet, word for word, with `import onnxgpu as ort` for `import onnxruntime as ort`.
    import onnxgpu as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.add_session_config_entry("gpu_graph_capture", "1")
    sess = ort.InferenceSession("model_with_int64.onnx", so, providers=["WebGpuExecutionProvider"])

    assert sess.get_providers() == ["WebGpuExecutionProvider", "CPUExecutionProvider"]
    cpu = ort.InferenceSession("model_with_int64.onnx", providers=["CPUExecutionProvider"])
    assert cpu.get_providers() == ["CPUExecutionProvider"]
    for inputs, refs in gpt2_sets:
        feed = dict(inputs)
        got = sess.run(None, feed)
        want_cpu = cpu.run(None, feed)
        assert len(got) == len(refs) == len(want_cpu)
        for g, c, (name, r) in zip(got, want_cpu, refs):
            assert_close(g, r, what=f"webgpu vs torch reference, output '{name}'")
            assert_close(g, c, what=f"webgpu vs CPU provider, output '{name}'")
            assert_close(c, r, what=f"CPU provider vs torch reference, output '{name}'")
    plan = sess.get_capture_plan()
    print("capture plan:", {k: v for k, v in plan.items() if k != "fallbacks"})
    assert plan["ep"] == "webgpu" and plan["captured"]


def test_inputs_outputs(gpt2_path):
    sess = onnxgpu.InferenceSession(gpt2_path, providers=["CPUExecutionProvider"])
    (inp,) = sess.get_inputs()
    assert inp.name == "input_ids"
    assert inp.type == "tensor(int64)"
    assert len(inp.shape) == 2 and all(isinstance(d, str) for d in inp.shape), inp.shape  # symbolic dims
    (out,) = sess.get_outputs()
    assert out.name == "logits" and out.type == "tensor(float)"
    assert len(out.shape) == 3 and out.shape[2] == 100, out.shape
    assert "input_ids" in repr(inp)


def test_dynamic_shapes_one_session(gpt2_path, gpt2_sets):
    so = onnxgpu.SessionOptions()
    so.add_session_config_entry("gpu_graph_capture", "1")
    sess = onnxgpu.InferenceSession(gpt2_path, so, providers=["WebGpuExecutionProvider"])
    (in0, ref0), (in1, ref1) = gpt2_sets[0], gpt2_sets[1]
    assert dict(in0)["input_ids"].shape != dict(in1)["input_ids"].shape
    # One plan serves both shapes (a family: same inputs, dtypes and ranks): planned once, then
    # refreshed for the other sizes and replayed.
    order = [(in0, ref0, False), (in1, ref1, True), (in0, ref0, True), (in1, ref1, True)]
    for inputs, refs, replay in order:
        (logits,) = sess.run(["logits"], dict(inputs))
        assert_close(logits, refs[0][1], what=f"logits {logits.shape}")
        plan = sess.get_capture_plan()
        assert plan["captured"], plan
        assert plan["replayed"] == replay, plan
        assert plan["refreshed"] == replay, plan
        assert plan["nodes"] > 0
        assert plan["int64"]["strategy"] == "bitcast_to_i32"
        print(f"{logits.shape}: nodes={plan['nodes']} gpu_nodes={plan['gpu_nodes']} cpu_nodes={plan['cpu_nodes']} "
              f"folded={plan['folded_nodes']} segments={plan['segments']} dispatches={plan['dispatches']} "
              f"replayed={plan['replayed']} fallbacks={sorted({f['op'] for f in plan['fallbacks']})}")
        for f in plan["fallbacks"]:
            assert set(f) == {"node", "op", "reason", "dtypes"}
        if os.environ.get("ONNXGPU_EXPECT_FULL_GPU") == "1":
            assert plan["cpu_nodes"] == 0, plan["fallbacks"]


def test_capture_off_by_provider_option(gpt2_path, gpt2_sets):
    inputs, refs = gpt2_sets[0]
    sess = onnxgpu.InferenceSession(gpt2_path, providers=[("WebGpuExecutionProvider", {"enableGraphCapture": "0"})])
    for _ in range(2):
        (logits,) = sess.run(None, dict(inputs))
        assert_close(logits, refs[0][1])
        plan = sess.get_capture_plan()
        assert not plan["captured"] and not plan["replayed"], plan
    assert sess.get_provider_options() == {"WebGpuExecutionProvider": {"enableGraphCapture": "0"}}


def test_cpu_plan(gpt2_path, gpt2_sets):
    sess = onnxgpu.InferenceSession(gpt2_path, providers=["CPUExecutionProvider"])
    sess.run(None, dict(gpt2_sets[0][0]))
    plan = sess.get_capture_plan()
    assert plan["ep"] == "cpu" and plan["cpu_nodes"] == plan["nodes"] > 0 and plan["gpu_nodes"] == 0


def test_model_bytes_and_pathlike(gpt2_path, gpt2_sets, tmp_path):
    inputs, refs = gpt2_sets[0]
    with open(gpt2_path, "rb") as f:
        data = f.read()
    for model in (data, bytearray(data), memoryview(data)):
        sess = onnxgpu.InferenceSession(model, providers=["CPUExecutionProvider"])
        assert_close(sess.run(None, dict(inputs))[0], refs[0][1])
    import pathlib
    sess = onnxgpu.InferenceSession(pathlib.Path(gpt2_path), providers=["CPUExecutionProvider"])
    assert_close(sess.run(None, dict(inputs))[0], refs[0][1])


def test_providers(gpt2_path):
    assert onnxgpu.get_available_providers() == ["WebGpuExecutionProvider", "CPUExecutionProvider"]
    # The first provider listed wins.
    s = onnxgpu.InferenceSession(gpt2_path, providers=["CPUExecutionProvider", "WebGpuExecutionProvider"])
    assert s.get_providers() == ["CPUExecutionProvider"]
    s = onnxgpu.InferenceSession(gpt2_path, providers=[("CPUExecutionProvider", {})])
    assert s.get_providers() == ["CPUExecutionProvider"]
    s = onnxgpu.InferenceSession(gpt2_path, providers=["WebGpuExecutionProvider"],
                                 provider_options=[{"int64_strategy": "cast_to_i32"}])
    assert s.get_providers()[0] == "WebGpuExecutionProvider"
    # Default: the best available (WebGPU).
    assert onnxgpu.InferenceSession(gpt2_path).get_providers()[0] == "WebGpuExecutionProvider"
    s.set_providers(["CPUExecutionProvider"])
    assert s.get_providers() == ["CPUExecutionProvider"]

    with pytest.raises(ValueError, match="CUDAExecutionProvider"):
        onnxgpu.InferenceSession(gpt2_path, providers=["CUDAExecutionProvider"])
    with pytest.raises(ValueError, match="same length"):
        onnxgpu.InferenceSession(gpt2_path, providers=["CPUExecutionProvider"], provider_options=[{}, {}])
    with pytest.raises(ValueError, match="Duplicate"):
        onnxgpu.InferenceSession(gpt2_path, providers=["CPUExecutionProvider", "CPUExecutionProvider"])
    with pytest.warns(UserWarning, match="noSuchOption"):
        onnxgpu.InferenceSession(gpt2_path, providers=[("WebGpuExecutionProvider", {"noSuchOption": "1"})])


def test_output_names(gpt2_path, gpt2_sets):
    inputs, refs = gpt2_sets[0]
    sess = onnxgpu.InferenceSession(gpt2_path, providers=["CPUExecutionProvider"])
    a = sess.run(None, dict(inputs))
    b = sess.run([], dict(inputs))
    c = sess.run(["logits"], dict(inputs))
    for x in (b, c):
        np.testing.assert_array_equal(a[0], x[0])
    with pytest.raises(onnxgpu.InvalidArgument, match="'nope' is not an output"):
        sess.run(["nope"], dict(inputs))
