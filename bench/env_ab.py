#!/usr/bin/env python3
"""Knob A/B on the device machine: `onnxgpu bench --capture --io bind` (40 runs) of bench/compare's models, each
model's variants alternating within a round, so that a knob's effect is read side by side in one call.

  bench/compare --make-bundle --size full                   # here: bench/.carry
  run, carry bench/.carry:  cd bench && python3 env_ab.py .carry 2 bert_b2,t5 'vec=;novec=ONNXGPU_MATMUL_VEC=0'
  with a GPU profile of each run:  ... env_ab.py .carry 1 bert_b2 'vec=;novec=...' '--profile 5 --profile-nodes 30'

VARIANTS: 'NAME=VAR=value,VAR2=value;NAME2=' (the environment variables of each variant, comma-separated; none:
the defaults; bin=PATH runs another onnxgpu binary, e.g. a build of the commit before, copied into .carry). Prints one line per run: latency median, the host part and the time blocked on the GPU (ms).
"""
import json, os, subprocess, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare, make_models
bundle, rounds, models, variants_text = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4]
extra = sys.argv[5].split() if len(sys.argv) > 5 else []
og, peer, libs, skel = compare.unpack_bundle(bundle)
env0 = compare.vulkan_env(libs)
variants = []
for item in variants_text.split(";"):
    name, _, kv = item.partition("=")
    variants.append((name, kv))
compare.install_skeletons(skel, make_models.DEFAULT_ROOT)
files = sorted({make_models.case_model(m) for m in models})  # bert_b2 is a case of bert.onnx
make_models.inflate("full", make_models.DEFAULT_ROOT, names=files)
make_models.make_inputs("full", "h200", make_models.DEFAULT_ROOT, names=files)
for rnd in range(rounds):
    for m in models:
        for name, kv in variants:
            env = dict(env0)
            for setting in filter(None, kv.split(",")):
                k, _, v = setting.partition("=")
                env[k] = v
            binary = env.pop("bin", og)  # a variant's own build: 'base=bin=.carry/onnxgpu_base'
            cmd = [binary, "bench", os.path.join(make_models.DEFAULT_ROOT, "full", make_models.case_model(m) + ".onnx"), "--ep", "webgpu", "--capture",
                   "--io", "bind", "--warmup", "5", "--runs", "40", "--json",
                   "--data-set", os.path.join(make_models.DEFAULT_ROOT, "full", "inputs", "h200", m)] + extra
            r = subprocess.run(cmd, env=env, capture_output=True, text=True)
            try:
                j = json.loads(r.stdout); c = j["counted"]
                print(f"r{rnd} {m:12s} {name:6s} lat {j['latency_ms']['median']:.3f} host {c['host_ms']['median']:.3f} wait {c['wait_ms']['median']:.3f}", flush=True)
                if "profile" in j:
                    pr = j["profile"]
                    print(f"  GPU {pr['gpu_ms_per_run']:.3f} ms summed; " +
                          "; ".join(f"{o['op']} {o['gpu_ms']:.3f}/{o['dispatches']}" for o in pr["by_op"][:8]))
                    for n in pr["top_nodes"]:
                        rate = f" {n['gflop_per_s'] / 1000:5.1f} TFLOP/s" if n.get("flops") else ""
                        print(f"    {n['gpu_ms'] * 1000:8.1f} us {n['dispatches']:2d}{rate} {n['op']:24s} {n['node']}")
            except Exception:
                print(m, name, "failed", r.stderr[-400:], flush=True)
