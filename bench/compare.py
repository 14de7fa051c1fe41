#!/usr/bin/env python3
"""onnxgpu vs ONNX Runtime 1.30 WebGPU (the peer, /work/shared/peer) on the benchmark models.

One command does everything (each step is skipped when already done):
  1. models: bench/make_models.py export (torch, here only) -> inflate -> inputs for the profile;
  2. reference outputs: the peer's CPU EP writes output_K.pb next to the inputs;
  3. timed runs, interleaved A B A B: for each round, for each configuration pair, for each model,
     onnxgpu (A) then the peer (B), every run a fresh process on the same input .pb files:
       onnxgpu webgpu capture    vs  peer webgpu capture with --dim pinning (its capture needs static shapes)
       onnxgpu webgpu no-capture vs  peer webgpu (no capture)
       onnxgpu cpu               vs  peer cpu
     plus, once per model, the peer's capture without --dim (to record whether it refuses);
  4. report: raw JSON lines, docs/benchmarks.md (tables + how to reproduce) and a PNG chart of the ratios.

  bench/compare                                  # SwiftShader defaults: tiny models, few runs (< 10 min)
  bench/compare --profile h200                   # H200 settings: full models, more runs (see docs)
  bench/compare --report-only RAW.jsonl          # only rewrite the report from earlier raw results
  bench/compare --make-bundle --size full        # pack what the device machine needs into bench/.carry
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import make_models  # noqa: E402  (numpy/onnx/torch are imported lazily inside)

PEER_SRC = "/work/shared/peer"
PEER_DIR = os.path.join(HERE, ".peer")
CARRY_DIR = os.path.join(HERE, ".carry")
SWIFTSHADER_ICD = "/usr/lib/chromium/vk_swiftshader_icd.json"
NVIDIA_ICD = "/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json"
RUNTIME_LIBS = ["libonnx.so.1", "libonnx_proto.so.1", "libprotobuf.so.32", "libdnnl.so.2", "libgomp.so.1", "libOpenCL.so.1"]
GL_PACKAGES = ["libvulkan1", "libglvnd0", "libegl1", "libgl1", "libglx0", "libopengl0", "libgles2"]

DEFAULTS = {  # per profile: model size, timed runs, warmup runs, rounds, per-process time limit (s)
    # SwiftShader compiles shaders slowly (10-30 s per peer process here): one round fits in 10 minutes.
    "swiftshader": dict(size="tiny", runs=3, warmup=1, rounds=1, time_limit=20, deadline=500, gpu_profile=0),
    "h200": dict(size="full", runs=30, warmup=5, rounds=2, time_limit=15, deadline=470, gpu_profile=5),
}

# (label, engine, args); pairs are compared as onnxgpu / peer.
OG_CONFIGS = {
    "capture": ["--ep", "webgpu", "--capture"],
    "no-capture": ["--ep", "webgpu", "--no-capture"],
    "cpu": ["--ep", "cpu"],
}
PEER_CONFIGS = {
    "capture": ["--ep", "webgpu", "--capture"],  # + --dim NAME=V for every symbolic input dimension
    "no-capture": ["--ep", "webgpu"],
    "cpu": ["--ep", "cpu"],
}
PAIRS = ["capture", "no-capture", "cpu"]
# The targets for the capture ratio: 0.5 where both capture; 0.25 where the peer captures only with
# every dim pinned and the model is not one of the four named with capture on both sides.
TARGETS = [("gpt2_s16", 0.5), ("gpt2", 0.5), ("bert", 0.5), ("bert_b2", 0.4), ("t5", 0.4), ("mlp", 0.5), ("gpt2_kv", 0.5), ("int64_embedding", 0.25),
           ("cnn", 0.7), ("resnet50", 0.7), ("mobilenetv3", 0.7), ("detect", 0.7)]
TOL = ["--atol", "1e-4", "--rtol", "1e-3"]


def log(msg):
    print(f"[compare {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------
# Environment and tools
# ---------------------------------------------------------------------------------------------------

def gpu_present():
    devs = os.listdir("/dev") if os.path.isdir("/dev") else []
    return any(d.startswith("nvidia") and d[6:].isdigit() for d in devs) or \
        os.path.isdir("/dev/dri") and any(d.startswith("renderD") for d in os.listdir("/dev/dri"))


def vulkan_env(extra_lib_dirs=()):
    """The Vulkan setup both engines get (same rules as the peer's run_env.sh)."""
    env = dict(os.environ)
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    if not env.get("VK_ICD_FILENAMES") and not env.get("VK_DRIVER_FILES"):
        if not gpu_present():
            env["VK_ICD_FILENAMES"] = SWIFTSHADER_ICD
        elif os.path.exists(NVIDIA_ICD) and not any(
                os.path.isdir(d) and os.listdir(d) for d in ("/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d")):
            env["VK_ICD_FILENAMES"] = env["VK_DRIVER_FILES"] = NVIDIA_ICD
    if extra_lib_dirs:
        env["LD_LIBRARY_PATH"] = ":".join(list(extra_lib_dirs) + ([env["LD_LIBRARY_PATH"]] if env.get("LD_LIBRARY_PATH") else []))
    return env


# The one measurement bench/compare adds to the peer's harness: the process's CPU time (all threads) over
# its timed runs, per run, as `onnxgpu bench` reports it (`process_cpu_ms_per_run`). Anchored on the
# harness's text: a harness that no longer has the anchors is an error, not a silently missing column.
PEER_PATCHES = [
    ("static double now_ms(void) {",
     "static double cpu_ms(void) { /* bench/compare: process CPU time */\n"
     "  struct timespec ts;\n  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);\n"
     "  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;\n}\n"
     "static double g_cpu_per_run = -1; /* bench/compare */\n"
     "static double now_ms(void) {"),
    ("    for (int k = 0; k < runs; k++) {\n      t0 = now_ms();\n      if (runner_step(&r)) fatal(\"timed run %d: %s\", k, g_err);\n"
     "      lat[k] = now_ms() - t0;\n    }\n",
     "    double cpu0 = cpu_ms(); /* bench/compare */\n"
     "    for (int k = 0; k < runs; k++) {\n      t0 = now_ms();\n      if (runner_step(&r)) fatal(\"timed run %d: %s\", k, g_err);\n"
     "      lat[k] = now_ms() - t0;\n    }\n"
     "    if (runs > 0) g_cpu_per_run = (cpu_ms() - cpu0) / runs; /* bench/compare */\n"),
    ("    jkey(\"readback_only_ms_median\");",
     "    jkey(\"process_cpu_ms_per_run\"); if (g_cpu_per_run >= 0) jms(g_cpu_per_run); else jnull(); /* bench/compare */\n"
     "    jkey(\"readback_only_ms_median\");"),
]


def patched_peer_source(text):
    for anchor, replacement in PEER_PATCHES:
        if text.count(anchor) != 1:
            sys.exit(f"compare.py: the peer harness changed: anchor {anchor[:60]!r} found {text.count(anchor)} times")
        text = text.replace(anchor, replacement)
    return text


def ensure_peer():
    """Copies the peer's sources into bench/.peer (ort_peer.c with PEER_PATCHES applied) and builds it there
    (library cached in bench/.peer/.cache)."""
    os.makedirs(PEER_DIR, exist_ok=True)
    for f in ("ort_peer.c", "build.sh", "run_env.sh"):
        src, dst = os.path.join(PEER_SRC, f), os.path.join(PEER_DIR, f)
        if not os.path.exists(src):
            continue
        want = open(src, "rb").read()
        if f == "ort_peer.c":
            want = patched_peer_source(want.decode()).encode()
        if not os.path.exists(dst) or open(dst, "rb").read() != want:
            with open(dst, "wb") as out:
                out.write(want)
            os.chmod(dst, 0o755)
    subprocess.run(["bash", os.path.join(PEER_DIR, "build.sh")], check=True, stdout=sys.stderr)
    return os.path.join(PEER_DIR, "ort_peer")


def ensure_genai_peer():
    """Builds bench/genai_peer.c (ONNX Runtime's GenAI-style decode loop, bench/genai.py) into bench/.peer."""
    src, out = os.path.join(HERE, "genai_peer.c"), os.path.join(PEER_DIR, "genai_peer")
    os.makedirs(PEER_DIR, exist_ok=True)
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        subprocess.run(["gcc", "-O2", "-std=gnu11", "-Wall", "-Wextra", "-o", out + ".tmp", src, "-ldl", "-lm"], check=True)
        os.replace(out + ".tmp", out)
    return out


def unpack_bundle(bundle_dir):
    """Device machine: unpacks bench/.carry (see --make-bundle); returns (onnxgpu, peer, env additions)."""
    dest = "/tmp/onnxgpu-bench"
    os.makedirs(dest, exist_ok=True)
    with tarfile.open(os.path.join(bundle_dir, "bundle.tar.gz")) as t:
        try:
            t.extractall(dest, filter="data")
        except TypeError:  # Python without extraction filters
            t.extractall(dest)
    gl_root = os.path.join(dest, "gl")
    lib_dirs = [os.path.join(dest, "lib")]
    gl_debs = os.path.join(bundle_dir, "gl")
    debs = sorted(f for f in os.listdir(gl_debs) if f.endswith(".deb")) if os.path.isdir(gl_debs) else []
    if debs and (not have_lib("libvulkan.so.1") or not have_lib("libGLdispatch.so.0")):
        for d in debs:  # unpacked into a folder of its own, never into /
            subprocess.run(["dpkg", "-x", os.path.join(bundle_dir, "gl", d), gl_root], check=True)
        lib_dirs.append(os.path.join(gl_root, "usr/lib/x86_64-linux-gnu"))
        os.environ["ONNXGPU_VULKAN_LOADER"] = os.path.join(lib_dirs[-1], "libvulkan.so.1")
    os.environ["ONNXGPU_DAWN_LIB"] = os.path.join(dest, "libwebgpu_wrapper.so")
    os.environ["ORT_PEER_LIB"] = os.path.join(dest, "libonnxruntime.so.1")
    skel = os.path.join(bundle_dir, "skel")
    return os.path.join(dest, "onnxgpu"), os.path.join(dest, "ort_peer"), lib_dirs, skel


def install_skeletons(skel, models_root):
    """Device machine: the bundle's model skeletons (unpack_bundle's `skel`) into models_root/skel, every size."""
    dst = os.path.join(models_root, "skel")
    os.makedirs(dst, exist_ok=True)
    for size in os.listdir(skel):
        shutil.copytree(os.path.join(skel, size), os.path.join(dst, size), dirs_exist_ok=True)


def have_lib(name):
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    except OSError:
        return False
    return f"{name} " in out


def make_bundle(size, onnxgpu, models_root):
    """Packs what the H200 run needs into bench/.carry (git-ignored): binaries, skeletons, GL debs."""
    peer = ensure_peer()
    peer_lib = os.path.join(PEER_DIR, ".cache", "onnxruntime-node-1.30.0", "libonnxruntime.so.1")
    dawn = dawn_library(onnxgpu)
    os.makedirs(CARRY_DIR, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        stripped = os.path.join(tmp, "onnxgpu")
        subprocess.run(["strip", "-o", stripped, onnxgpu], check=True)
        with tarfile.open(os.path.join(CARRY_DIR, "bundle.tar.gz"), "w:gz", compresslevel=6) as t:
            t.add(stripped, "onnxgpu")
            t.add(dawn, "libwebgpu_wrapper.so")
            t.add(peer, "ort_peer")
            t.add(peer_lib, "libonnxruntime.so.1")
            t.add(ensure_genai_peer(), "genai_peer")  # bench/genai.py's ONNX Runtime loop
            for lib in RUNTIME_LIBS:  # Debian's, which the device image lacks; ldd build/onnxgpu lists them
                t.add(os.path.realpath(os.path.join("/usr/lib/x86_64-linux-gnu", lib)), "lib/" + lib)
    skel_dst = os.path.join(CARRY_DIR, "skel")  # every size made here (about 1.5 MB for full)
    if os.path.isdir(skel_dst):
        shutil.rmtree(skel_dst)
    if os.path.isdir(os.path.join(models_root, "skel")):
        shutil.copytree(os.path.join(models_root, "skel"), skel_dst)
    else:  # (bench/genai.py makes its model on the device and needs none)
        os.makedirs(skel_dst)
        log(f"bundle: no skeletons in {models_root}/skel: bench/compare and bench/decode.py cannot run from this bundle")
    gl = os.path.join(CARRY_DIR, "gl")
    os.makedirs(gl, exist_ok=True)
    if not [f for f in os.listdir(gl) if f.endswith(".deb")]:
        subprocess.run(["apt-get", "download"] + GL_PACKAGES, cwd=gl, check=True)
    with open(os.path.join(CARRY_DIR, "info.json"), "w") as f:
        here = os.path.join(models_root, size, "manifest.json")  # to check the device's inflated models against
        shas = {m: v["model_sha256"] for m, v in json.load(open(here)).items()} if os.path.exists(here) else {}
        json.dump({"commit": git_commit(), "made": time.strftime("%Y-%m-%d %H:%M"), "size": size,
                   "onnxgpu": os.path.abspath(onnxgpu), "model_sha256": shas}, f, indent=1)
    total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(CARRY_DIR) for f in fs)
    tracked = int(subprocess.run("git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1", shell=True, cwd=REPO,
                                 capture_output=True, text=True).stdout or 0)
    log(f"bundle: {CARRY_DIR}: {total / 2**20:.1f} MiB (+ {tracked / 2**20:.1f} MiB of tracked files; limit 64 MiB)")
    if total + tracked > 64 * 2**20:
        raise SystemExit("bundle: over the 64 MiB the device machine takes")


def git_commit():
    try:
        r = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return r.stdout.strip() + ("+dirty" if dirty else "") if r.returncode == 0 else None
    except OSError:  # no git on the device machine
        return None


def dawn_library(onnxgpu):
    if os.environ.get("ONNXGPU_DAWN_LIB"):
        return os.environ["ONNXGPU_DAWN_LIB"]
    cache = os.environ.get("ONNXGPU_CACHE_DIR") or os.path.join(REPO, ".cache")
    for c in (os.path.join(cache, "dawn-0.1.7", "libwebgpu_wrapper.so"),
              "/work/main/.cache/dawn-0.1.7/libwebgpu_wrapper.so",
              os.path.join(os.path.dirname(onnxgpu), "libwebgpu_wrapper.so")):
        if os.path.exists(c):
            return c
    raise SystemExit("cannot find libwebgpu_wrapper.so: set ONNXGPU_DAWN_LIB")


# ---------------------------------------------------------------------------------------------------
# Running one process
# ---------------------------------------------------------------------------------------------------

def vm_hwm_mb(pid):
    """The process's peak resident set (VmHWM, reset at exec, unlike ru_maxrss which keeps the forking
    Python's peak); None once it has exited."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def run_process(cmd, env, timeout):
    """Runs cmd; returns (rc, stdout, stderr, wall_s, peak_rss_mb of the child, polled every 20 ms)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, start_new_session=True)
        deadline = t0 + timeout
        rc, ru, hwm = None, None, 0.0
        while True:
            hwm = max(hwm, vm_hwm_mb(p.pid) or 0.0)  # a zombie has no VmHWM: the last live value stays
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                rc = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                os.killpg(p.pid, signal.SIGKILL)
                _, status, ru = os.wait4(p.pid, 0)
                rc = "timeout"
                break
            time.sleep(0.02)
        p.returncode = -1  # reaped above
        wall = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        return rc, out.read().decode(errors="replace"), err.read().decode(errors="replace"), wall, hwm


