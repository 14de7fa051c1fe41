#!/usr/bin/env python3
"""On the device machine: small random-weight Hugging Face transformers models of many architectures, exported
there by torch.onnx (torch.export's exporter, TorchScript's where that fails), each run by ONNX Runtime's CPU EP
(the reference) and by onnxgpu on the GPU (captured, fail-loud, recorded and replayed) and on its CPU EP.

  bench/compare --make-bundle --size full                  # here: bench/.carry (onnxgpu and its libraries)
  run, carry bench/.carry:  cd bench && python3 hf_device.py .carry $OUT [NAME ...] [--deadline S] [--speed]

--deadline: exports not done by then are reported and left; with --speed, timing stops 200 s after it.

Writes OUT/hf.txt (one line per model) and OUT/hf.tgz: the folder of each model that failed a check (model.onnx,
test_data_set_0 with the inputs and ONNX Runtime's outputs), so that it can be run again anywhere
(`onnxgpu run MODEL --data-set DIR`). Sizes are tiny (width 64, two layers): these check the graphs that the
exporters write for each architecture, not speed.

With --speed the same architectures are exported at working sizes (width 256, sequences of 128, images of
224, a second of audio; still two layers) and each is timed beside the peer (ONNX Runtime's WebGPU EP), both
captured with their inputs on the GPU, one model after the other: OUT/hf_speed.txt, a line per model with
both medians and their ratio. It looks for the architectures where onnxgpu falls behind, not for a headline.
"""
import concurrent.futures as cf
import os
import subprocess
import sys
import tarfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

TEXT = dict(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
            max_position_embeddings=128)
DEC = dict(TEXT, num_key_value_heads=2)
VIS = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, image_size=32,
           patch_size=8)
SEQ2SEQ = dict(vocab_size=512, d_model=64, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
               decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=128)
AUDIO = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, conv_dim=(32, 32),
             conv_kernel=(10, 3), conv_stride=(5, 2), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
             do_stable_layer_norm=True)

