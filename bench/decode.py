#!/usr/bin/python3
"""Generation benchmark: a greedy decode loop with the KV cache on the GPU, onnxgpu vs ONNX Runtime WebGPU.

For each decode-step model (bench/make_models.py: gpt2_kv, GPT-2 small; llama_kv, a ~0.85B Llama-style
step with RMSNorm, rotary embedding, grouped-query attention and a SiLU MLP in plain ONNX ops) it runs,
each a fresh process, in alternating order (round 1: onnxgpu first; round 2: the peer first):

  onnxgpu decode MODEL --steps N --past-start P0 --capture    (and --no-capture)
  ort_peer MODEL --ep webgpu --decode-loop N --past-start P0   (its growing loop: presents bound on the GPU)

Step k feeds past length P0+k at position P0+k (step 0's past is zeros), so the h200 profile runs past
128 -> 1023 (P0 128, 896 steps). Both report ms per step over steps 2..N (median, min, max), the first step
(planning and shader compilation included: the first-token time of a fresh session), session creation and
the tokens fed. From the median this writes tokens per second, the bytes one token reads at least (every
weight once + the past KV cache once, the mean over the timed steps) and the fraction of the device's
memory bandwidth that implies (H200: 4.8 TB/s, NVIDIA's H200 datasheet figure for HBM3e, SXM and NVL
alike), and the ratio onnxgpu / peer. Then, time left, a short correctness check per model: onnxgpu
`decode --check` (every step's logits and argmax against the CPU EP) and the peer's `--check-cpu`, both
over CHECK_STEPS steps; and whether the two engines' greedy tokens agree.

  bench/decode.py [--profile swiftshader|h200] [--models gpt2_kv,llama_kv] [--steps N] [--past-start P0]
                  [--rounds R] [--deadline S] [--bundle .carry] [--raw F] [--doc F] [--update-doc docs/benchmarks.md]
  bench/decode.py --report-only RAW [--doc F] [--update-doc docs/benchmarks.md]

--doc writes the markdown section alone; --update-doc puts it into a page between the markers
<!-- generation:begin --> and <!-- generation:end --> (replacing what is there, else after the latency table);
bench/compare keeps that block when it rewrites docs/benchmarks.md. Models and binaries come as for
bench/compare (its --make-bundle packs both decode models' skeletons). Raw results: JSON lines, one per process.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import compare  # noqa: E402  (the peer build, bundle, process runner and machine description)
import make_models  # noqa: E402

# H200 HBM3e bandwidth, NVIDIA's datasheet (https://www.nvidia.com/en-us/data-center/h200/): 4.8 TB/s for
# the H200 SXM and the H200 NVL.
BANDWIDTH = {"h200": (4.8e12, "NVIDIA H200 datasheet: 4.8 TB/s HBM3e (SXM and NVL)"),
             "swiftshader": (None, "SwiftShader emulates the GPU on the CPU: no device bandwidth")}
PROFILES = {  # model size, first past length, steps, rounds, deadline (s, counted from the start), check steps
    "h200": dict(size="full", past_start=128, steps=896, rounds=1, deadline=480, check_steps=8),
    "swiftshader": dict(size="tiny", past_start=8, steps=6, rounds=1, deadline=480, check_steps=4),
}
CONFIGS = ["capture", "no-capture"]  # onnxgpu's; the peer runs its growing loop without capture (it cannot
# capture a growing past: /work/shared/peer/README.md, "Decode loop")
BEGIN, END = compare.GEN_BEGIN, compare.GEN_END
T_START = time.monotonic()


def log(msg):
    print(f"[decode {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def model_bytes(path):
    """(weight bytes: every initializer; KV bytes per position: every past_* input at past length 1, other
    symbolic dims 1), from the graph alone (external data is not read)."""
    import numpy as np
    import onnx

    def itemsize(elem_type):
        if hasattr(onnx.helper, "tensor_dtype_to_np_dtype"):  # onnx >= 1.13 (the device machine has 1.23)
            return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)).itemsize
        return np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[elem_type]).itemsize  # onnx 1.12 (Debian's)

    m = onnx.load(path, load_external_data=False)
    weights = 0
    for t in m.graph.initializer:
        weights += int(np.prod(t.dims)) * itemsize(t.data_type)
    inits = {t.name for t in m.graph.initializer}
    kv = 0
    for i in m.graph.input:
        if i.name in inits or not i.name.startswith("past_"):
            continue
        tt = i.type.tensor_type
        n = 1
        for d in tt.shape.dim:
            n *= d.dim_value if d.HasField("dim_value") else 1
        kv += n * itemsize(tt.elem_type)
    return weights, kv


class Run:
    def __init__(self, a, onnxgpu, peer, env, raw_path):
        self.a, self.onnxgpu, self.peer, self.env = a, onnxgpu, peer, env
        self.raw = open(raw_path, "a")

    def left(self):
        return self.a.deadline - (time.monotonic() - T_START)

    def run(self, engine, model, config, rnd, cmd):
        timeout = max(10.0, min(self.a.process_timeout, self.left() + 60))  # may overrun the deadline by 60 s
        rc, out, err, wall, rss = compare.run_process(cmd, self.env, timeout)
        j = compare.parse_json(out)
        ok = rc == 0 and j is not None and j.get("ok", True) is not False
        rec = dict(engine=engine, model=model, config=config, round=rnd, ok=ok, rc=rc, wall_s=round(wall, 3),
                   peak_rss_mb=round(rss, 1), cmd=" ".join(cmd), result=j,
                   time=time.strftime("%Y-%m-%dT%H:%M:%S"))
        if not ok:
            rec["error"] = (j or {}).get("error") or err.strip()[-1500:] or f"exit {rc}"
        self.raw.write(json.dumps(rec) + "\n")
        self.raw.flush()
        loop = (j or {}).get("decode_loop") or {}
        st = loop.get("ms_per_step") or {}
        if ok and st:
            what = f"{st.get('median', float('nan')):.3f} ms/step, first {loop.get('first_step_ms', float('nan')):.0f} ms"
            if engine == "onnxgpu":
                what += (f", replayed {loop.get('replayed_steps')}/{loop.get('steps')}"
                         f" (refreshed {loop.get('refreshed_steps')}, plan {loop.get('plan_ms_per_step_mean') or 0:.2f} ms/step)")
        elif ok:
            what = "ok"
        else:
            what = f"FAILED: {str(rec.get('error'))[:300]}"
        log(f"{engine:8s} {model:9s} {config:16s} r{rnd} {what}  ({wall:.1f} s)")
        return rec


def og_cmd(r, path, config, steps, p0, extra=()):
    return [r.onnxgpu, "decode", path, "--ep", "webgpu", "--" + config, "--steps", str(steps), "--past-start", str(p0),
            "--json"] + list(extra)


def peer_cmd(r, path, steps, p0, extra=()):
    return [r.peer, path, "--ep", "webgpu", "--decode-loop", str(steps), "--past-start", str(p0), "--json"] + list(extra)


# ---------------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------------

def fmt(x, nd=3):
    if x is None:
        return "-"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.{nd}f}"


def summary(recs, engine, model, config):
    """Median over rounds of each process's median ms per step, and the rest from the same processes."""
    res = [x for x in recs if x["engine"] == engine and x["model"] == model and x["config"] == config and x["ok"]]
    loops = [x["result"]["decode_loop"] for x in res if (x["result"] or {}).get("decode_loop")]
    loops = [lp for lp in loops if lp.get("ms_per_step")]
    if not loops:
        fails = [x for x in recs if x["engine"] == engine and x["model"] == model and x["config"] == config]
        return {"error": fails[-1].get("error") if fails else None}
    g = {"median": statistics.median(lp["ms_per_step"]["median"] for lp in loops),
         "min": min(lp["ms_per_step"]["min"] for lp in loops), "max": max(lp["ms_per_step"]["max"] for lp in loops),
         "n": sum(lp["ms_per_step"]["n"] for lp in loops), "rounds": len(loops),
         "first": statistics.median(lp["first_step_ms"] for lp in loops),
         "create": statistics.median(x["result"].get("session_create_ms") or 0 for x in res),
         "tokens": loops[0].get("tokens"), "steps": loops[0].get("steps"),
         "past": (loops[0].get("past_start"), loops[0].get("past_end"))}
    if engine == "onnxgpu":
        lp = loops[0]
        g["replayed"] = f"{lp.get('replayed_steps')}/{lp.get('steps')}"
        if lp.get("refreshed_steps") is not None:  # plans that serve a shape family
            g["replayed"] += f" ({lp['refreshed_steps']} refreshed, plan {lp.get('plan_ms_per_step_mean', 0):.2f} ms/step)"
        g["time_limited"] = any(lp.get("time_limited") for lp in loops)
    return g


