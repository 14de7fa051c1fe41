#!/usr/bin/env python3
"""Where a decode step's time goes, on the device machine: for each model, one `onnxgpu decode` loop as timed
(ms per step, split into time blocked on the GPU + readback and host time) and one with every dispatch timed
(`--profile N`: GPU time per op and the slowest nodes over the loop's last N steps).

  bench/profile_decode.py --bundle .carry [--models gpt2_kv,genai] [--steps 256] [--past-start 128] [--out DIR]

Models: the decode models of make_models.py (gpt2_kv, llama_kv: their skeletons from the bundle) and `genai`
(make_genai.py's full int4 decoder, static KV buffer). Prints each loop's summary; with --out, keeps the JSON.
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bundle", required=True, help="the folder bench/compare --make-bundle wrote (bench/.carry)")
    ap.add_argument("--models", default="gpt2_kv,genai")
    ap.add_argument("--size", default="full")
    ap.add_argument("--steps", type=int, default=256)
    ap.add_argument("--past-start", type=int, default=128)
    ap.add_argument("--profile-steps", type=int, default=8)
    ap.add_argument("--models-root", default=os.path.join(HERE, "models"))
    ap.add_argument("--out", help="folder for each loop's JSON")
    ap.add_argument("--timed-only", action="store_true", help="no profiled loop")
    ap.add_argument("--onnxgpu", help="another onnxgpu binary to run (e.g. a previous build, for an A/B in one call)")
    ap.add_argument("--extra", default="", help="more onnxgpu decode flags, space-separated (e.g. --config k=v)")
    a = ap.parse_args()

    og, _, lib_dirs, skel = compare.unpack_bundle(a.bundle)
    og = a.onnxgpu or og
    env = compare.vulkan_env(lib_dirs)
    models = [m for m in a.models.split(",") if m]
    paths = {}
    plain = [m for m in models if m != "genai"]
    if plain:
        dst = os.path.join(a.models_root, "skel")
        for size in os.listdir(skel):
            shutil.copytree(os.path.join(skel, size), os.path.join(dst, size), dirs_exist_ok=True)
        make_models.inflate(a.size, a.models_root, names=plain)
        paths.update({m: os.path.join(a.models_root, a.size, m + ".onnx") for m in plain})
    if "genai" in models:
        paths["genai"] = os.path.join(a.models_root, f"genai_{a.size}.onnx")
        if not os.path.exists(paths["genai"]):
            subprocess.run([sys.executable, os.path.join(HERE, "make_genai.py"), "--size", a.size, "--out",
                            paths["genai"]], check=True, stdout=sys.stderr)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
    for m in models:
        loop = ["--steps", str(a.steps), "--past-start", str(a.past_start)]
        if m == "genai":
            loop += ["--max-len", str(a.past_start + a.steps + 1)]
        loops = [("timed", [])] + ([] if a.timed_only else
                                   [("profiled", ["--profile", str(a.profile_steps), "--profile-nodes", "30"])])
        for label, extra in loops:
            cmd = [og, "decode", paths[m], "--ep", "webgpu", "--capture"] + loop + extra + a.extra.split()
            print(f"== {m} {label}: {' '.join(cmd)}", flush=True)
            p = subprocess.run(cmd + ["--json"], env=env, capture_output=True, text=True)
            if p.returncode != 0:
                print(p.stderr[-3000:], flush=True)
                continue
            j = json.loads(p.stdout)
            if a.out:
                with open(os.path.join(a.out, f"{m}-{label}.json"), "w") as f:
                    json.dump(j, f, indent=1)
            lp = j["decode_loop"]
            print(f"ms/step {lp['ms_per_step']['median']:.3f}  wait {lp['wait_ms_per_step']['median']:.3f}  host "
                  f"{lp['host_ms_per_step']['median']:.3f} (submit {lp['submit_ms_per_step']['median']:.3f}, writes "
                  f"{lp['write_ms_per_step']['median']:.3f})  dispatches {lp['dispatches_last_step']}  replayed "
                  f"{lp['replayed_steps']}/{lp['steps']}  refreshed {lp['refreshed_steps']} (ahead {lp.get('refreshed_ahead_steps', 0)})  plan ms/step "
                  f"{lp['plan_ms_per_step_mean']:.3f} (ahead {lp.get('refresh_ahead_ms_per_step_mean', 0):.3f})", flush=True)
            if "profile" in j:
                pr = j["profile"]
                print(f"GPU time per step (timestamps): {pr['gpu_ms_per_run']:.3f} ms")
                for o in pr["by_op"]:
                    print(f"  {o['op']:<34} {o['gpu_ms']:8.3f} ms {100 * o['share']:5.1f}% {o['dispatches']:4d} disp "
                          f"{o['gb_per_s']:8.1f} GB/s" + (f" {o['gflop_per_s']:8.1f} GFLOP/s" if o.get("flops") else ""))
                for n in pr["top_nodes"]:
                    print(f"  {n['node'][:44]:<44} {n['op'][:22]:<22} {1000 * n['gpu_ms']:8.1f} us {n['dispatches']} "
                          f"{n['bytes'] / 1e6:8.2f} MB {n['gb_per_s']:8.1f} GB/s"
                          + (f" {n['gflop_per_s']:8.1f} GFLOP/s" if n.get("flops") else ""))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
