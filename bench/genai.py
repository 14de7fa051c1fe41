#!/usr/bin/python3
"""GenAI-style decoder benchmark: onnxgpu vs ONNX Runtime's WebGPU EP on the same file, both captured.

The model is bench/make_genai.py's (ONNX Runtime's GenAI model builder's graph for an int4 Llama with
WebGPU graph capture: MatMulNBits, GroupQueryAttention with rotary inside over a static KV buffer, the
lengths derived from the attention mask on the GPU). Both engines run the loop onnxruntime-genai runs:
static KV buffers of --max-len positions fed back as the next step's pasts on the GPU, a static mask, greedy
argmax, logits read back every step:

  onnxgpu decode MODEL --capture --steps N --past-start P0 --max-len M     (tools/cmd_decode.cpp)
  genai_peer MODEL --ep webgpu --capture --steps N --past-start P0 --max-len M   (bench/genai_peer.c)

each a fresh process, alternating which goes first per round. Then, time left, the checks: onnxgpu
`decode --check` (every step's logits and argmax against its CPU reference) and genai_peer --check-cpu
(against ONNX Runtime's CPU EP), over --check-steps steps. Reports ms per token (median over steps 2..N),
tokens/s, the first step, the bytes one token reads at least (every weight once + the KV cache up to the
step's length, mean over the timed steps) and the share of the device's bandwidth, the ratio, and whether
the greedy tokens agree.

  bench/genai.py [--profile h200|swiftshader] [--size full|tiny] [--steps N] [--past-start P0] [--max-len M]
                 [--rounds R] [--check-steps K] [--accuracy-level 4] [--bundle .carry] [--raw F] [--doc F]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import compare  # noqa: E402  (bundle, Vulkan environment, process runner, machine description)

PROFILES = {
    "h200": dict(size="full", past_start=128, steps=896, max_len=2048, rounds=2, check_steps=4),
    "swiftshader": dict(size="tiny", past_start=3, steps=8, max_len=64, rounds=1, check_steps=4),
}
BANDWIDTH = {"h200": 4.8e12}  # NVIDIA's H200 datasheet: 4.8 TB/s HBM3e
T0 = time.monotonic()


def log(msg):
    print(f"[genai {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def model_bytes(path):
    """(weight bytes: every initializer; KV bytes per position: every past at length 1)."""
    import numpy as np
    import onnx
    m = onnx.load(path, load_external_data=False)
    size = {onnx.TensorProto.FLOAT: 4, onnx.TensorProto.UINT8: 1, onnx.TensorProto.INT64: 8, onnx.TensorProto.INT32: 4,
            onnx.TensorProto.FLOAT16: 2}
    weights = sum(int(np.prod(t.dims)) * size[t.data_type] for t in m.graph.initializer)
    kv = 0
    for i in m.graph.input:
        if i.name.startswith("past_key_values."):
            d = [x.dim_value if x.HasField("dim_value") else 1 for x in i.type.tensor_type.shape.dim]
            kv += int(np.prod(d)) * size[i.type.tensor_type.elem_type]
    return weights, kv


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", choices=sorted(PROFILES))
    ap.add_argument("--size", choices=["tiny", "full"])
    for k in ("steps", "past_start", "max_len", "rounds", "check_steps"):
        ap.add_argument("--" + k.replace("_", "-"), type=int)
    ap.add_argument("--accuracy-level", type=int, default=4, help="MatMulNBits accuracy_level of the model (make_genai.py)")
    ap.add_argument("--onnxgpu", default=os.path.join(REPO, "build", "onnxgpu"))
    ap.add_argument("--peer", help="genai_peer (default: built into bench/.peer)")
    ap.add_argument("--bundle", help="device machine: the folder bench/compare --make-bundle wrote (bench/.carry)")
    ap.add_argument("--models-root", default=os.path.join(HERE, "models", "genai"))
    ap.add_argument("--process-timeout", type=float, default=300)
    ap.add_argument("--raw", help="raw JSON lines (default bench/results/genai-<profile>-<time>.jsonl)")
    ap.add_argument("--doc", help="write the markdown section to this file")
    a = ap.parse_args()
    a.profile = a.profile or ("h200" if compare.gpu_present() else "swiftshader")
    for k, v in PROFILES[a.profile].items():
        if getattr(a, k, None) is None:
            setattr(a, k, v)

    lib_dirs, info = [], {}
    if a.bundle:
        info = json.load(open(os.path.join(a.bundle, "info.json")))
        a.onnxgpu, _, lib_dirs, _ = compare.unpack_bundle(a.bundle)
        a.peer = os.path.join(os.path.dirname(a.onnxgpu), "genai_peer")
    elif not a.peer:
        compare.ensure_peer()  # the library
        a.peer = compare.ensure_genai_peer()
    env = compare.vulkan_env(lib_dirs)

    path = os.path.join(a.models_root, f"{a.size}_acc{a.accuracy_level}.onnx")
    if not os.path.exists(path):
        t = time.monotonic()
        subprocess.run([sys.executable, os.path.join(HERE, "make_genai.py"), "--size", a.size, "--out", path,
                        "--accuracy-level", str(a.accuracy_level)], check=True, stdout=sys.stderr)
        log(f"model {path} made ({time.monotonic() - t:.0f} s)")
    weights, kv_pos = model_bytes(path)
    if not a.raw:
        os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
        a.raw = os.path.join(HERE, "results", f"genai-{a.profile}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl")
    raw = open(a.raw, "w")
    meta = {"kind": "meta", "date": time.strftime("%Y-%m-%d %H:%M"), "profile": a.profile, "size": a.size,
            "model": path, "accuracy_level": a.accuracy_level, "steps": a.steps, "past_start": a.past_start,
            "max_len": a.max_len, "weight_bytes": weights, "kv_bytes_per_position": kv_pos,
            "onnxgpu_commit": info.get("commit") or compare.git_commit() or "?",
            "machine": compare.machine_description(a.onnxgpu, env), "command": " ".join(["bench/genai.py"] + sys.argv[1:])}
    raw.write(json.dumps(meta) + "\n")

    loop = ["--steps", str(a.steps), "--past-start", str(a.past_start), "--max-len", str(a.max_len), "--json"]
    og = [a.onnxgpu, "decode", path, "--ep", "webgpu", "--capture"] + loop
    peer = [a.peer, path, "--ep", "webgpu", "--capture"] + loop
    recs = []

    def run(engine, config, rnd, cmd):
        rc, out, err, wall, rss = compare.run_process(cmd, env, a.process_timeout)
        j = compare.parse_json(out)
        ok = rc == 0 and j is not None and j.get("ok", True) is not False
        rec = dict(engine=engine, config=config, round=rnd, ok=ok, rc=rc, wall_s=round(wall, 2), cmd=" ".join(cmd),
                   result=j, error=None if ok else (err.strip()[-1500:] or f"exit {rc}"))
        raw.write(json.dumps(rec) + "\n")
        raw.flush()
        recs.append(rec)
        lp = (j or {}).get("decode_loop") or {}
        st = lp.get("ms_per_step") or {}
        log(f"{engine:8s} {config:8s} r{rnd} " + (f"{st.get('median', 0):.3f} ms/step, first {lp.get('first_step_ms', 0):.0f} ms"
                                                  if ok and st else "ok" if ok else f"FAILED: {rec['error'][-400:]}"))
        return rec

    for rnd in range(1, a.rounds + 1):
        pair = [("onnxgpu", og), ("peer", peer)]
        for engine, cmd in (pair if rnd % 2 else pair[::-1]):
            run(engine, "capture", rnd, cmd)
    if a.check_steps > 0:
        chk = ["--steps", str(a.check_steps), "--past-start", str(a.past_start), "--max-len", str(a.max_len), "--json"]
        run("onnxgpu", "check", 0, [a.onnxgpu, "decode", path, "--ep", "webgpu", "--capture", "--check"] + chk)
        run("peer", "check", 0, [a.peer, path, "--ep", "webgpu", "--capture", "--check-cpu"] + chk)
    raw.close()
    section = report(meta, recs, a.profile)
    print(section)
    if a.doc:
        open(a.doc, "w").write(section + "\n")


def report(meta, recs, profile):
    def loops(engine):
        return [r["result"]["decode_loop"] for r in recs
                if r["engine"] == engine and r["config"] == "capture" and r["ok"] and r["result"].get("decode_loop")]

    rows, med = [], {}
    for engine in ("onnxgpu", "peer"):
        ls = loops(engine)
        if not ls:
            errs = [r["error"] for r in recs if r["engine"] == engine and r["config"] == "capture"]
            rows.append(f"| {engine} | FAILED: {(errs[-1] if errs else '?')[-200:]} |")
            continue
        m = statistics.median(lp["ms_per_step"]["median"] for lp in ls)
        med[engine] = m
        past_mean = (ls[0]["past_start"] + ls[0]["past_end"]) / 2 if "past_end" in ls[0] else meta["past_start"] + meta["steps"] / 2
        total = meta["weight_bytes"] + meta["kv_bytes_per_position"] * past_mean
        bw = BANDWIDTH.get(profile)
        extra = ""
        if engine == "onnxgpu":
            extra = f"replayed {ls[0].get('replayed_steps')}/{ls[0].get('steps')}, KV in place {ls[0].get('appended_in_place_steps')}"
        else:
            extra = f"replays {ls[0].get('capture_replays')}"
        rows.append(f"| {engine} | {m:.3f} ({min(lp['ms_per_step']['min'] for lp in ls):.3f}-"
                    f"{max(lp['ms_per_step']['max'] for lp in ls):.3f}) | {1000 / m:.1f} | "
                    f"{statistics.median(lp['first_step_ms'] for lp in ls):.0f} | {total / 1e9:.3f} | "
                    f"{'-' if not bw else f'{100 * total / (m * 1e-3) / bw:.1f}%'} | {len(ls)} | {extra} |")
    ratio = f"{med['onnxgpu'] / med['peer']:.2f}" if len(med) == 2 else "-"

    def check(engine):
        r = [x for x in recs if x["engine"] == engine and x["config"] == "check"]
        if not r:
            return "not run"
        j = r[-1]["result"] or {}
        c = j.get("check") if engine == "onnxgpu" else (j.get("decode_loop") or {}).get("vs_cpu")
        if not c:
            return "error: " + str(r[-1]["error"])[-200:]
        good = c.get("match") if engine == "onnxgpu" else j.get("match_cpu")
        return f"{'yes' if good else 'NO'} (max abs diff {c.get('max_abs_diff', 0):.1e})"

    t_og, t_peer = (loops(e)[0]["tokens"] if loops(e) else None for e in ("onnxgpu", "peer"))
    same = None
    if t_og and t_peer:
        same = next((i for i, (x, y) in enumerate(zip(t_og, t_peer)) if x != y), min(len(t_og), len(t_peer)))
    lines = [
        f"GenAI-style decoder ({meta['size']}: {meta['weight_bytes'] / 2**20:.0f} MiB of weights, int4 MatMulNBits "
        f"accuracy_level {meta['accuracy_level']}), static KV buffer of {meta['max_len']}, past {meta['past_start']} -> "
        f"{meta['past_start'] + meta['steps'] - 1}, capture on both sides; {meta['date']}, onnxgpu {meta['onnxgpu_commit']}; "
        f"device: {((meta.get('machine') or {}).get('adapter') or {}).get('device', '?')}.",
        "",
        f"Command: `{meta['command']}`",
        "",
        "| engine | ms / token median (min-max) | tokens / s | first step ms | GB read / token | bandwidth use | processes | |",
        "|---|---|---|---|---|---|---|---|",
    ] + rows + [
        "",
        f"Ratio onnxgpu / ONNX Runtime: **{ratio}**. Matches its CPU reference: onnxgpu {check('onnxgpu')}, "
        f"ONNX Runtime {check('peer')}. Greedy tokens equal: {same if same is not None else '-'} leading of "
        f"{len(t_og) if t_og else '-'}."
        + (" (accuracy_level 4 lets ONNX Runtime quantize the activations to int8: its CPU EP does, which parts its "
           "logits from its WebGPU EP's by ~1e-1 on the tiny model; with --accuracy-level 0 they agree to ~2e-6. onnxgpu "
           "computes in float32 on both of its sides.)" if meta["accuracy_level"] == 4 else ""),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