def parse_json(text):
    i = text.find("{")
    if i < 0:
        return None
    try:
        return json.loads(text[i:])
    except json.JSONDecodeError:
        try:
            return json.loads(text[i:text.rindex("}") + 1])
        except (ValueError, json.JSONDecodeError):
            return None


T_START = time.monotonic()  # the deadline counts from here (model inflation included)


class Runner:
    def __init__(self, a, onnxgpu, peer, env, raw_path):
        self.a, self.onnxgpu, self.peer, self.env = a, onnxgpu, peer, env
        self.raw = open(raw_path, "a")
        self.t_start = T_START
        self.cache_root = tempfile.mkdtemp(prefix="onnxgpu-pipeline-cache-")

    def over_deadline(self):
        return time.monotonic() - self.t_start > self.a.deadline

    def timeout(self):
        """A process may run past the deadline by at most a minute."""
        left = self.a.deadline + 60 - (time.monotonic() - self.t_start)
        return max(10.0, min(self.a.process_timeout, left))

    def record(self, rec):
        rec["time"] = datetime.datetime.now().isoformat(timespec="seconds")
        self.raw.write(json.dumps(rec) + "\n")
        self.raw.flush()

    def run(self, engine, model, config, rnd, cmd, extra=None):
        env = self.env
        if engine == "onnxgpu" and "ONNXGPU_PIPELINE_CACHE" not in os.environ:
            # A pipeline cache per model, empty when the bench starts: the model's first onnxgpu process
            # (capture, round 1) starts cold, later ones find what it compiled, as a second process would.
            env = dict(env, ONNXGPU_PIPELINE_CACHE=os.path.join(self.cache_root, model))
        rc, out, err, wall, rss = run_process(cmd, env, self.timeout())
        j = parse_json(out)
        ok = rc == 0 and j is not None and j.get("ok", True) is not False
        rec = dict(engine=engine, model=model, config=config, round=rnd, ok=ok, rc=rc, wall_s=round(wall, 3),
                   peak_rss_mb=round(rss, 1), cmd=" ".join(cmd), result=j)
        if extra:
            rec.update(extra)
        if not ok:
            rec["error"] = (j or {}).get("error") or err.strip()[-1500:] or f"exit {rc}"
        self.record(rec)
        lat = (j or {}).get("latency_ms") or {}
        if ok and lat:
            what = f"median {lat.get('median', float('nan')):.3f} ms"
        elif ok and j.get("capture_ok") is False:
            what = "capture refused: " + str(j.get("capture_error"))[:120]
        else:
            what = f"FAILED: {str(rec.get('error'))[:200]}"
        log(f"{engine:8s} {model:16s} {config:22s} r{rnd} {what}  ({wall:.1f} s)")
        return rec


