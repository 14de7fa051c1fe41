#!/usr/bin/env python3
"""Measures engine variants side by side on a device: each variant is a set of environment settings
(a MatMul tile `ONNXGPU_MATMUL_TILE`, a split-K policy `ONNXGPU_MATMUL_SPLIT`, a Conv tile
`ONNXGPU_CONV_TILE`, Conv fusion off `ONNXGPU_CONV_FUSION=0` or only its pools `ONNXGPU_CONV_POOL=0`, Dawn
device toggles `ONNXGPU_DAWN_TOGGLES`, see src/webgpu/kernels/matmul.cpp, conv.cpp, src/runtime/fusion.cpp
and src/webgpu/device.cpp); for each variant
and case, `onnxgpu bench --profile` runs and this prints the whole-run median, host time per run (and
the part spent in wgpuQueueSubmit), the GPU time of the MatMul dispatches and of all dispatches.
Rounds alternate the variants (A B C A B C), since the machines are noisy.

  bench/variants.py --bundle bench/.carry --cases gpt2,bert \\
      --variants 'base;tile8=ONNXGPU_MATMUL_TILE=64x128x16/8x2;split=ONNXGPU_MATMUL_SPLIT=1024/4/16'

--raw F writes every `onnxgpu bench` JSON (with the slowest 60 nodes of each profile) as JSON lines.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402
import make_models  # noqa: E402


def parse_variants(text):
    out = []
    for item in text.split(";"):
        item = item.strip()
        if not item:
            continue
        name, _, rest = item.partition("=")
        env = {}
        for kv in filter(None, rest.split("|")):
            k, _, v = kv.partition("=")
            env[k] = v
        out.append((name, env))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bundle", help="the folder compare.py --make-bundle wrote (device machine)")
    ap.add_argument("--onnxgpu", default=os.path.join(compare.REPO, "build", "onnxgpu"))
    ap.add_argument("--binary", help="with --bundle: run this onnxgpu instead of the bundle's (a baseline build "
                    "carried beside it, e.g. .carry/onnxgpu_base), with the bundle's libraries")
    ap.add_argument("--size", default="full")
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--cases", default="gpt2,gpt2_s16,bert")
    ap.add_argument("--variants", default="base",
                    help="'NAME[=K=V|K=V...];...': each variant's environment settings ('|' between settings)")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--raw", help="write every bench JSON here (JSON lines)")
    a = ap.parse_args()
    lib_dirs = []
    if a.bundle:
        a.onnxgpu, _, lib_dirs, skel = compare.unpack_bundle(a.bundle)
        if a.binary:
            a.onnxgpu = os.path.abspath(a.binary)
        dst = os.path.join(make_models.DEFAULT_ROOT, "skel")
        os.makedirs(dst, exist_ok=True)
        for size in os.listdir(skel):
            shutil.copytree(os.path.join(skel, size), os.path.join(dst, size), dirs_exist_ok=True)
    env = compare.vulkan_env(lib_dirs)
    names = sorted({make_models.case_model(c) for c in a.cases.split(",")})
    make_models.inflate(a.size, make_models.DEFAULT_ROOT, names=names)
    make_models.make_inputs(a.size, a.profile, make_models.DEFAULT_ROOT, names=names)
    variants = parse_variants(a.variants)
    raw = open(a.raw, "a") if a.raw else None
    print(f"{'variant':10s} {'case':10s} {'median ms':>10s} {'host ms':>8s} {'submit':>7s} {'MatMul GPU':>11s} "
          f"{'Conv GPU':>9s} {'all GPU':>8s} {'disp':>5s}", flush=True)
    for rnd in range(a.rounds):
        for case in a.cases.split(","):
            for name, settings in variants:
                e = dict(env)
                for k in ("ONNXGPU_MATMUL_TILE", "ONNXGPU_MATMUL_TILE_SMALL", "ONNXGPU_MATMUL_SPLIT", "ONNXGPU_DAWN_TOGGLES",
                          "ONNXGPU_CHUNKED_SUBMITS", "ONNXGPU_EPILOGUE_ACTIVATION", "ONNXGPU_CONV_TILE",
                          "ONNXGPU_CONV_FUSION", "ONNXGPU_CONV_POOL"):
                    e.pop(k, None)
                e.update(settings)
                model = os.path.join(make_models.DEFAULT_ROOT, a.size, make_models.case_model(case) + ".onnx")
                data = os.path.join(make_models.DEFAULT_ROOT, a.size, "inputs", a.profile, case)
                cmd = [a.onnxgpu, "bench", model, "--data-set", data, "--runs", str(a.runs), "--warmup", "3",
                       "--profile", "3", "--profile-nodes", "60", "--json", "--atol", "1e-4", "--rtol", "1e-3"]
                r = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=300)
                try:
                    j = json.loads(r.stdout)
                except ValueError:
                    print(f"{name:10s} {case:10s} FAILED: {r.stderr.strip()[-300:]}", flush=True)
                    continue
                if raw:
                    raw.write(json.dumps({"variant": name, "settings": settings, "case": case, "round": rnd,
                                          "result": j}) + "\n")
                    raw.flush()
                p = j.get("profile", {})
                mm = sum(o["gpu_ms"] for o in p.get("by_op", []) if o["op"].startswith("MatMul"))
                cv = sum(o["gpu_ms"] for o in p.get("by_op", []) if o["op"].startswith("Conv"))
                c = j.get("counted", {})
                med = lambda k: (c.get(k) or {}).get("median", float("nan"))  # noqa: E731
                bad = (j.get("compare") or {}).get("passed") is False
                print(f"{name:10s} {case:10s} {j['latency_ms']['median']:10.3f} {med('host_ms'):8.3f} "
                      f"{med('submit_ms'):7.3f} {mm:11.3f} {cv:9.3f} {p.get('gpu_ms_per_run', float('nan')):8.3f} "
                      f"{j['plan']['dispatches']:5d}{'  MISMATCH' if bad else ''}", flush=True)


if __name__ == "__main__":
    main()
