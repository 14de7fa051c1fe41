#!/usr/bin/env python3
"""Measures MatMul tile shapes on a device: for each $ONNXGPU_MATMUL_TILE value (see
src/webgpu/kernels/matmul.cpp), runs `onnxgpu bench --profile` on benchmark cases and prints the
whole-run median and the GPU time of the MatMul (and MatMulAdd) dispatches per run.

  bench/matmul_tiles.py --bundle bench/.carry --cases gpt2,bert --tiles 64x128x16/8x2,64x64x16/4x1

The default tile table in matmul.cpp was chosen from this script's output on the H200 (docs/benchmarks.md).
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402
import make_models  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bundle", help="the folder compare.py --make-bundle wrote (device machine)")
    ap.add_argument("--onnxgpu", default=os.path.join(compare.REPO, "build", "onnxgpu"))
    ap.add_argument("--size", default="full")
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--cases", default="gpt2,gpt2_s16,bert")
    ap.add_argument("--tiles", default="default,64x64x16/4x1,64x128x16/8x2,128x128x8/8x2,128x64x16/8x1,64x128x8/4x2")
    ap.add_argument("--runs", type=int, default=20)
    a = ap.parse_args()
    lib_dirs = []
    if a.bundle:
        a.onnxgpu, _, lib_dirs, skel = compare.unpack_bundle(a.bundle)
        dst = os.path.join(make_models.DEFAULT_ROOT, "skel")
        os.makedirs(dst, exist_ok=True)
        import shutil
        for size in os.listdir(skel):
            shutil.copytree(os.path.join(skel, size), os.path.join(dst, size), dirs_exist_ok=True)
    env = compare.vulkan_env(lib_dirs)
    make_models.inflate(a.size, make_models.DEFAULT_ROOT)
    make_models.make_inputs(a.size, a.profile, make_models.DEFAULT_ROOT)
    print(f"{'tile':18s} {'case':10s} {'median ms':>10s} {'MatMul GPU ms':>14s} {'all GPU ms':>11s}", flush=True)
    for tile in a.tiles.split(","):
        e = dict(env)
        e.pop("ONNXGPU_MATMUL_TILE", None)
        if tile != "default":
            e["ONNXGPU_MATMUL_TILE"] = tile
        for case in a.cases.split(","):
            model = os.path.join(make_models.DEFAULT_ROOT, a.size, make_models.case_model(case) + ".onnx")
            data = os.path.join(make_models.DEFAULT_ROOT, a.size, "inputs", a.profile, case)
            cmd = [a.onnxgpu, "bench", model, "--data-set", data, "--runs", str(a.runs), "--warmup", "3",
                   "--profile", "3", "--json", "--atol", "1e-4", "--rtol", "1e-3"]
            r = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=300)
            try:
                j = json.loads(r.stdout)
            except ValueError:
                print(f"{tile:18s} {case:10s} FAILED: {r.stderr.strip()[-300:]}", flush=True)
                continue
            p = j.get("profile", {})
            mm = sum(o["gpu_ms"] for o in p.get("by_op", []) if o["op"] in ("MatMul", "MatMulAdd"))
            bad = (j.get("compare") or {}).get("passed") is False
            print(f"{tile:18s} {case:10s} {j['latency_ms']['median']:10.3f} {mm:14.3f} "
                  f"{p.get('gpu_ms_per_run', float('nan')):11.3f}{'  MISMATCH' if bad else ''}", flush=True)


if __name__ == "__main__":
    main()
