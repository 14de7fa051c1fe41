#!/usr/bin/env python3
"""One-row products (src/webgpu/kernels/gemv.cpp) measured on a device, variants of $ONNXGPU_GEMV side by side:
  A. decode loops (`onnxgpu decode`, 300 steps from past 128) on gpt2_kv, the variants alternating over rounds;
  B. `onnxgpu bench --profile` on the gpt2_kv decode step and on micro models of one large product each
     ([1, 4096] @ [4096, 8192], its Gemm transB twin, 4 rows, [5632, 2048], [2048, 2048]): GPU time and GB/s
     per product (the profile's bytes per node; each dispatch costs ~8-10 us of fixed overhead there);
  C. decode loops on llama_kv.
Every result goes to OUT/raw.jsonl; the log prints the figures of docs/performance.md ("One-row products").

  bench/compare --make-bundle --size full --models gpt2_kv,llama_kv        # bench/.carry, as for bench/decode.py
  run, carry bench/.carry:  cd bench && PYTHONUNBUFFERED=1 python3 gemv_variants.py .carry $OUT 'off=off;new=;split=small=0'

VARIANTS: 'NAME=VALUE;...', VALUE the $ONNXGPU_GEMV of that variant ("" the defaults, "off" the tiled kernel).
Environment: DEADLINE (s, 250), ROUNDS (gpt2_kv decode rounds, 2), PROFILE_ROUNDS (1), LLAMA (1) and
LLAMA_ROUNDS (1), STEPS (300), PROFILE_RUNS (10); SIZE=tiny MICRO_SCALE=16 for a try on SwiftShader.
"""
import json, os, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa
import make_models  # noqa

T0 = time.time()
DEADLINE = float(os.environ.get("DEADLINE", "250"))
SIZE = os.environ.get("SIZE", "full")
SCALE = int(os.environ.get("MICRO_SCALE", "1"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))
STEPS = os.environ.get("STEPS", "300")
PROFILE_RUNS = os.environ.get("PROFILE_RUNS", "10")
LLAMA = os.environ.get("LLAMA", "1") == "1"
LLAMA_ROUNDS = int(os.environ.get("LLAMA_ROUNDS", "1"))
PROFILE_ROUNDS = int(os.environ.get("PROFILE_ROUNDS", "1"))
carry, out, variants_text = sys.argv[1], sys.argv[2], sys.argv[3]
raw = open(os.path.join(out, "raw.jsonl"), "a")


def log(*a):
    print(f"[{time.time() - T0:6.1f}s]", *a, flush=True)


def left():
    return DEADLINE - (time.time() - T0)


variants = []
for item in variants_text.split(";"):
    if item.strip():
        name, _, val = item.partition("=")
        variants.append((name.strip(), val.strip()))

onnxgpu, _, lib_dirs, skel = compare.unpack_bundle(carry)
compare.install_skeletons(skel, make_models.DEFAULT_ROOT)
make_models.inflate(SIZE, make_models.DEFAULT_ROOT, names=["gpt2_kv"])
make_models.make_inputs(SIZE, "h200", make_models.DEFAULT_ROOT, names=["gpt2_kv"])
env0 = compare.vulkan_env(lib_dirs)
log("inflated gpt2_kv")

import numpy as np  # noqa
import onnx  # noqa
from onnx import helper, numpy_helper, TensorProto  # noqa

micro_dir = "/tmp/gemv_micro"
os.makedirs(micro_dir, exist_ok=True)


def micro(name, m, k, n, trans_b):
    k, n = max(1, k // SCALE), max(1, n // SCALE)
    rs = np.random.RandomState(1)
    w = (rs.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32) * 0.02)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = (helper.make_node("Gemm", ["x", "w"], ["y"], name=name, transB=1) if trans_b
            else helper.make_node("MatMul", ["x", "w"], ["y"], name=name))
    g = helper.make_graph([node], name, [x], [y], [numpy_helper.from_array(w, "w")])
    mdl = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    mdl.ir_version = 8
    path = os.path.join(micro_dir, name + ".onnx")
    onnx.save(mdl, path)
    return path


micros = [micro("kn_4096x8192", 1, 4096, 8192, False), micro("nk_8192x4096", 1, 4096, 8192, True),
          micro("kn_m4_4096x8192", 4, 4096, 8192, False), micro("kn_5632x2048", 1, 5632, 2048, False),
          micro("kn_2048x2048", 1, 2048, 2048, False)]
log("micro models made")


def env_of(settings):
    e = dict(env0)
    e.pop("ONNXGPU_GEMV", None)
    if settings:
        e["ONNXGPU_GEMV"] = settings
    return e