def dims_args(dims):
    out = []
    for k, v in dims.items():
        out += ["--dim", f"{k}={v}"]
    return out


def prepare_model(r, model, model_path, data_dir):
    """Reference outputs (peer CPU EP) next to the inputs, and the peer's capture without --dim, once."""
    if not os.path.exists(os.path.join(data_dir, "output_0.pb")):
        ref = tempfile.mkdtemp(prefix="ref-", dir=os.path.dirname(data_dir))
        rec = r.run("peer", model, "reference (cpu)", 0,
                    [r.peer, model_path, "--ep", "cpu", "--input-dir", data_dir, "--out-dir", ref, "--runs", "1",
                     "--warmup", "0", "--json", "--no-placement"])
        if rec["ok"]:
            for f in os.listdir(ref):
                if f.startswith("output_"):
                    shutil.copyfile(os.path.join(ref, f), os.path.join(data_dir, f))
        shutil.rmtree(ref, ignore_errors=True)
    # Does the peer capture without --dim? (It refuses when shapes are dynamic: recorded, not timed.)
    r.run("peer", model, "capture-nodims-probe", 0,
          [r.peer, model_path, "--ep", "webgpu", "--capture", "--no-fallback", "--input-dir", data_dir,
           "--runs", "1", "--warmup", "0", "--json"])


def bench_pair(r, rnd, pair, model, model_path, data_dir, dims):
    """One configuration pair on one model: onnxgpu (A), then the peer (B)."""
    a = r.a
    if r.over_deadline():
        log(f"deadline ({a.deadline:.0f} s) reached: round {rnd}, {pair}, {model} not run")
        return
    common_og = ["--data-set", data_dir, "--warmup", str(a.warmup), "--runs", str(a.runs),
                 "--time-limit", str(a.time_limit), "--json"] + TOL
    common_peer = ["--input-dir", data_dir, "--ref-dir", data_dir, "--warmup", str(a.warmup), "--runs",
                   str(a.runs), "--json"] + TOL
    # Round 2 of capture: onnxgpu also profiles its GPU time per op (a second session).
    prof = ["--profile", str(a.gpu_profile)] if a.gpu_profile and pair == "capture" and rnd == min(2, a.rounds) else []
    io = ["--io", a.io] if pair != "cpu" else []
    r.run("onnxgpu", model, pair, rnd, [r.onnxgpu, "bench", model_path] + OG_CONFIGS[pair] + io + common_og + prof)
    peer_args = PEER_CONFIGS[pair] + (dims_args(dims) if pair == "capture" else [])
    r.run("peer", model, pair, rnd, [r.peer, model_path] + peer_args + common_peer)