def check_str(recs, engine, model):
    res = [x for x in recs if x["engine"] == engine and x["model"] == model and x["config"] == "check"]
    if not res:
        return "not run"
    x = res[-1]
    j = x.get("result") or {}
    if engine == "onnxgpu":
        c = j.get("check")
        if not c:
            return "error: " + str(x.get("error"))[:120].replace("|", "/")
        return f"{'yes' if c.get('match') else 'NO'} ({c.get('max_abs_diff', 0):.1e}, {c.get('steps_compared')} steps)"
    d = j.get("decode_loop") or {}
    vs = d.get("vs_cpu")
    if not vs:
        return "error: " + str(x.get("error"))[:120].replace("|", "/")
    return f"{'yes' if d.get('match_cpu') else 'NO'} ({vs.get('max_abs_diff', 0):.1e}, {vs.get('steps_compared')} steps)"


def agree(t1, t2):
    """How many leading greedy tokens two loops share."""
    if not t1 or not t2:
        return None
    n = 0
    for a, b in zip(t1, t2):
        if a != b:
            break
        n += 1
    return n


def build_section(meta, recs):
    bw, bw_src = meta.get("bandwidth") or (None, "")
    models = meta.get("models", [])
    L = [BEGIN, "## Generation (greedy decode, KV cache on the GPU)\n"]
    L.append(f"Generated by `bench/decode.py` on {meta.get('date')}; profile `{meta.get('profile')}`, model size "
             f"`{meta.get('size')}`, past {meta.get('past_start')} -> {meta.get('past_start', 0) + meta.get('steps', 0) - 1} "
             f"({meta.get('steps')} steps), {meta.get('rounds')} round(s), `--deadline {meta.get('deadline_s')}`; "
             f"onnxgpu {meta.get('onnxgpu_commit', '?')}, peer ort_peer with ONNX Runtime 1.30.0 (WebGPU EP). "
             f"Device: {adapter_str(meta)}.\n")
    L.append("Command:\n\n```\n" + meta.get("command", "") + "\n```\n")
    L.append("Each process runs one greedy loop from a fresh session: step k feeds past length P0+k at position P0+k "
             "(step 0's past is zeros), the argmax of each step's logits is the next token, the presents stay on the GPU "
             "and feed the next step (onnxgpu: `Session::run_on_device`; peer: `--io bind`, presents bound with "
             "`BindOutputToDevice`); only the logits are read back. ms per token: median over steps 2..N of each "
             "process (min-max over all its steps); first token: step 1 of a fresh session (planning and shader "
             "compilation included), after session creation. Bytes per token: every weight once + the past KV cache "
             "once at the mean past length of the timed steps, a lower bound; bandwidth use = those bytes / the "
             f"median step time / the device's bandwidth ({bw_src}). The peer cannot capture a growing past, so it "
             "runs without capture; onnxgpu's replayed column says how many steps replayed a recorded plan, how many of "
             "those first refreshed it for the step's new sizes (a plan serving a shape family), and the mean host "
             "time a step spent planning or refreshing (steps 2..N).\n")
    L.append("| model | engine | config | ms / token median (min-max) | tokens / s | first token ms | session create ms | "
             "GB read / token | bandwidth use | ratio og / peer | replayed |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for m in models:
        info = meta.get("model_bytes", {}).get(m, {})
        peer = summary(recs, "peer", m, "no-capture")
        rows = [("onnxgpu", c) for c in meta.get("configs", CONFIGS)] + [("peer", "no-capture")]
        for engine, config in rows:
            g = peer if engine == "peer" else summary(recs, engine, m, config)
            if "median" not in g:
                L.append(f"| {m} | {engine} | {config} | failed: {str(g.get('error'))[:160].replace('|', '/')} "
                         "| - | - | - | - | - | - | - |")
                continue
            ps, pe = g["past"]  # the timed steps (2..N) feed pasts ps+1 .. pe
            mean_past = (ps + 1 + pe) / 2.0 if ps is not None and pe is not None and pe > ps else (ps or 0)
            per_token = info.get("weights", 0) + info.get("kv_per_position", 0) * mean_past
            tps = 1000.0 / g["median"] if g["median"] else None
            use = per_token / (g["median"] / 1000.0) / bw if bw and g["median"] else None
            ratio = g["median"] / peer["median"] if engine == "onnxgpu" and "median" in peer else None
            lim = " [time limit]" if g.get("time_limited") else ""
            L.append(f"| {m} | {engine} | {config} | {fmt(g['median'])} ({fmt(g['min'])}-{fmt(g['max'])}){lim} | "
                     f"{fmt(tps, 1)} | {fmt(g['first'])} | {fmt(g['create'])} | {per_token / 1e9:.3f} | "
                     f"{f'{100 * use:.1f}%' if use is not None else '-'} | {fmt(ratio, 2) if ratio else '-'} | "
                     f"{g.get('replayed', '-')} |")
    L.append("")
    L.append("| model | parameters | weights | KV cache per position | onnxgpu matches CPU EP | peer matches its CPU EP | "
             "greedy tokens equal (og capture vs peer) |")
    L.append("|---|---|---|---|---|---|---|")
    for m in models:
        info = meta.get("model_bytes", {}).get(m, {})
        man = (meta.get("manifest") or {}).get(m, {})
        og, peer = summary(recs, "onnxgpu", m, "capture"), summary(recs, "peer", m, "no-capture")
        n = agree(og.get("tokens"), peer.get("tokens"))
        eq = f"{n} of {min(len(og['tokens']), len(peer['tokens']))} leading" if n is not None else "-"
        params = man.get("parameters")
        L.append(f"| {m} | {f'{params / 1e6:.0f}M' if params else '-'} | {info.get('weights', 0) / 2**20:.0f} MiB | "
                 f"{info.get('kv_per_position', 0) / 1024:.0f} KiB | {check_str(recs, 'onnxgpu', m)} | "
                 f"{check_str(recs, 'peer', m)} | {eq} |")
    L.append("")
    L.append("Checks: `onnxgpu decode --check` (the same loop on the CPU EP, fed the same tokens: every step's logits "
             "within atol 1e-4 + rtol 1e-3, and the same argmax) and the peer's `--check-cpu`, over "
             f"{meta.get('check_steps')} steps from past {meta.get('past_start')}. With random weights the logits are "
             "close together, so the two engines' greedy paths may part at a near tie without either being wrong.\n")
    L.append(END)
    return "\n".join(L) + "\n"


def adapter_str(meta):
    m = meta.get("machine") or {}
    a = m.get("adapter") or {}
    return f"{a.get('device', '?')} ({a.get('backend', '?')}, {a.get('adapter_type', '?')})" if a else \
        str(m.get("adapter_error", "?"))[:100]


def write_report(raw_path, doc, update_doc):
    meta, recs = compare.load_raw(raw_path)
    section = build_section(meta, recs)
    if doc:
        with open(doc, "w") as f:
            f.write(section)
        log(f"report -> {doc}")
    if update_doc:
        text = open(update_doc).read() if os.path.exists(update_doc) else ""
        with open(update_doc, "w") as f:
            f.write(compare.splice_generation(text, section))
        log(f"section -> {update_doc}")


# ---------------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", choices=sorted(PROFILES), help="h200 (default with a GPU) or swiftshader")
    ap.add_argument("--size", choices=sorted(make_models.SIZES))
    ap.add_argument("--models", default=",".join(make_models.DECODE_MODELS))
    ap.add_argument("--steps", type=int)
    ap.add_argument("--past-start", type=int)
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--check-steps", type=int, help="steps of the correctness checks (0: none)")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="onnxgpu's: capture,no-capture")
    ap.add_argument("--deadline", type=float, help="start no process after this many seconds from the start "
                    "(inflation included); a process may overrun it by 60 s")
    ap.add_argument("--process-timeout", type=float, default=400)
    ap.add_argument("--onnxgpu", default=os.path.join(REPO, "build", "onnxgpu"))
    ap.add_argument("--peer", help="ort_peer (default: bench/.peer built from /work/shared/peer)")
    ap.add_argument("--models-root", default=make_models.DEFAULT_ROOT)
    ap.add_argument("--bundle", help="device machine: the folder bench/compare --make-bundle wrote (bench/.carry)")
    ap.add_argument("--raw", help="raw JSON lines (default bench/results/decode-<profile>-<time>.jsonl)")
    ap.add_argument("--doc", help="write the markdown section to this file")
    ap.add_argument("--update-doc", help="put the section into this page (e.g. docs/benchmarks.md)")
    ap.add_argument("--report-only", metavar="RAW", help="only write the report from a raw file")
    a = ap.parse_args()

    if a.report_only:
        write_report(a.report_only, a.doc, a.update_doc)
        return
    a.profile = a.profile or ("h200" if compare.gpu_present() else "swiftshader")
    for k, v in PROFILES[a.profile].items():
        if getattr(a, k, None) is None:
            setattr(a, k, v)
    models = [m for m in a.models.split(",") if m]
    configs = [c for c in a.configs.split(",") if c]
    for m in models:
        if m not in make_models.ALL_MODELS:
            ap.error(f"unknown model {m!r}")
    command = " ".join(["bench/decode.py"] + sys.argv[1:])

    lib_dirs, bundle_info = [], {}
    if a.bundle:
        bundle_info = json.load(open(os.path.join(a.bundle, "info.json")))
        a.onnxgpu, a.peer, lib_dirs, skel = compare.unpack_bundle(a.bundle)
        compare.install_skeletons(skel, a.models_root)
    elif not a.peer:
        a.peer = compare.ensure_peer()
    if not os.path.exists(a.onnxgpu):
        raise SystemExit(f"{a.onnxgpu} not found: run scripts/build")
    env = compare.vulkan_env(lib_dirs)

    skel_dir = os.path.join(a.models_root, "skel", a.size)
    if not all(os.path.exists(os.path.join(skel_dir, m + ".onnx")) for m in models):
        make_models.export(a.size, a.models_root, names=models)  # needs torch 1.13 (not on the device machine)
    t0 = time.monotonic()
    make_models.inflate(a.size, a.models_root, names=models)
    log(f"models ready ({time.monotonic() - t0:.0f} s)")
    manifest = json.load(open(os.path.join(a.models_root, a.size, "manifest.json")))
    path = {m: os.path.join(a.models_root, a.size, m + ".onnx") for m in models}

    if not a.raw:
        os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
        a.raw = os.path.join(HERE, "results", f"decode-{a.profile}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl")
    bw = BANDWIDTH.get(a.profile, (None, ""))
    meta = {"kind": "meta", "date": time.strftime("%Y-%m-%d %H:%M"), "profile": a.profile, "size": a.size,
            "models": models, "steps": a.steps, "past_start": a.past_start, "rounds": a.rounds,
            "check_steps": a.check_steps, "configs": configs, "deadline_s": a.deadline, "command": command,
            "onnxgpu_commit": bundle_info.get("commit") or compare.git_commit() or "?", "bundle": bundle_info or None,
            "machine": compare.machine_description(a.onnxgpu, env), "bandwidth": list(bw),
            "manifest": {m: manifest.get(m) for m in models},
            "model_bytes": {m: dict(zip(("weights", "kv_per_position"), model_bytes(path[m]))) for m in models}}
    with open(a.raw, "w") as f:
        f.write(json.dumps(meta) + "\n")
    log(f"profile {a.profile}, size {a.size}, past {a.past_start} + {a.steps} steps, raw -> {a.raw}")
    r = Run(a, a.onnxgpu, a.peer, env, a.raw)

    # Per model: onnxgpu with capture and the peer next to each other (the peer first in even rounds), then
    # onnxgpu without capture. onnxgpu's loop gets --time-limit: its share of the time left (a loop that plans
    # every step anew can be slow), so that the processes after it still run; the peer has no such option.
    jobs = []
    for rnd in range(1, a.rounds + 1):
        for m in models:
            pair = [("onnxgpu", configs[0]), ("peer", "no-capture")] if configs else [("peer", "no-capture")]
            if rnd % 2 == 0:
                pair.reverse()
            jobs += [(rnd, m, e, c) for e, c in pair + [("onnxgpu", c) for c in configs[1:]]]
    checks = len(models) * 2 if a.check_steps > 0 else 0
    for n, (rnd, m, engine, config) in enumerate(jobs):
        if r.left() <= 0:
            log(f"deadline ({a.deadline:.0f} s) reached: {engine} {m} {config} r{rnd} not run")
            continue
        if engine == "peer":
            cmd = peer_cmd(r, path[m], a.steps, a.past_start)
        else:
            share = r.left() / (len(jobs) - n + 0.5 * checks)
            cmd = og_cmd(r, path[m], config, a.steps, a.past_start, ["--time-limit", f"{max(20.0, share):.0f}"])
        r.run(engine, m, config, rnd, cmd)
    if a.check_steps > 0:
        for m in models:
            for engine, cmd in (("onnxgpu", og_cmd(r, path[m], "capture", a.check_steps, a.past_start, ["--check"])),
                                ("peer", peer_cmd(r, path[m], a.check_steps, a.past_start, ["--check-cpu"]))):
                if r.left() <= 0:
                    log(f"deadline reached: {engine} {m} check not run")
                    continue
                r.run(engine, m, "check", 0, cmd)
    r.raw.close()
    write_report(a.raw, a.doc, a.update_doc)
    log(f"done in {time.monotonic() - T_START:.0f} s")


if __name__ == "__main__":
    main()