# name -> (model_type, config kwargs, head: "base" | "lm" | "seq2seq", inputs: text | text_tt | image | image64 |
# audio | whisper | seq2seq | clip)
CASES = {
    "distilbert": ("distilbert", dict(vocab_size=512, dim=64, n_layers=2, n_heads=4, hidden_dim=128), "base", "text"),
    "roberta": ("roberta", dict(TEXT, max_position_embeddings=130), "base", "text"),
    "albert": ("albert", dict(TEXT, embedding_size=32), "base", "text_tt"),
    "electra": ("electra", dict(TEXT, embedding_size=32), "base", "text_tt"),
    "deberta_v2": ("deberta-v2", dict(TEXT, relative_attention=True, position_buckets=32, max_relative_positions=64,
                                      pos_att_type=["p2c", "c2p"]), "base", "text_tt"),
    "mpnet": ("mpnet", TEXT, "base", "text"),
    "modernbert": ("modernbert", dict(TEXT, global_attn_every_n_layers=2, local_attention=16, pad_token_id=0,
                                      bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2), "base", "text"),
    "gpt_neo": ("gpt_neo", dict(vocab_size=512, hidden_size=64, num_layers=2, num_heads=4, window_size=8,
                                attention_types=[[["global", "local"], 1]], max_position_embeddings=128), "lm", "text"),
    "gptj": ("gptj", dict(vocab_size=512, n_embd=64, n_layer=2, n_head=4, rotary_dim=8, n_positions=128), "lm", "text"),
    "codegen": ("codegen", dict(vocab_size=512, n_embd=64, n_layer=2, n_head=4, rotary_dim=8, n_positions=128,
                                n_ctx=128), "lm", "text"),
    "opt": ("opt", dict(TEXT, ffn_dim=128, word_embed_proj_dim=64), "lm", "text"),
    "bloom": ("bloom", dict(vocab_size=512, hidden_size=64, n_layer=2, n_head=4), "lm", "text"),
    "falcon": ("falcon", dict(TEXT, num_kv_heads=2, new_decoder_architecture=True), "lm", "text"),
    "gpt_neox": ("gpt_neox", dict(TEXT, rotary_pct=0.25), "lm", "text"),
    "qwen2": ("qwen2", DEC, "lm", "text"),
    "qwen3": ("qwen3", dict(DEC, head_dim=16), "lm", "text"),
    "mistral": ("mistral", dict(DEC, sliding_window=8), "lm", "text"),
    "gemma": ("gemma", dict(DEC, head_dim=16), "lm", "text"),
    "gemma2": ("gemma2", dict(DEC, head_dim=16, sliding_window=8), "lm", "text"),
    "phi": ("phi", dict(TEXT, partial_rotary_factor=0.5), "lm", "text"),
    "phi3": ("phi3", dict(DEC, pad_token_id=0), "lm", "text"),
    "stablelm": ("stablelm", DEC, "lm", "text"),
    "olmo2": ("olmo2", DEC, "lm", "text"),
    "starcoder2": ("starcoder2", DEC, "lm", "text"),
    "deit": ("deit", VIS, "base", "image"),
    "beit": ("beit", dict(VIS, use_relative_position_bias=True), "base", "image"),
    "dinov2": ("dinov2", VIS, "base", "image"),
    "swin": ("swin", dict(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 2], window_size=4),
             "base", "image"),
    "convnext": ("convnext", dict(num_stages=2, hidden_sizes=[16, 32], depths=[1, 1]), "base", "image"),
    "convnextv2": ("convnextv2", dict(num_stages=2, hidden_sizes=[16, 32], depths=[1, 1]), "base", "image"),
    "segformer": ("segformer", dict(hidden_sizes=[16, 32], depths=[1, 1], num_encoder_blocks=2, sr_ratios=[2, 1],
                                    num_attention_heads=[1, 2], patch_sizes=[7, 3], strides=[4, 2]), "base", "image64"),
    "mobilevit": ("mobilevit", dict(hidden_sizes=[32, 40, 48], neck_hidden_sizes=[8, 8, 16, 24, 32, 40, 160],
                                    expand_ratio=2.0), "base", "image64"),
    "regnet": ("regnet", dict(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], groups_width=8), "base",
               "image64"),
    "resnet": ("resnet", dict(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="bottleneck"),
               "base", "image64"),
    "yolos": ("yolos", dict(VIS, image_size=[32, 32], num_detection_tokens=4), "base", "image"),
    "clip": ("clip", dict(text_config=dict(TEXT, num_hidden_layers=1), vision_config=dict(VIS, num_hidden_layers=1),
                          projection_dim=32), "base", "clip"),
    "siglip": ("siglip", dict(text_config=dict(TEXT, num_hidden_layers=1), vision_config=dict(VIS, num_hidden_layers=1)),
               "base", "clip"),
    "wav2vec2": ("wav2vec2", AUDIO, "base", "audio"),
    "hubert": ("hubert", AUDIO, "base", "audio"),
    "whisper": ("whisper", dict(SEQ2SEQ, num_mel_bins=16, max_source_positions=32, max_target_positions=32,
                                    pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1), "base",
                "whisper"),
    "t5": ("t5", dict(vocab_size=512, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4), "base", "seq2seq"),
    "bart": ("bart", SEQ2SEQ, "base", "seq2seq"),
    "marian": ("marian", dict(SEQ2SEQ, decoder_start_token_id=0, pad_token_id=0), "base", "seq2seq"),
}


SPEED = False  # --speed: working sizes (scaled below), timed beside the peer