def machine_description(onnxgpu, env):
    d = {"host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count()}
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                d["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                d["memory_gib"] = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    rc, out, err, _, _ = run_process([onnxgpu, "devices", "--json"], env, 120)
    j = parse_json(out) or {}
    chosen = [x for x in j.get("adapters", []) if x.get("chosen")]
    if chosen:
        c = chosen[0]
        d["adapter"] = {k: c.get(k) for k in ("device", "vendor", "architecture", "adapter_type", "backend", "driver",
                                              "compute_features")}
    else:
        d["adapter_error"] = (err.strip() or out.strip())[-500:]
    if shutil.which("nvidia-smi"):
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                           capture_output=True, text=True)
        d["nvidia_smi"] = q.stdout.strip()
    d["vk_icd_filenames"] = env.get("VK_ICD_FILENAMES")
    return d


# ---------------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------------

def load_raw(path):
    recs, meta = [], {}
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        rec = json.loads(line)
        if rec.get("kind") == "meta":
            meta = rec
        else:
            recs.append(rec)
    return meta, recs


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def aggregate(recs, engine, model, config):
    rs = [x for x in recs if x["engine"] == engine and x["model"] == model and x["config"] == config and x["round"] > 0]
    ok = [x for x in rs if x["ok"] and x["result"] and x["result"].get("latency_ms")]
    g = {"attempts": len(rs), "ok": len(ok), "errors": [x.get("error") for x in rs if not x["ok"]]}
    if not ok:
        return g
    res = [x["result"] for x in ok]
    lat = [x["latency_ms"] for x in res]
    g["median"] = med([l["median"] for l in lat])
    g["min"] = min(l["min"] for l in lat)
    g["max"] = max(l["max"] for l in lat)
    g["runs"] = sum(x.get("runs", 0) for x in res)
    g["session_create_ms"] = med([x.get("session_create_ms") for x in res])
    g["load_ms"] = med([x.get("load_ms", x.get("session_create_ms")) for x in res])  # peer: CreateSession
    g["create_first_ms"] = med([x.get("load_ms", x.get("session_create_ms", 0)) + x.get("first_run_ms", 0) for x in res])
    g["first_run_ms"] = med([x.get("first_run_ms") for x in res])
    # onnxgpu's first runs with an empty pipeline cache (its first process of the model) and with one
    # that a process before it filled.
    cache_hits = [(x.get("pipeline_cache") or {}).get("hits") for x in res]
    g["create_first_cold_ms"] = med([x.get("load_ms", 0) + x.get("first_run_ms", 0)
                                     for x, h in zip(res, cache_hits) if h == 0])
    g["create_first_warm_ms"] = med([x.get("load_ms", 0) + x.get("first_run_ms", 0)
                                     for x, h in zip(res, cache_hits) if h])
    g["peak_rss_mb"] = max(x["peak_rss_mb"] for x in ok)
    rb = med([x.get("readback_only_ms_median") for x in res])
    g["readback_ms"] = rb
    g["cpu_ms"] = med([x.get("process_cpu_ms_per_run") for x in res])
    g["device_ms"] = g["median"] - rb if rb is not None else None
    last = res[-1]
    if engine == "onnxgpu":
        g["dispatches"] = last.get("dispatches_per_run")
        g["submits"] = last.get("submits_per_run")
        counted = last.get("counted") or {}
        g["host_ms"] = med([(x.get("counted") or {}).get("host_ms", {}).get("median") for x in res]) if counted else None
        g["upload_bytes"] = counted.get("upload_bytes_per_run")
        g["gpu_buffer_bytes"] = last.get("gpu_buffer_bytes")
        g["gpu_bytes_created"] = counted.get("buffer_bytes_created")
        p = last.get("plan") or {}
        g["plan"] = p
        cmp_ = [x.get("compare") for x in res if x.get("compare")]
        g["match"] = all(c["passed"] for c in cmp_) if cmp_ else None
        g["max_abs_diff"] = max((c["max_abs_diff"] for c in cmp_), default=None)
        g["time_limited"] = any(x.get("time_limited") for x in res)
    else:
        g["placement"] = last.get("placement")
        g["capture_ok"] = last.get("capture_ok")
        g["capture_replays"] = last.get("capture_replays")
        g["match"] = all(x.get("match_ref", True) for x in res) if any("match_ref" in x for x in res) else None
        diffs = [o.get("vs_ref", {}).get("max_abs_diff") for x in res for o in x.get("outputs", [])]
        diffs = [d for d in diffs if d is not None]
        g["max_abs_diff"] = max(diffs) if diffs else None
    return g


def fmt(x, nd=3):
    if x is None:
        return "n/a"
    if isinstance(x, float):
        if x == int(x) and abs(x) < 1e6 and nd == 0:
            return str(int(x))
        if abs(x) >= 100:
            return f"{x:.0f}"
        if abs(x) >= 10:
            return f"{x:.1f}"
        return f"{x:.{nd}f}"
    return str(x)


def fmt_bytes(b):
    if b is None:
        return "n/a"
    if b < 1024:
        return f"{int(b)} B"
    return f"{b / 2**20:.1f} MiB" if b >= 2**20 else f"{b / 1024:.0f} KiB"


def plan_str(p):
    if not p:
        return "n/a"
    s = f"{p.get('gpu_nodes')} gpu / {p.get('cpu_nodes')} cpu / {p.get('folded_nodes')} folded, {p.get('segments')} seg"
    if p.get("whole_graph_fallback"):
        s += ", WHOLE GRAPH ON CPU"
    return s


def placement_str(g):
    pl = g.get("placement") or {}
    s = ", ".join(f"{k.replace('ExecutionProvider', '')} {v}" for k, v in pl.items())
    if g.get("capture_ok") is True:
        s += ", captured"
    return s or "n/a"


def match_str(g):
    if g.get("match") is None:
        return "n/a"
    d = g.get("max_abs_diff")
    return ("yes" if g["match"] else "**NO**") + (f" ({d:.1e})" if isinstance(d, (int, float)) else "")


def build_report(meta, recs, doc_path, chart_path, command):
    models = []
    for x in recs:
        if x["model"] not in models:
            models.append(x["model"])
    profile = meta.get("profile", "?")
    sws = profile == "swiftshader" or "swiftshader" in json.dumps(meta.get("machine", {})).lower()
    L = []
    L.append("# Benchmarks: onnxgpu vs ONNX Runtime 1.30 WebGPU\n")
    if sws:
        L.append("> **SwiftShader run.** These numbers come from SwiftShader, a CPU emulation of a Vulkan GPU, on a "
                 "shared 2-core VM with tiny models. They check that the harness works end to end; they say "
                 "nothing about speed (the GPU is emulated on the CPU: every shader runs as CPU code). The engine's "
                 "GPU kernels were first versions at this commit. Real numbers: \"How to run on the H200\" below.\n")
    L.append(f"Generated by `bench/compare` on {meta.get('date', '?')}; profile `{profile}`, model size "
             f"`{meta.get('size')}`, {meta.get('rounds')} rounds, {meta.get('runs')} timed runs and "
             f"{meta.get('warmup')} warmup runs per process; `--deadline {meta.get('deadline_s')}` (no process starts "
             f"after that many seconds: later rounds may be cut, see the rounds column), `onnxgpu bench --time-limit "
             f"{meta.get('time_limit_s')}`. og = onnxgpu.\n")
    L.append("Command:\n\n```\n" + command + "\n```\n")
    m = meta.get("machine", {})
    L.append("## Machine\n")
    ad = m.get("adapter") or {}
    L.append(f"- GPU adapter (onnxgpu devices --json): {ad.get('device', m.get('adapter_error', 'n/a'))}, "
             f"{ad.get('adapter_type')}, backend {ad.get('backend')}, driver {ad.get('driver')}, "
             f"features {ad.get('compute_features')}")
    if m.get("nvidia_smi"):
        L.append(f"- nvidia-smi: {m['nvidia_smi']}")
    L.append(f"- CPU: {m.get('cpu', '?')}, {m.get('cpus')} logical CPUs, {m.get('memory_gib')} GiB memory; "
             f"kernel {m.get('kernel')}")
    L.append(f"- VK_ICD_FILENAMES: {m.get('vk_icd_filenames')}")
    L.append(f"- onnxgpu {meta.get('onnxgpu_commit', '?')}; peer: ort_peer with ONNX Runtime 1.30.0 "
             "(onnxruntime-node, WebGPU EP with Dawn built in)\n")

    L.append("## Models\n")
    ref_sha = ((meta.get("bundle") or {}).get("model_sha256") or {})
    L.append("| model | what | parameters | file | sha256 | dims (this profile) |")
    L.append("|---|---|---|---|---|---|")
    for name in models:
        info = (meta.get("manifest") or {}).get(make_models.case_model(name), {})
        L.append(f"| {name} | {info.get('description', '')} ({json.dumps(info.get('config', {}))}) | "
                 f"{info.get('parameters', 0) / 1e6:.2f}M | {info.get('bytes', 0) / 2**20:.1f} MiB | "
                 f"{info.get('model_sha256', '')[:12]}"
                 + ((" (same as where the bundle was made)" if ref_sha[make_models.case_model(name)] == info.get("model_sha256")
                     else " (**differs** from where the bundle was made)") if make_models.case_model(name) in ref_sha else "") + " | "
                 f"{json.dumps((meta.get('dims') or {}).get(name, {}))} |")
    L.append("")

    L.append("## Latency (whole run, ms) and ratio onnxgpu / peer\n")
    L.append("Median over rounds of each process's median; min and max over all timed runs. Ratio < 1: onnxgpu "
             "is faster.\n")
    L.append("| model | config | onnxgpu median (min-max) | peer median (min-max) | ratio | rounds og / peer | onnxgpu matches ref | peer matches ref |")
    L.append("|---|---|---|---|---|---|---|---|")
    ratios = {}
    for name in models:
        for pair in PAIRS:
            A, B = aggregate(recs, "onnxgpu", name, pair), aggregate(recs, "peer", name, pair)
            if not A["attempts"] and not B["attempts"]:
                continue
            ra = A["median"] / B["median"] if A.get("median") and B.get("median") else None
            ratios[(name, pair)] = ra

            def cell(g):
                if "median" not in g:
                    return "FAILED: " + (str(g["errors"][0])[:120].replace("|", "/").replace("\n", " ") if g["errors"] else "not run")
                return f"{fmt(g['median'])} ({fmt(g['min'])}-{fmt(g['max'])})" + (" [time limit]" if g.get("time_limited") else "")
            L.append(f"| {name} | {pair} | {cell(A)} | {cell(B)} | {fmt(ra, 2)} | {A['ok']} / {B['ok']} | "
                     f"{match_str(A)} | {match_str(B)} |")
    L.append("")

    targets = [(n, t) for n, t in TARGETS if (n, "capture") in ratios]
    if targets and not sws:
        L.append("## Targets\n")
        L.append("Capture on both sides, whole-run median ratio onnxgpu / peer. Models whose dims the peer must pin "
                 "to capture at all are held to the stricter target against the peer's best configuration (its pinned "
                 "capture). What bounds the misses, with the profile: [performance.md](performance.md).\n")
        L.append("| model | ratio | target | met |")
        L.append("|---|---|---|---|")
        for n, t in targets:
            ra = ratios[(n, "capture")]
            L.append(f"| {n} | {fmt(ra, 2)} | <= {t} | {'yes' if ra is not None and ra <= t else '**no**'} |")
        L.append("")

    L.append("## Where the time goes\n")
    L.append("readback = reading all outputs back alone (onnxgpu: `readback_only_ms_median` of `onnxgpu bench`, one "
             "submit + map of every output; peer: its `readback_only_ms_median`, one `CopyTensors`); device = run "
             "median minus readback. onnxgpu host = run minus the time blocked in `wgpuInstanceWaitAny` (encoding, "
             "submits, uploads, CPU fallback nodes, copies); the peer does not expose that split (both sides' process "
             "CPU time per run: next section). Dispatches and submits per "
             "run are counted by `onnxgpu bench` in the Dawn calls (plan segments in the plan column); ORT does not "
             "report them.\n")
    L.append("| model | config | readback ms og / peer | device ms og / peer | og host ms | og dispatches / submits | og upload / run | og plan | peer placement |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for name in models:
        for pair in PAIRS[:2]:
            A, B = aggregate(recs, "onnxgpu", name, pair), aggregate(recs, "peer", name, pair)
            if not A.get("median") and not B.get("median"):
                continue
            L.append(f"| {name} | {pair} | {fmt(A.get('readback_ms'))} / {fmt(B.get('readback_ms'))} | "
                     f"{fmt(A.get('device_ms'))} / {fmt(B.get('device_ms'))} | {fmt(A.get('host_ms'))} | "
                     f"{fmt(A.get('dispatches'), 0)} / {fmt(A.get('submits'), 0)} | {fmt_bytes(A.get('upload_bytes'))} | "
                     f"{plan_str(A.get('plan'))} | {placement_str(B)} |")
    L.append("")

    L.append("## Host time per run (capture)\n")
    L.append("CPU time of the whole process (every thread: the engine's, Dawn's, the driver's) over the timed runs, "
             "per run (`clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`; the peer's harness gets the same two calls around "
             "its timed loop, see `PEER_PATCHES` in bench/compare.py). It includes each run's input upload and "
             "output copy; time spent asleep waiting for the GPU is not CPU time, but threads that spin while they "
             "wait count (a CPU time above the run's wall time, as the peer's on the smallest models, means other "
             "threads were busy beside the replay; ORT's intra-op thread pool spin-waits by default). og host = onnxgpu's run time "
             "minus the time blocked in `wgpuInstanceWaitAny` (from the table above).\n")
    L.append("| model | og host ms | process CPU ms per run og / peer | ratio |")
    L.append("|---|---|---|---|")
    for name in models:
        A, B = aggregate(recs, "onnxgpu", name, "capture"), aggregate(recs, "peer", name, "capture")
        if A.get("cpu_ms") is None and B.get("cpu_ms") is None:
            continue
        r = A["cpu_ms"] / B["cpu_ms"] if A.get("cpu_ms") and B.get("cpu_ms") else None
        L.append(f"| {name} | {fmt(A.get('host_ms'))} | {fmt(A.get('cpu_ms'))} / {fmt(B.get('cpu_ms'))} | {fmt(r, 2)} |")
    L.append("")

    prof_rows = []
    for name in models:
        for x in recs:
            j = x.get("result") or {}
            if x["engine"] == "onnxgpu" and x["model"] == name and x["config"] == "capture" and "profile" in j:
                p = j["profile"]
                if "skipped" in p:
                    prof_rows.append(f"| {name} | skipped: {str(p['skipped'])[:120]} | | |")
                else:
                    ops = ", ".join(f"{o['op']} {fmt(o['gpu_ms'])} ({100 * o['share']:.0f}%, {o['dispatches']}"
                                    + (f", {o['gflop_per_s'] / 1000:.1f} TFLOP/s" if o.get("flops") else "") + ")"
                                    for o in p["by_op"][:6])
                    prof_rows.append(f"| {name} | {fmt(p['gpu_ms_per_run'])} | {fmt((j.get('latency_ms') or {}).get('median'))} | {ops} |")
                break
    if prof_rows:
        L.append("## Where onnxgpu's GPU time goes (capture)\n")
        L.append("`onnxgpu bench --profile N`: a second session times every dispatch with GPU timestamp queries (each "
                 "dispatch in a compute pass of its own, so the sum is an upper bound of the captured run's GPU time); "
                 "mean over N runs. Per op type: GPU ms per run (share, dispatches per run).\n")
        L.append("| model | GPU ms per run (sum of dispatches) | whole run median ms | op types, slowest first |")
        L.append("|---|---|---|---|")
        L += prof_rows
        L.append("")

    L.append("## Session creation and memory\n")
    L.append("create = model load (onnxgpu `Session` constructor) / `CreateSession` (peer); first run includes "
             "planning, shader compilation and uploading the weights (onnxgpu), ORT's capture run (peer). Peak RSS: the process's VmHWM (polled every 20 ms). GPU "
             "buffers: onnxgpu's plan buffers (activations, inputs, outputs) / all buffers it created (weights "
             "and staging included); ORT reports none.\n")
    L.append("onnxgpu keeps compiled shaders and pipelines in a cache folder across processes "
             "(`ONNXGPU_PIPELINE_CACHE`; here one per model, empty when the bench starts): *cold* is a model's "
             "first process, *warm* the processes after it. ORT keeps no such cache.\n")
    L.append("| model | config | create ms og / peer | first run ms og / peer | create + first run og / peer | og create + first run, cold / warm cache | peak RSS MB og / peer | og GPU buffers plan / created |")
    L.append("|---|---|---|---|---|---|---|---|")
    for name in models:
        for pair in PAIRS:
            A, B = aggregate(recs, "onnxgpu", name, pair), aggregate(recs, "peer", name, pair)
            if not A.get("median") and not B.get("median"):
                continue
            L.append(f"| {name} | {pair} | {fmt(A.get('load_ms'))} / {fmt(B.get('load_ms'))} | "
                     f"{fmt(A.get('first_run_ms'))} / {fmt(B.get('first_run_ms'))} | "
                     f"{fmt(A.get('create_first_ms'))} / {fmt(B.get('create_first_ms'))} | "
                     f"{fmt(A.get('create_first_cold_ms'))} / {fmt(A.get('create_first_warm_ms'))} | {fmt(A.get('peak_rss_mb'))} / "
                     f"{fmt(B.get('peak_rss_mb'))} | "
                     + (f"{fmt_bytes(A.get('gpu_buffer_bytes'))} / {fmt_bytes(A.get('gpu_bytes_created'))}" if pair != "cpu" else "-")
                     + " |")
    L.append("")

    L.append("## Peer capture without --dim\n")
    L.append("ORT's WebGPU graph capture needs every node on the WebGPU EP; with dynamic dims it keeps the shape "
             "subgraph on the CPU and refuses. The timed peer capture rows use `--dim` for every symbolic input "
             "dimension (static shapes); onnxgpu captures per input-shape signature with no pinning.\n")
    L.append("| model | peer capture without --dim |")
    L.append("|---|---|")
    for name in models:
        probes = [x for x in recs if x["engine"] == "peer" and x["model"] == name and x["config"] == "capture-nodims-probe"]
        if not probes:
            continue
        j = probes[-1].get("result") or {}
        if j.get("capture_ok") is True:
            s = "captured"
        elif j.get("capture_ok") is False:
            s = "refused: " + str(j.get("capture_error"))[:200].replace("|", "/").replace("\n", " ")
        else:
            s = "error: " + str(probes[-1].get("error"))[:200].replace("|", "/").replace("\n", " ")
        L.append(f"| {name} | {s} |")
    L.append("")

    fb = []
    for name in models:
        A = aggregate(recs, "onnxgpu", name, "capture")
        p = A.get("plan") or {}
        ops = sorted({f["op"] for f in p.get("fallbacks", []) if f.get("op")})
        if ops or p.get("whole_graph_fallback"):
            fb.append(f"| {name} | {', '.join(ops) or '-'} | "
                      + ("whole graph" if p.get("whole_graph_fallback") else "") + " |")
    if fb:
        L.append("## onnxgpu CPU fallbacks (capture configuration)\n")
        L.append("| model | ops run on the CPU | |")
        L.append("|---|---|---|")
        L += fb
        L.append("")

    if chart_path and ratios:
        make_chart(models, ratios, chart_path, sws)
        L.append(f"![ratio chart]({os.path.basename(chart_path)})\n")

    L.append(NOTES)
    L.append(TOOLS_SECTION)
    L.append(H200_SECTION)
    text = "\n".join(L)
    old = open(doc_path).read() if os.path.exists(doc_path) else ""
    if GEN_BEGIN in old and GEN_END in old:  # bench/decode.py's section: kept where the page is rewritten
        text = splice_generation(text, old[old.index(GEN_BEGIN):old.index(GEN_END) + len(GEN_END)] + "\n")
    with open(doc_path, "w") as f:
        f.write(text)
    log(f"report: {doc_path}" + (f", {chart_path}" if chart_path and ratios else ""))


# bench/decode.py's "Generation" section lives between these markers in docs/benchmarks.md.
GEN_BEGIN, GEN_END = "<!-- generation:begin -->", "<!-- generation:end -->"


def splice_generation(doc_text, section):
    """The page with the section between the markers (replaced), else inserted after the latency table: before
    '## Targets' or '## Where the time goes' (else at the end)."""
    if GEN_BEGIN in doc_text and GEN_END in doc_text:
        i, j = doc_text.index(GEN_BEGIN), doc_text.index(GEN_END) + len(GEN_END)
        return doc_text[:i] + section.rstrip("\n") + doc_text[j:]
    for heading in ("\n## Targets", "\n## Where the time goes"):
        k = doc_text.find(heading)
        if k >= 0:
            return doc_text[:k + 1] + section + "\n" + doc_text[k + 1:]
    return doc_text.rstrip("\n") + "\n\n" + section


def make_chart(models, ratios, path, sws):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.26
    for i, pair in enumerate(PAIRS):
        xs, ys = [], []
        for k, name in enumerate(models):
            r = ratios.get((name, pair))
            if r:
                xs.append(k + (i - 1) * width)
                ys.append(r)
        bars = ax.bar(xs, ys, width, label=f"{pair}")
        ax.bar_label(bars, labels=[f"{y:.0f}" if y >= 10 else f"{y:.2g}" for y in ys], fontsize=7, padding=1)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(models)))
    ax.set_xticklabels(models, rotation=15)
    ax.set_ylabel("latency onnxgpu / peer (log; < 1: onnxgpu faster)")
    ax.set_title("onnxgpu vs ONNX Runtime 1.30 WebGPU" + (" (SwiftShader: harness check, not speed)" if sws else ""))
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), title="configuration")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


