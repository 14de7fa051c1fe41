#!/usr/bin/python3
"""onnxgpu's CPU EP vs ONNX Runtime 1.30's CPU EP (the peer, /work/shared/peer) on this machine.

Each case runs in fresh processes, interleaved A B A B (onnxgpu, then the peer, per round), on the same
input .pb files; the peer's first run writes the reference outputs that onnxgpu's runs are checked against.
Prints a markdown section (machine, command, ms per run side by side, ratio onnxgpu / peer) and writes it
to --out; raw JSON lines go to --raw.

  /usr/bin/python3 bench/cpu_compare.py                           # gpt2_w96, gpt2, bert (full, sequence 128)
  /usr/bin/python3 bench/cpu_compare.py --cases gpt2_w96 --runs 200
  /usr/bin/python3 bench/cpu_compare.py --threads 1               # both engines on one intra-op thread

Cases: gpt2_w96 is the peer's probe model /work/shared/peer/models/c_gpt2_tiny.onnx (GPT-2, 3 layers,
width 96) at input_ids 1x16 (per-op overhead); the others are bench/make_models.py models
(`make_models.py all --size full --profile h200` first: gpt2 / bert at batch 1, sequence 128: compute).
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import compare  # noqa: E402  (ensure_peer: the peer built into bench/.peer)

PROBE_MODELS = "/work/shared/peer/models"
# case -> (model path, peer args that make the inputs, or None: inputs from make_models.py)
CASES = {
    "gpt2_w96": (os.path.join(PROBE_MODELS, "c_gpt2_tiny.onnx"), ["--shape", "input_ids=1x16"]),
    "gpt2_s16": ("{models}/{size}/gpt2.onnx", None),
    "gpt2": ("{models}/{size}/gpt2.onnx", None),
    "bert": ("{models}/{size}/bert.onnx", None),
    "gpt2_kv": ("{models}/{size}/gpt2_kv.onnx", None),
    "mlp": ("{models}/{size}/mlp.onnx", None),
    "cnn": ("{models}/{size}/cnn.onnx", None),
}


def log(msg):
    print(f"[cpu_compare] {msg}", file=sys.stderr, flush=True)


def run_json(cmd, timeout):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        return {"ok": False, "error": (p.stderr or p.stdout)[-500:], "cmd": cmd}


def prepare(case, a, peer):
    """Returns (model, data dir with input_K.pb and the peer's output_K.pb)."""
    model, make_inputs = CASES[case]
    model = model.format(models=a.models, size=a.size)
    if not os.path.exists(model):
        sys.exit(f"cpu_compare: {model} is missing (bench/make_models.py all --size {a.size} --profile {a.profile})")
    ref = os.path.join(a.work, case)
    if not os.path.exists(os.path.join(ref, "output_0.pb")):
        os.makedirs(ref, exist_ok=True)
        src = make_inputs if make_inputs is not None else [
            "--input-dir", os.path.join(a.models, a.size, "inputs", a.profile, case)]
        r = run_json([peer, model, "--ep", "cpu", *src, "--out-dir", ref, "--runs", "1", "--warmup", "0", "--json"],
                     a.time_limit * 4)
        if not r.get("ok", True) or not os.path.exists(os.path.join(ref, "output_0.pb")):
            sys.exit(f"cpu_compare: the peer could not make the reference of {case}: {r.get('error')}")
    return model, ref


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="gpt2_w96,gpt2,bert")
    ap.add_argument("--size", default="full")
    ap.add_argument("--profile", default="h200", help="make_models.py inputs profile (h200: sequence 128)")
    ap.add_argument("--models", default=os.path.join(HERE, "models"))
    ap.add_argument("--onnxgpu", default=os.path.join(REPO, "build", "onnxgpu"))
    ap.add_argument("--runs", type=int, default=0, help="timed runs per process (0: 200 for gpt2_w96, 10 otherwise)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads of both engines (0: their default)")
    ap.add_argument("--time-limit", type=float, default=60, help="per process, seconds")
    ap.add_argument("--work", default=os.path.join(HERE, "results", "cpu"))
    ap.add_argument("--raw", default=os.path.join(HERE, "results", "cpu_compare.jsonl"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "cpu_compare.md"))
    a = ap.parse_args()
    cases = [c for c in a.cases.split(",") if c]
    for c in cases:
        if c not in CASES:
            sys.exit(f"cpu_compare: unknown case {c} (known: {', '.join(CASES)})")
    peer = compare.ensure_peer()
    prepared = {c: prepare(c, a, peer) for c in cases}
    os.makedirs(os.path.dirname(a.raw), exist_ok=True)
    results = {c: {"og": [], "peer": [], "og_check": None} for c in cases}
    with open(a.raw, "a") as raw:
        for rnd in range(a.rounds):
            for c in cases:
                model, ref = prepared[c]
                runs = a.runs or (200 if c == "gpt2_w96" else 10)
                og_cmd = [a.onnxgpu, "bench", model, "--ep", "cpu", "--data-set", ref, "--warmup", str(a.warmup),
                          "--runs", str(runs), "--time-limit", str(a.time_limit), "--json"]
                peer_cmd = [peer, model, "--ep", "cpu", "--input-dir", ref, "--warmup", str(a.warmup),
                            "--runs", str(runs), "--json"]
                if a.threads:
                    og_cmd += ["--config", f"onnxgpu.intra_op_num_threads={a.threads}"]
                    peer_cmd += ["--threads", str(a.threads)]
                for engine, cmd in (("og", og_cmd), ("peer", peer_cmd)):
                    r = run_json(cmd, a.time_limit * 4)
                    lat = (r.get("latency_ms") or {}).get("median")
                    raw.write(json.dumps({"round": rnd, "case": c, "engine": engine, "cmd": cmd, "result": r}) + "\n")
                    if lat is None:
                        log(f"{c} {engine}: failed: {r.get('error')}")
                        continue
                    results[c][engine].append(lat)
                    if engine == "og" and r.get("compare"):
                        results[c]["og_check"] = r["compare"]
                    log(f"round {rnd} {c} {engine}: {lat:.3f} ms")
    load = os.getloadavg()
    lines = [
        f"Measured by `bench/cpu_compare.py` on {datetime.datetime.now():%Y-%m-%d %H:%M}: "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs; load average at the end "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min; the machine is shared).",
        "",
        "```",
        " ".join(["/usr/bin/python3", "bench/cpu_compare.py"] + sys.argv[1:]),
        "```",
        "",
        f"Median over {a.rounds} rounds of each process's median ms per run; intra-op threads: "
        f"{a.threads or 'each engine default (the number of cores)'}.",
        "",
        "| case | model | onnxgpu cpu ms | ORT cpu ms | ratio onnxgpu / ORT | onnxgpu matches ORT's outputs |",
        "|---|---|---|---|---|---|",
    ]
    for c in cases:
        og, pe = results[c]["og"], results[c]["peer"]
        if not og or not pe:
            lines.append(f"| {c} | {os.path.basename(prepared[c][0])} | {og} | {pe} | - | - |")
            continue
        mo, mp = statistics.median(og), statistics.median(pe)
        chk = results[c]["og_check"]
        chk_s = "-" if not chk else (("yes" if chk.get("passed") else "NO") + f" (max abs diff {chk.get('max_abs_diff', 0):.1e})")
        lines.append(f"| {c} | {os.path.relpath(prepared[c][0], REPO) if prepared[c][0].startswith(REPO) else prepared[c][0]} "
                     f"| {mo:.3f} | {mp:.3f} | {mo / mp:.2f} | {chk_s} |")
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