def scaled(kw):
    """A case's configuration at working sizes: widths x4, images 224, audio and mel frames longer."""
    out = {}
    for k, v in kw.items():
        if isinstance(v, dict):
            v = scaled(v)
        elif k in ("hidden_size", "dim", "d_model", "n_embd", "embed_dim", "intermediate_size", "ffn_dim", "d_ff",
                   "hidden_dim", "encoder_ffn_dim", "decoder_ffn_dim", "d_kv", "embedding_size",
                   "word_embed_proj_dim", "projection_dim", "head_dim") and isinstance(v, int):
            v *= 4
        elif k in ("hidden_sizes", "neck_hidden_sizes", "conv_dim") and isinstance(v, (list, tuple)):
            v = type(v)(x * 4 for x in v)
        elif k == "image_size":
            v = [224, 224] if isinstance(v, list) else 224
        elif k == "patch_size" and v == 8:
            v = 16
        elif k in ("max_position_embeddings", "n_positions", "n_ctx"):
            v = max(v, 130) * 4
        elif k == "max_source_positions":
            v = 300
        elif k == "max_target_positions":
            v = 128
        out[k] = v
    return out


def inputs_for(kind, cfg):
    rng = np.random.default_rng(7)
    seq = 128 if SPEED else 16
    vocab = getattr(cfg, "vocab_size", None) or getattr(getattr(cfg, "text_config", None), "vocab_size", 512)
    ids = rng.integers(3, min(vocab, 512), size=(2, seq)).astype(np.int64)
    mask = np.ones((2, seq), np.int64)
    mask[1, seq * 2 // 3:] = 0  # the second row padded
    if kind == "text":
        return {"input_ids": ids, "attention_mask": mask}
    if kind == "text_tt":
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": (np.arange(seq) >= seq // 2).astype(np.int64)[None].repeat(2, 0)}
    if kind in ("image", "image64"):
        side = 224 if SPEED else 32 if kind == "image" else 64
        return {"pixel_values": rng.standard_normal((2, 3, side, side)).astype(np.float32)}
    if kind == "audio":
        return {"input_values": rng.standard_normal((2, 16000 if SPEED else 1600)).astype(np.float32)}
    if kind == "whisper":
        frames = 2 * cfg.max_source_positions
        return {"input_features": rng.standard_normal((1, cfg.num_mel_bins, frames)).astype(np.float32),
                "decoder_input_ids": ids[:1, :4]}
    if kind == "seq2seq":
        return {"input_ids": ids, "attention_mask": mask, "decoder_input_ids": ids[:, :seq // 3]}
    if kind == "clip":
        return {"input_ids": ids, "attention_mask": mask,
                "pixel_values": rng.standard_normal((2, 3, 224, 224) if SPEED else (2, 3, 32, 32)).astype(np.float32)}
    raise ValueError(kind)


def export(name, root):
    """In a worker: build, export, save inputs and ONNX Runtime's outputs. Returns a dict for the report."""
    import onnx
    import onnxruntime as ort
    import torch
    import transformers as tf
    from onnx import numpy_helper
    torch.set_num_threads(2)
    torch.manual_seed(0)
    model_type, kw, head, kind = CASES[name]
    folder = os.path.join(root, name)
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    res = {"name": name}
    t0 = time.time()
    cfg = tf.AutoConfig.for_model(model_type, **(scaled(kw) if SPEED else kw))
    cfg.use_cache = False  # one run over the whole sequence, no past
    cls = tf.AutoModelForCausalLM if head == "lm" else tf.AutoModel
    model = cls.from_config(cfg).eval()
    feeds = inputs_for(kind, cfg)
    tin = {k: torch.from_numpy(v) for k, v in feeds.items()}
    path = os.path.join(folder, "model.onnx")
    errors = []
    for exporter in ("dynamo", "torchscript"):
        try:
            torch.onnx.export(model, (), path, kwargs=tin, dynamo=exporter == "dynamo",
                              **({} if exporter == "dynamo" else {"opset_version": 17}))
            res["exporter"] = exporter
            break
        except Exception as e:  # noqa: BLE001 - any exporter failure: try the other, report both
            errors.append(f"{exporter}: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
    if "exporter" not in res:
        res["error"] = "export failed: " + " | ".join(errors)
        return res
    m = onnx.load(path)
    res["opset"] = max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
    res["nodes"] = len(m.graph.node)
    res["ops"] = sorted({(n.domain + "." if n.domain else "") + n.op_type for n in m.graph.node})
    onnx.save(m, path)  # one file: tiny models, no external data
    for f in os.listdir(folder):
        if f.endswith(".data"):
            os.remove(os.path.join(folder, f))
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    ort_feeds = {}
    for k, n in enumerate(names):
        ort_feeds[n] = feeds[n] if n in feeds else list(feeds.values())[k]
    outs = sess.run(None, ort_feeds)
    for k, n in enumerate(names):
        with open(os.path.join(data, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.ascontiguousarray(ort_feeds[n]), n).SerializeToString())
    scale = 0.0
    for k, (o, meta) in enumerate(zip(outs, sess.get_outputs())):
        with open(os.path.join(data, f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.ascontiguousarray(o), meta.name).SerializeToString())
        if np.issubdtype(o.dtype, np.floating) and o.size:
            scale = max(scale, float(np.abs(o).max()))
    res["scale"] = scale
    res["outputs"] = len(outs)
    res["export_s"] = round(time.time() - t0, 1)
    return res


def check(og, env, res, root, ep):
    folder = os.path.join(root, res["name"])
    cmd = [og, "run", os.path.join(folder, "model.onnx"), "--data-set", os.path.join(folder, "test_data_set_0"),
           "--rtol", "1e-3", "--atol", f"{max(res['scale'], 1e-6) * 1e-4:.3g}", "--ep", ep]
    if ep == "webgpu":
        cmd += ["--capture", "--fail-loud", "--runs", "3"]
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        text = (r.stdout + r.stderr).strip().splitlines()
        tail = " ".join(line for line in text[-3:] if not line.startswith("/"))
        return r.returncode, tail[:400]
    except subprocess.TimeoutExpired:
        return 124, "timed out (120 s)"


def speed(og, peer, env, res, root, stop_at):
    """Both engines captured, inputs on the GPU, one after the other: (onnxgpu ms, peer ms, a note)."""
    if time.time() > stop_at:
        return None, None, "not timed: past the deadline"
    folder = os.path.join(root, res["name"])
    model, data = os.path.join(folder, "model.onnx"), os.path.join(folder, "test_data_set_0")
    tol = ["--rtol", "1e-3", "--atol", f"{max(res['scale'], 1e-6) * 1e-4:.3g}"]
    cmds = {"onnxgpu": [og, "bench", model, "--ep", "webgpu", "--capture", "--io", "bind", "--data-set", data,
                        "--warmup", "5", "--runs", "30", "--time-limit", "10", "--json"] + tol,
            "peer": [peer, model, "--ep", "webgpu", "--capture", "--io", "bind", "--input-dir", data, "--ref-dir", data,
                     "--warmup", "5", "--runs", "30", "--json"] + tol}
    import compare
    ms, notes = {}, []
    for engine, cmd in cmds.items():
        try:
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=90)
            j = compare.parse_json(r.stdout) or {}
            ms[engine] = (j.get("latency_ms") or {}).get("median")
            if r.returncode or ms[engine] is None or j.get("ok", True) is False:
                notes.append(f"{engine}: rc={r.returncode} " + str(j.get("error") or j.get("capture_error") or
                                                                   r.stderr.strip()[-300:])[:300])
        except subprocess.TimeoutExpired:
            ms[engine] = None
            notes.append(f"{engine}: timed out (90 s)")
    return ms.get("onnxgpu"), ms.get("peer"), "; ".join(notes)


def main():
    global SPEED
    args = [a for a in sys.argv[1:]]
    if "--speed" in args:
        args.remove("--speed")
        SPEED = True
    deadline = 1e9
    if "--deadline" in args:
        i = args.index("--deadline")
        deadline = float(args[i + 1])
        del args[i:i + 2]
    bundle, out, names = args[0], args[1], args[2:] or list(CASES)
    start = time.time()
    import compare
    og, peer, libs, _ = compare.unpack_bundle(bundle)
    env = compare.vulkan_env(libs)
    root = "/tmp/hf"  # the models stay there; their folders come back in the two tarballs
    os.makedirs(root, exist_ok=True)
    import torch  # imported once before the workers fork
    import transformers as tf
    import onnxruntime
    print(f"torch {torch.__version__} transformers {tf.__version__} onnxruntime {onnxruntime.__version__}", flush=True)
    log = open(os.path.join(out, "hf_speed.txt" if SPEED else "hf.txt"), "w")

    def say(line):
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()
    ctx = __import__("multiprocessing").get_context("fork")
    checks = cf.ThreadPoolExecutor(4)
    timed = cf.ThreadPoolExecutor(1)

    def fmt(x):
        return "-" if x is None else f"{x:.3f}"
    pool = cf.ProcessPoolExecutor(8, mp_context=ctx)
    futures = {pool.submit(export, n, root): n for n in names}
    pending, seen = [], set()
    try:
        for fut in cf.as_completed(futures, timeout=max(1.0, deadline - (time.time() - start))):
            n = futures[fut]
            seen.add(n)
            try:
                res = fut.result()
            except Exception as e:  # noqa: BLE001
                res = {"name": n, "error": f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"}
            if "error" in res:
                say(f"HF {n:12s} {res['error']}")
                continue
            if SPEED:  # one model at a time on the GPU, in the order they are exported
                fut = timed.submit(speed, og, peer, env, res, root, start + deadline + 200)
                fut.add_done_callback(lambda f, res=res: say(
                    f"SPEED {res['name']:12s} onnxgpu {fmt(f.result()[0])} ms  peer {fmt(f.result()[1])} ms  ratio "
                    f"{fmt(f.result()[0] / f.result()[1]) if f.result()[0] and f.result()[1] else '-'}  "
                    f"{res['exporter']} {res['nodes']} nodes {f.result()[2]}"))
                continue
            pending.append((res, checks.submit(check, og, env, res, root, "webgpu"),
                            checks.submit(check, og, env, res, root, "cpu")))
    except cf.TimeoutError:
        for n in names:
            if n not in seen:
                say(f"HF {n:12s} not exported by the deadline")
    if SPEED:
        timed.shutdown(wait=True)
        log.close()
        print(f"done in {time.time() - start:.0f} s", flush=True)
        for p in list(getattr(pool, "_processes", {}).values()):
            p.kill()
        os._exit(0)
    failed = []
    for res, gpu, cpu in pending:
        (grc, gtail), (crc, ctail) = gpu.result(), cpu.result()
        if grc or crc:
            failed.append(res["name"])
        say(f"HF {res['name']:12s} gpu rc={grc} cpu rc={crc} {res['exporter']} opset {res['opset']} {res['nodes']} nodes "
            f"({res['export_s']} s) | gpu: {gtail}" + ("" if crc == 0 else f" | cpu: {ctail}"))
        say(f"   ops {res['name']}: {' '.join(res['ops'])}")
    log.close()
    # The failures' folders come back (model and data set, to run again anywhere), up to 15 MB of them.
    # The others come back in hf_pass.tgz (a corpus of exports to run here, on SwiftShader), as far as they fit.
    passed = [res["name"] for res, _, _ in pending if res["name"] not in failed]
    for tgz, group in (("hf.tgz", failed), ("hf_pass.tgz", passed)):
        total = 0
        with tarfile.open(os.path.join(out, tgz), "w:gz") as t:
            for n in group:
                folder = os.path.join(root, n)
                size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(folder) for f in fs)
                if total + size < 15e6:
                    t.add(folder, arcname=os.path.join("hf", n))
                    total += size
    print(f"done in {time.time() - start:.0f} s", flush=True)
    sys.stdout.flush()
    for p in list(getattr(pool, "_processes", {}).values()):  # a worker still exporting past the deadline
        p.kill()  # holds stdout open: a pipe reading this script would wait for it
    os._exit(0)


if __name__ == "__main__":
    main()