NOTES = """## What is measured, and what differs between the two

- Every configuration is a fresh process on the same `input_K.pb` files; A (onnxgpu) and B (peer) alternate
  within each round. Latency is one whole run with IO binding on both sides: the inputs are copied to GPU
  buffers **once**, before the timed runs (onnxgpu `Session::to_device`, `onnxgpu bench --io bind`; the peer
  `ort_peer --io bind`, its default), and a run is the GPU work on them plus one readback of every output into
  host memory (onnxgpu `Session::run_on_device` + `DeviceTensor::to_host`; the peer `RunWithBinding` + one
  `CopyTensors`). Input upload is in neither latency (before 2026-12-02, onnxgpu's rows uploaded every run:
  `compare.py --io host` measures that, `Session::run`). The cpu rows run on host tensors.
- Peer capture rows use `--dim` for every symbolic input dimension; onnxgpu captures per input-shape signature
  without pinning. Peer no-capture rows keep the dims dynamic, as onnxgpu does.
- Both engines' outputs are compared with the peer's CPU EP outputs (`output_K.pb` beside the inputs),
  atol 1e-4, rtol 1e-3. onnxgpu compares the last timed run; the peer every configuration once.
- onnxgpu's `cpu` EP runs float32 MatMul / Gemm / Conv on oneDNN and the other ops on its reference kernels
  (plain loops, written for correctness); the cpu rows compare that with ONNX Runtime's optimized CPU kernels.
  `bench/cpu_compare.py` compares the two CPU EPs alone on the 2-core development machine: docs/cpu.md.
- `onnxgpu bench --time-limit` stops a slow configuration early (marked `[time limit]`), so that a model
  whose nodes fall back to the CPU cannot eat the budget.
- Raw results (every process's JSON, exit code, wall time, peak RSS): the `--raw` JSON lines file.
"""