def bench(model, data, settings, tag):
    cmd = [onnxgpu, "bench", model, "--runs", "10", "--warmup", "3", "--profile", PROFILE_RUNS, "--profile-nodes", "400",
           "--json", "--atol", "1e-4", "--rtol", "1e-3"]
    if data:
        cmd += ["--data-set", data]
    r = subprocess.run(cmd, env=env_of(settings), capture_output=True, text=True, timeout=120)
    try:
        j = json.loads(r.stdout)
    except ValueError:
        log(tag, os.path.basename(model), "FAILED", r.stderr[-800:])
        return None
    raw.write(json.dumps({"kind": "bench", "tag": tag, "settings": settings, "model": os.path.basename(model), "result": j}) + "\n")
    raw.flush()
    p = j.get("profile", {})
    prods = [n for n in p.get("top_nodes", []) if n["op"].startswith("MatMul") or n["op"].startswith("Gemm")]
    classes = {}
    for n in prods:
        c = classes.setdefault(n["bytes"], [0, 0.0, 0])
        c[0] += 1
        c[1] += n["gpu_ms"]
        c[2] = n["dispatches"]
    mm_ms = sum(n["gpu_ms"] for n in prods)
    mm_b = sum(n["bytes"] for n in prods)
    others = " ".join(f"{o['op'][:12]}:{o['gpu_ms']:.3f}" for o in p.get("by_op", []) if not o["op"].startswith("MatMul"))
    log(f"{tag:6s} {os.path.basename(model):22s} GPU {p.get('gpu_ms_per_run', 0):.3f} ms  products {mm_ms:.3f} ms "
        f"{mm_b / max(mm_ms, 1e-9) / 1e6:.0f} GB/s  disp {j['plan']['dispatches']}  compare {(j.get('compare') or {}).get('passed')}  {others}")
    for b, (cnt, ms, d) in sorted(classes.items(), key=lambda kv: -kv[0]):
        log(f"         {b / 1e6:9.3f} MB x{cnt:3d}: {ms / cnt * 1000:8.2f} us each ({d} disp)  {b * cnt / ms / 1e6:7.0f} GB/s")
    return j


def decode(model, settings, tag, steps=STEPS):
    path = os.path.join(make_models.DEFAULT_ROOT, SIZE, model + ".onnx")
    cmd = [onnxgpu, "decode", path, "--ep", "webgpu", "--capture", "--steps", steps, "--past-start", "128", "--json"]
    r = subprocess.run(cmd, env=env_of(settings), capture_output=True, text=True, timeout=150)
    try:
        j = json.loads(r.stdout)
    except ValueError:
        log("decode", tag, model, "FAILED", r.stderr[-500:])
        return None
    raw.write(json.dumps({"kind": "decode", "tag": tag, "settings": settings, "model": model, "result": j}) + "\n")
    raw.flush()
    st = j["decode_loop"]["ms_per_step"]
    log(f"decode {tag:6s} {model}: median {st['median']:.3f} ms/step (min {st['min']:.3f}, mean {st['mean']:.3f}); "
        f"{j.get('achieved_gb_per_s', 0):.0f} GB/s; refreshed {j['decode_loop'].get('refreshed_steps')}, "
        f"plan {j['decode_loop'].get('plan_ms_per_step_mean') or 0:.2f} ms/step")
    return st["median"]


summary = {}
decode("gpt2_kv", "off", "warm", "100")  # clocks up
for rnd in range(ROUNDS):
    for name, settings in variants:
        if left() < 150:
            break
        summary.setdefault(("gpt2_kv", name), []).append(decode("gpt2_kv", settings, name))
gpt2 = (os.path.join(make_models.DEFAULT_ROOT, SIZE, "gpt2_kv.onnx"), os.path.join(make_models.DEFAULT_ROOT, SIZE, "inputs", "h200", "gpt2_kv"))
for rnd in range(PROFILE_ROUNDS):
    for name, settings in variants:
        if left() < 110:
            log("deadline: no more profiles")
            break
        bench(gpt2[0], gpt2[1], settings, name)
        if rnd == 0:
            for m in micros:
                bench(m, None, settings, name)
if LLAMA and left() > 60:
    make_models.inflate(SIZE, make_models.DEFAULT_ROOT, names=["llama_kv"])
    log("inflated llama_kv")
    for rnd in range(LLAMA_ROUNDS):
        for name, settings in variants:
            if left() < 10:
                break
            summary.setdefault(("llama_kv", name), []).append(decode("llama_kv", settings, name))
for (model, name), v in summary.items():
    log(f"summary {model:9s} {name:6s} ms/step: {v}")
log("done")
