#!/usr/bin/env python3
"""Host time of an in-line refresh (a run whose input sizes changed only in a plan family's symbolic dims,
refreshed on the run's own path) on a device: decode loops (`onnxgpu decode`, 201 steps from past 128) with
$ONNXGPU_REFRESH_AHEAD=0, so that every step refreshes its plan in line, beside the default (refreshed ahead,
during the step before's wait). Prints per model and round the ms per step, the median plan_ms of steps 3..N
(the in-line refresh) with its 10th and 90th percentiles, and the refresh ahead's mean time on the worker.
Then per model and round prompts of a new length (`decode --prefills 16,24,...,128`, each a new
conversation, $ONNXGPU_REFRESH_AHEAD=0): the first plans, the 14 others refresh its plan in line (or plan
anew where a guard fails); the refreshed ones' plan_ms median, min and max.

  bench/compare --make-bundle --size full --models gpt2_kv,llama_kv        # bench/.carry
  run, carry bench/.carry:  cd bench && python3 inline_refresh.py .carry gpt2_kv,llama_kv [ROUNDS] [VARIANTS]

VARIANTS ('NAME=VAR=value,VAR2=value;NAME2=', as env_ab.py's): in-line loops and prompts of each variant's
settings alternating within each round (e.g. 'keyed=;built=ONNXGPU_REUSE_WGSL=0'), instead of ahead and
in-line. The setting `bin=PATH` runs another onnxgpu build (a path from bench/, e.g. a stripped build
carried in the bundle's folder: 'new=;old=bin=.carry/onnxgpu_old'), to compare two builds side by side.
"""
import json, os, statistics, subprocess, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare, make_models

bundle, models = sys.argv[1], sys.argv[2].split(",")
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
variants = [("ahead", {}), ("inline", {"ONNXGPU_REFRESH_AHEAD": "0"})]
if len(sys.argv) > 4:
    variants = []
    for item in sys.argv[4].split(";"):
        name, _, kv = item.partition("=")
        settings = dict(s.partition("=")[::2] for s in filter(None, kv.split(",")))
        variants.append((name, dict(settings, ONNXGPU_REFRESH_AHEAD="0")))
og, _, lib_dirs, skel = compare.unpack_bundle(bundle)


def build_of(settings):
    """The onnxgpu a variant runs and its environment (the settings less `bin`)."""
    extra = dict(settings)
    path = extra.pop("bin", None)
    return (os.path.join(HERE, path) if path else og), extra


compare.install_skeletons(skel, make_models.DEFAULT_ROOT)
make_models.inflate("full", make_models.DEFAULT_ROOT, names=models)
env0 = compare.vulkan_env(lib_dirs)
for rnd in range(rounds):
    for m in models:
        for name, settings in variants:
            binary, extra = build_of(settings)
            p = subprocess.run([binary, "decode", os.path.join(make_models.DEFAULT_ROOT, "full", m + ".onnx"), "--ep", "webgpu",
                                "--capture", "--steps", "201", "--past-start", "128", "--json"],
                               env=dict(env0, **extra), capture_output=True, text=True)
            try:
                dl = json.loads(p.stdout)["decode_loop"]
            except ValueError:
                print(m, name, "failed", p.stderr[-500:], flush=True)
                continue
            pm = sorted(dl["plan_ms"][2:])
            print(f"r{rnd} {m:9s} {name:6s} ms/step {dl['ms_per_step']['median']:.3f}  plan_ms median "
                  f"{statistics.median(pm):.3f} p10 {pm[len(pm) // 10]:.3f} p90 {pm[9 * len(pm) // 10]:.3f}  "
                  f"refresh ahead mean {dl.get('refresh_ahead_ms_per_step_mean', 0):.3f}", flush=True)
    prompt_variants = variants if len(sys.argv) > 4 else [("", {"ONNXGPU_REFRESH_AHEAD": "0"})]
    for m in models:
        for name, settings in prompt_variants:
            binary, extra = build_of(settings)
            lengths = ",".join(str(n) for n in range(16, 129, 8))
            p = subprocess.run([binary, "decode", os.path.join(make_models.DEFAULT_ROOT, "full", m + ".onnx"), "--ep",
                                "webgpu", "--capture", "--prefills", lengths, "--steps", "2", "--past-start", "0", "--json"],
                               env=dict(env0, **extra), capture_output=True, text=True)
            try:
                pre = json.loads(p.stdout)["decode_loop"]["prefills"]
            except ValueError:
                print(m, name, "prefills failed", p.stderr[-500:], flush=True)
                continue
            pm = sorted(x["plan_ms"] for x in pre if x["refreshed"])
            if not pm:
                print(f"r{rnd} {m:9s} {name} prefills: none refreshed", flush=True)
                continue
            print(f"r{rnd} {m:9s} {name:6s} prefill  {len(pm)} of {len(pre) - 1} new lengths refreshed in line: plan_ms "
                  f"median {statistics.median(pm):.3f} min {pm[0]:.3f} max {pm[-1]:.3f} (first prompt: planned in "
                  f"{pre[0]['plan_ms']:.1f} ms)", flush=True)