TOOLS_SECTION = """## The tools

`onnxgpu bench MODEL [--ep webgpu|cpu] [--capture|--no-capture] [--int64 bitcast|cast|per-op] [--input N=F]...
[--shape N=2x13]... [--data-set DIR] [--warmup N] [--runs N] [--time-limit S] [--json]` (tools/cmd_bench.cpp)
times whole `Session::run` calls. JSON: `latency_ms` {min, median, mean, p90, max} and `run_ms`, `runs`,
`dispatches_per_run` (the plan's), `submits_per_run` (counted), `load_ms`, `first_run_ms`, `session_create_ms`
(load + plan + first run), `plan` {nodes, gpu_nodes, cpu_nodes, folded_nodes, segments, dispatches, captured,
replayed, whole_graph_fallback, fallbacks, int64, gpu_buffer_bytes} from `Session::last_plan()`, `peak_rss_mb`
(VmHWM), `gpu_buffer_bytes`, `readback_only_ms_median` and `device_ms_median` (run median minus readback),
`counted` {submits_per_run, dispatches_per_run, upload_bytes_per_run, wait_ms, host_ms, buffers_created,
buffer_bytes_created}, `outputs`, and `compare` {passed, max_abs_diff} when `--data-set` holds output_K.pb
(the last run is compared; a mismatch is reported, not an error). `--profile N` adds `profile` {gpu_ms_per_run,
by_op [{op, gpu_ms, dispatches, share, bytes, gb_per_s, flops, gflop_per_s}], top_nodes [{node, op, gpu_ms,
dispatches, bytes, gb_per_s, flops, gflop_per_s}]} from a second session that times every dispatch; a node's bytes
are the sizes of the tensors its dispatches declare, so a one-row product's gb_per_s is the bandwidth at which it
read its weight; its flops (products, convolutions, attention; 0 elsewhere) give gflop_per_s, the rate achieved. The counts come from wrappers that the
command puts into the Dawn function table before the session exists: a counter per submit, dispatch and
queue write, a clock around `wgpuInstanceWaitAny`; submits are counted rather than derived from the plan's
segments because a CPU node between segments also reads its GPU inputs back (one more submit each).

`bench/make_models.py export|inflate|inputs|all [--size tiny|small|full] [--profile swiftshader|h200]`
builds the models (see its docstring). `bench/compare [--profile P] [--size S] [--models a,b] [--configs
capture,no-capture,cpu] [--runs N] [--warmup N] [--rounds N] [--time-limit S] [--deadline S] [--raw F]
[--doc F] [--chart F]` runs the matrix and writes this page; `--report-only RAW` rewrites it from a raw file;
`--make-bundle` packs bench/.carry for the device machine (every model's skeleton, exported where missing; with
`--models`, those models'). Generated files stay out of git: bench/models,
bench/.peer (the peer built from /work/shared/peer with its build.sh, library cached in bench/.peer/.cache),
bench/.carry, bench/results (raw JSON lines). `bench/variants.py --bundle .carry --cases bert,gpt2
--variants 'base;NAME=ENV=VALUE|ENV=VALUE'` runs engine variants (MatMul tiles, split-K, Dawn toggles, the
chunked submits, see docs/webgpu.md) alternating in one call, with each one's latency, host time and GPU
profile: how the choices in docs/performance.md were measured. `bench/gemv_variants.py .carry OUT
'off=off;new='` does the same for the one-row products' `ONNXGPU_GEMV` settings: decode loops on gpt2_kv and
llama_kv, and GB/s per product on the decode step and on micro models of large weights.

`onnxgpu decode MODEL --steps N --past-start P0 [--start-token T] [--prompt L] [--capture|--no-capture]
[--time-limit S] [--check [--check-ref cpu|no-capture]] [--json]` (tools/cmd_decode.cpp) runs a greedy
generation loop on a decode-step model (inputs input_ids, position_ids, past_*; outputs logits, present_*),
the loop of ort_peer's `--decode-loop`: step k feeds past length P0+k at position P0+k (step 0: zeros from
the host), the presents stay on the GPU and feed the next step as `DeviceTensor`s (`Session::run_on_device`),
the logits are read back for the argmax. `--prompt L` first runs a prefill of L tokens (its time: the
first-token time). JSON: `decode_loop` {`ms_per_step` {median, min, max, mean, n} over steps 2..N,
`first_step_ms`, `first_token_ms`, `tokens_per_s`, `step_ms`, `tokens`, `replayed` (per step, from
`Session::last_plan().replayed`), `refreshed` (per step: the plan re-derived for the step's new sizes),
`plan_ms` (per step: host time planning or refreshing), `replayed_steps`, `refreshed_steps`, `planned_steps`,
`plan_ms_per_step_mean`, `prefill`, `present_shape`}, `session_create_ms`, `plan` (the last step's),
`plan_family` {refreshed, symbolic_dims, guarded_nodes, capacity_growths, refresh_refused, plan_ms} (the last
step's), `weight_bytes` (every initializer), `bytes_per_token`
{weights, kv_cache_mean, total} and `achieved_gb_per_s`; `--check` adds `check` {allclose, argmax_match,
max_abs_diff, steps_compared, match}: the same loop on the CPU EP fed the same tokens (a mismatch exits 1).
`bench/decode.py` runs it side by side with `ort_peer --decode-loop` on gpt2_kv and llama_kv (see its
docstring) and writes the Generation section of this page (between `<!-- generation:begin/end -->`, which
bench/compare keeps when it rewrites the page).
"""

H200_SECTION = """## How to run on the H200

The device machine takes at most 64 MiB of working tree plus carried files, and has no torch 1.13 (it has
python3 3.12 with numpy, onnx 1.23 and matplotlib). So the models travel as **skeletons**: the graphs with
their large float initializers emptied, each marked with a seed, mean and std (1.4 MB for the six full-size
models of session 2; ResNet-50 and MobileNetV3-small, exported from Debian's `python3-torchvision`, add 0.3 MB). `make_models.py inflate` refills them there from numpy's `RandomState`, whose streams numpy keeps
identical across versions; the Models table's sha256 lets the two machines' files be compared. The binaries
travel gzip-compressed in `bench/.carry/bundle.tar.gz` (26 MiB): `onnxgpu` (stripped), Dawn's
`libwebgpu_wrapper.so`, Debian's `libonnx_proto.so.1` and `libprotobuf.so.32` (which `onnxgpu` links and the
image lacks), `ort_peer` and `libonnxruntime.so.1`. Debian's Vulkan loader and libglvnd travel as `.deb` files
(`bench/.carry/gl`): the NVIDIA image has the driver's ICD manifest but neither library, so `compare.py
--bundle` unpacks them into /tmp (never into /) and puts them on `LD_LIBRARY_PATH`. The whole folder is about
28 MiB.

The `run` tool sends the session's own checkout (the lead's, also when a helper calls it), so build the bundle
in that checkout, after building the `onnxgpu` to be measured (a helper working in a worktree instead copies
its `bench/*.py`, `bench/compare` and `bench/.carry` into a folder of that checkout which `.git/info/exclude`
ignores, carries that folder and runs its `compare.py` from there; `variants.py --binary` runs a baseline
`onnxgpu` carried beside the bundle with the bundle's libraries):

```
scripts/build
mkdir -p bench/models && cp -r /work/wt/bench/bench/models/skel bench/models/   # or: make_models.py export --size full (torch 1.13, ~15 min here)
bench/compare --make-bundle --size full      # -> bench/.carry (git-ignored); prints its size and the tracked files' size
```

Then one call: `run` with `carry: ["bench/.carry"]`, `kind: "nvidia-h200"`, `timeout_s: 600`, and this command:

```
cd bench && PYTHONUNBUFFERED=1 python3 compare.py --profile h200 --bundle .carry --raw $OUT/raw.jsonl --doc $OUT/benchmarks.md --chart $OUT/benchmarks_ratio.png 2>&1 | tee $OUT/log.txt
```

It unpacks the bundle into /tmp/onnxgpu-bench, inflates the full models into bench/models (1.7 GB of disk
there), writes the inputs (batch 1 and sequence 128 for gpt2, bert and int64_embedding, sequence 16 for
gpt2_s16; the decode step has 1 new token after 127 past tokens; cnn batch 8 at 224x224; resnet50 and
mobilenetv3 batch 2 at 224x224; mlp batch 16), then
runs the matrix: capture on every model, then no-capture, then capture
again (round 2: its onnxgpu processes also profile GPU time per op), then cpu once, then no-capture again; 30 timed runs and 5 warmup
runs per process. `--deadline` (470 s by default there, counted from
the start) stops starting processes, and a process that overruns it by a minute is killed, so the command
ends inside the 10-minute limit; the report covers what ran (the rounds column), and what is under $OUT comes
back even when the command is cut. A shorter first call: add `--models mlp,gpt2_kv,gpt2 --rounds 1`. Back
here, rewrite the page from the raw file (the command recorded in it is kept):

```
/usr/bin/python3 bench/compare.py --report-only <files_at>/raw.jsonl --doc docs/benchmarks.md --chart docs/benchmarks_ratio.png
```

**The generation benchmark** (bench/decode.py) takes the same bundle (`--make-bundle` also exports the
llama_kv skeleton; `bench/compare --make-bundle --size full --models gpt2_kv,llama_kv` packs only the two decode
models'; the full llama_kv inflates to 3.4 GB, its weights in `llama_kv.onnx.data`), in a call of its own: `run`
with `carry: ["bench/.carry"]`, `kind: "nvidia-h200"`, `timeout_s: 600`, and:

```
cd bench && PYTHONUNBUFFERED=1 python3 decode.py --profile h200 --bundle .carry --raw $OUT/decode_raw.jsonl --doc $OUT/generation.md 2>&1 | tee $OUT/decode_log.txt
```

It inflates gpt2_kv and llama_kv (full), then per model runs `onnxgpu decode --capture`, `--no-capture` and
`ort_peer --decode-loop` from past 128 for 896 steps (to past 1023), then short `--check` / `--check-cpu`
loops (8 steps); `--deadline` 480 s. Back here:

```
/usr/bin/python3 bench/decode.py --report-only <files_at>/decode_raw.jsonl --update-doc docs/benchmarks.md
```
"""


# ---------------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", choices=sorted(DEFAULTS), default=None,
                    help="swiftshader (default without a GPU) or h200 (default with one)")
    ap.add_argument("--size", choices=sorted(make_models.SIZES), help="model size (default: the profile's)")
    ap.add_argument("--models", default=",".join(make_models.CASE_NAMES),
                    help="comma-separated subset of the cases (a case = a model file at the profile's dims)")
    ap.add_argument("--gpu-profile", type=int, help="onnxgpu bench --profile N in the first capture round: GPU "
                    "time per op type from timestamp queries (0: off)")
    ap.add_argument("--configs", default=",".join(PAIRS), help="comma-separated subset of " + ",".join(PAIRS))
    ap.add_argument("--io", choices=["bind", "host"], default="bind",
                    help="onnxgpu's webgpu runs: bind (default; inputs copied to the GPU once, as the peer's --io bind) "
                         "or host (Session::run, inputs uploaded every run)")
    ap.add_argument("--runs", type=int)
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--time-limit", type=float, help="onnxgpu bench --time-limit per process (s)")
    ap.add_argument("--deadline", type=float, help="start no new process after this many seconds (counted "
                    "from the start, model inflation included); a process may overrun it by 60 s at most")
    ap.add_argument("--process-timeout", type=float, default=300, help="kill a process after this many seconds")
    ap.add_argument("--onnxgpu", default=os.path.join(REPO, "build", "onnxgpu"))
    ap.add_argument("--peer", help="ort_peer binary (default: build bench/.peer from /work/shared/peer)")
    ap.add_argument("--models-root", default=make_models.DEFAULT_ROOT)
    ap.add_argument("--bundle", help="device machine: the folder --make-bundle wrote (bench/.carry)")
    ap.add_argument("--make-bundle", action="store_true", help="pack bench/.carry for the device machine and stop")
    ap.add_argument("--raw", help="raw results, JSON lines (default bench/results/raw-<profile>-<time>.jsonl)")
    ap.add_argument("--doc", default=os.path.join(REPO, "docs", "benchmarks.md"))
    ap.add_argument("--chart", default=os.path.join(REPO, "docs", "benchmarks_ratio.png"))
    ap.add_argument("--report-only", metavar="RAW", help="only write the report from a raw file")
    ap.add_argument("--command", help="the command line to print in the report (default: this one)")
    a = ap.parse_args()
    command = a.command or " ".join(["bench/compare"] + sys.argv[1:])

    if a.report_only:
        meta, recs = load_raw(a.report_only)
        build_report(meta, recs, a.doc, a.chart, meta.get("command", command))
        return
    a.profile = a.profile or ("h200" if gpu_present() else "swiftshader")
    d = DEFAULTS[a.profile]
    for k, v in d.items():
        if getattr(a, k, None) is None:
            setattr(a, k, v)
    a.configs = [c for c in a.configs.split(",") if c]
    models = [m for m in a.models.split(",") if m]

    if a.make_bundle:  # bench/compare's models and bench/decode.py's (llama_kv), or those --models names
        explicit = a.models != ",".join(make_models.CASE_NAMES)
        names = sorted({make_models.case_model(m) for m in models}) if explicit else make_models.ALL_MODELS
        for n in names:
            if n not in make_models.ALL_MODELS:
                raise SystemExit(f"--make-bundle: unknown model {n!r}; known: {', '.join(make_models.ALL_MODELS)}")
        make_models.export(a.size, a.models_root, names=names)
        make_bundle(a.size, a.onnxgpu, a.models_root)
        return

    lib_dirs, bundle_info = [], {}
    if a.bundle:
        bundle_info = json.load(open(os.path.join(a.bundle, "info.json")))
        a.onnxgpu, a.peer, lib_dirs, skel = unpack_bundle(a.bundle)
        install_skeletons(skel, a.models_root)
    elif not a.peer:
        a.peer = ensure_peer()
    if not os.path.exists(a.onnxgpu):
        raise SystemExit(f"{a.onnxgpu} not found: run scripts/build")
    env = vulkan_env(lib_dirs)

    # Models and inputs.
    skel_dir = os.path.join(a.models_root, "skel", a.size)
    names = sorted({make_models.case_model(m) for m in models})  # the model files these cases run
    if not all(os.path.exists(os.path.join(skel_dir, m + ".onnx")) for m in names):
        make_models.export(a.size, a.models_root, names=names)
    make_models.inflate(a.size, a.models_root, names=names)
    make_models.make_inputs(a.size, a.profile, a.models_root, names=names)
    manifest = json.load(open(os.path.join(a.models_root, a.size, "manifest.json")))

    if not a.raw:
        os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
        a.raw = os.path.join(HERE, "results", f"raw-{a.profile}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl")
    commit = bundle_info.get("commit") or git_commit()  # in bundle mode: the binary's commit
    meta = {"kind": "meta", "date": time.strftime("%Y-%m-%d %H:%M"), "profile": a.profile, "size": a.size,
            "runs": a.runs, "warmup": a.warmup, "rounds": a.rounds, "deadline_s": a.deadline,
            "time_limit_s": a.time_limit, "command": command,
            "onnxgpu_commit": commit or "?", "bundle": bundle_info or None,
            "machine": machine_description(a.onnxgpu, env), "manifest": manifest,
            "dims": {m: make_models.PROFILES[a.profile][m] for m in models}}
    with open(a.raw, "w") as f:
        f.write(json.dumps(meta) + "\n")
    log(f"profile {a.profile}, size {a.size}, raw results -> {a.raw}")
    r = Runner(a, a.onnxgpu, a.peer, env, a.raw)
    path = {m: os.path.join(a.models_root, a.size, make_models.case_model(m) + ".onnx") for m in models}
    data = {m: os.path.join(a.models_root, a.size, "inputs", a.profile, m) for m in models}
    for m in models:
        if not r.over_deadline():
            prepare_model(r, m, path[m], data[m])
    # Time on the device machine is short and the deadline cuts what comes last: capture (every round),
    # no-capture (round 1), cpu once (onnxgpu's CPU runner is a slow reference), then the other rounds
    # of no-capture.
    def pair_over_models(rnd, pair):
        if pair in a.configs:
            for m in models:
                bench_pair(r, rnd, pair, m, path[m], data[m], make_models.PROFILES[a.profile][m])
    for rnd in range(1, a.rounds + 1):
        pair_over_models(rnd, "capture")
        if rnd == 1:
            pair_over_models(1, "no-capture")
    pair_over_models(1, "cpu")
    for rnd in range(2, a.rounds + 1):
        pair_over_models(rnd, "no-capture")
    r.raw.close()
    shutil.rmtree(r.cache_root, ignore_errors=True)
    meta, recs = load_raw(a.raw)
    build_report(meta, recs, a.doc, a.chart, command)
    log(f"done in {time.monotonic() - r.t_start:.0f} s")


if __name__ == "__main__":
    main()
