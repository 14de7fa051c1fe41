#!/usr/bin/python3
"""Benchmark models for onnxgpu: export, skeletons, deterministic weights, inputs.

Three steps, each idempotent:

  export   torch (1.13 here) -> ONNX opset 17 -> a *skeleton*: the graph with every float initializer of
           >= 4096 elements emptied and marked with how to refill it (seed, mean, std). Skeletons are
           small (the 12-layer GPT-2 skeleton is well under 1 MB) and need torch only to be made.
  inflate  skeleton -> full model: each marked initializer is refilled from numpy's RandomState (a stream
           numpy keeps stable across versions), uniform with the recorded mean and std. Needs numpy + onnx
           only, so a machine without torch 1.13 (the H200 image has torch 2.11) builds the same models.
  inputs   per model and profile (swiftshader | h200): input_K.pb files in graph-input order, with values
           that make sense (ids below the vocabulary size, position ids after the past, mask of ones).

  /usr/bin/python3 bench/make_models.py all --size tiny --profile swiftshader    # export+inflate+inputs
  /usr/bin/python3 bench/make_models.py inflate --size full                      # skeletons -> models

Sizes (SIZES below): `full` = GPT-2 small (12 layers, width 768, 12 heads, vocab 50257, 124M parameters
with the embeddings) and BERT-base (12 layers, width 768, vocab 30522), mlp 1024-4096-1024; `small` = the
same with 4 layers; `tiny` = width 256, 4 heads, 2 layers, vocabularies of 4096, mlp 256-1024-256 (for
SwiftShader, which emulates the GPU on the CPU: there the run checks the harness, it measures nothing).

Layout: bench/models/skel/<size>/<model>.onnx, bench/models/<size>/<model>.onnx,
        bench/models/<size>/inputs/<profile>/<model>/input_K.pb, bench/models/<size>/manifest.json
"""
import argparse
import glob
import hashlib
import json
import math
import os
import subprocess
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = os.path.join(HERE, "models")
STRIP_MIN_ELEMENTS = 4096
FILL_MARK = "onnxgpu-bench-fill:"

# Model sizes. full: GPT-2 small (12 layers, width 768, 12 heads, vocab 50257: 124M parameters with the
# embeddings) and BERT-base (12 layers, vocab 30522); small: the same with 4 layers; tiny: width 256,
# 4 heads, 2 layers, vocabularies of 4096 (SwiftShader emulates the GPU on the CPU: a harness check).
SIZES = {
    "full": dict(width=768, heads=12, layers=12, gpt2_vocab=50257, bert_vocab=30522, emb_vocab=8192, mlp=(1024, 4096)),
    "small": dict(width=768, heads=12, layers=4, gpt2_vocab=50257, bert_vocab=30522, emb_vocab=8192, mlp=(1024, 4096)),
    "tiny": dict(width=256, heads=4, layers=2, gpt2_vocab=4096, bert_vocab=4096, emb_vocab=4096, mlp=(256, 1024)),
}
# The Llama-style decode step (llama_kv), per size. full: the shape of a ~0.85B Llama (TinyLlama's width, heads
# and MLP with 8 K/V heads and 16 layers: 853M parameters, 3.4 GB in float32, so its inflated model keeps the
# weights in external data, past protobuf's 2 GB); small: the same with 4 layers (311M); tiny: width 256.
LLAMA_SIZES = {
    "full": dict(width=2048, heads=32, kv_heads=8, layers=16, mlp=5632, vocab=32000),
    "small": dict(width=2048, heads=32, kv_heads=8, layers=4, mlp=5632, vocab=32000),
    "tiny": dict(width=256, heads=8, kv_heads=2, layers=2, mlp=688, vocab=4096),
}
# The T5-style encoder (t5), per size: full is T5-small's encoder (6 layers, width 512, 8 heads, 2048 wide MLP).
T5_SIZES = {
    "full": dict(width=512, heads=8, layers=6, ff=2048, vocab=32128),
    "small": dict(width=512, heads=8, layers=2, ff=2048, vocab=32128),
    "tiny": dict(width=128, heads=4, layers=2, ff=256, vocab=4096),
}
GPT2_CTX, BERT_CTX = 1024, 512
EXTERNAL_DATA_MIN_BYTES = 1800 * 2**20  # inflated models larger than this keep their weights in <model>.onnx.data

MODEL_NAMES = ["mlp", "int64_embedding", "gpt2", "gpt2_kv", "bert", "t5", "cnn", "resnet50", "mobilenetv3",
               "detect"]  # bench/compare's
# The torchvision classifiers (random weights, BatchNormalization folded into the convolutions at export).
VISION_MODELS = ["resnet50", "mobilenetv3"]
# The generation benchmark's (bench/decode.py) decode-step models; llama_kv is made only when asked for.
DECODE_MODELS = ["gpt2_kv", "llama_kv"]
ALL_MODELS = MODEL_NAMES + ["llama_kv"]
# Benchmark cases: a model file run at the dims of PROFILES[profile][case]. A case named like a model
# uses that model; the others name theirs here.
CASE_MODEL = {"gpt2_s16": "gpt2", "bert_b2": "bert"}
# Cases whose attention_mask pads: every batch row after the first ends in this share of masked positions
# (an encoder batch of sentences of different lengths; 32 of 128 in the h200 profile).
PADDING = {"bert_b2": 0.25, "t5": 0.25}
CASE_NAMES = ["mlp", "int64_embedding", "gpt2_s16", "gpt2", "gpt2_kv", "bert", "bert_b2", "t5", "cnn",
              "resnet50", "mobilenetv3", "detect"]


def case_model(case):
    return CASE_MODEL.get(case, case)


# Dimension values per profile and model (symbolic dims of the exported models).
PROFILES = {
    "swiftshader": {
        "mlp": {"batch": 4},
        "int64_embedding": {"batch": 1, "seq": 16},
        "gpt2_s16": {"batch": 1, "seq": 16},
        "gpt2": {"batch": 1, "seq": 32},
        "gpt2_kv": {"batch": 1, "seq": 1, "past_seq": 15},
        "bert": {"batch": 1, "seq": 16},
        "bert_b2": {"batch": 2, "seq": 16},
        "t5": {"batch": 2, "seq": 16},
        "cnn": {"batch": 1, "height": 32, "width": 32},
        "resnet50": {"batch": 1, "height": 64, "width": 64},
        "mobilenetv3": {"batch": 1, "height": 64, "width": 64},
        "detect": {"batch": 1, "height": 64, "width": 64},
    },
    "h200": {
        "mlp": {"batch": 16},
        "int64_embedding": {"batch": 1, "seq": 128},
        "gpt2_s16": {"batch": 1, "seq": 16},
        "gpt2": {"batch": 1, "seq": 128},
        "gpt2_kv": {"batch": 1, "seq": 1, "past_seq": 127},
        "bert": {"batch": 1, "seq": 128},
        "bert_b2": {"batch": 2, "seq": 128},
        "t5": {"batch": 2, "seq": 128},
        "cnn": {"batch": 8, "height": 224, "width": 224},
        "resnet50": {"batch": 2, "height": 224, "width": 224},
        "mobilenetv3": {"batch": 2, "height": 224, "width": 224},
        "detect": {"batch": 2, "height": 320, "width": 320},
    },
}

DESCRIPTIONS = {  # sizes in the manifest's config
    "mlp": "x[batch,in] -> Gemm -> GELU(erf) -> Gemm; float only, no INT64",
    "int64_embedding": "INT64 ids -> token Gather + position Gather (Range from Shape) + LayerNorm",
    "gpt2": "GPT-2 decoder without cache: token+position embeddings (Range from Shape), causal attention, "
            "tied LM head -> logits[batch,seq,vocab]",
    "gpt2_kv": "GPT-2 decode step with KV cache: INT64 input_ids and position_ids, past_key_i/past_value_i "
               "[batch,heads,past_seq,64] -> logits + present_key_i/present_value_i",
    "bert": "BERT encoder (post-LN): INT64 input_ids, attention_mask, token_type_ids -> last_hidden_state",
    "t5": "T5-style encoder: INT64 input_ids and attention_mask (padded rows), RMSNorm (pre-norm), attention "
          "without scaling plus a relative position bias (bucketed |i - j| through Range, Abs, Log, Min, Where; an "
          "embedding per head) and the mask, ReLU MLP -> last_hidden_state",
    "cnn": "small ResNet-style CNN: 5 conv3x3 (BN folded) + ReLU, a residual add, 2 max pools, global average "
           "pool, linear 128->10",
    "resnet50": "torchvision ResNet-50 (random weights, BN folded at export): 53 convs (7x7 stem, 1x1 and 3x3 "
                "bottlenecks, strided downsamples) + ReLU, 16 residual adds, max pool, global average pool, linear "
                "2048->1000",
    "mobilenetv3": "torchvision MobileNetV3-small (random weights, BN folded at export): 52 convs (depthwise 3x3 "
                   "and 5x5, 1x1 expansions and projections), HardSwish/ReLU, 9 squeeze-excitation blocks (global "
                   "average pool, 1x1 convs, HardSigmoid, Mul), residual adds, linear 576->1024->1000",
    "detect": "detection-style network (one-stage, FPN neck): a conv backbone of 4 stages (stride 2 each, BN "
              "folded, ReLU), a top-down neck (1x1 lateral convs, Resize nearest x2, Concat, 3x3 conv) over 3 levels, "
              "per-level class and box heads (3x3 convs) flattened and concatenated -> scores[batch,anchors,20], "
              "boxes[batch,anchors,4]",
    "llama_kv": "Llama-style decode step with KV cache, plain ONNX ops: RMSNorm, rotary embedding from position_ids, "
                "grouped-query attention (K/V heads repeated by Expand), SiLU MLP, untied LM head; past_key_i/"
                "past_value_i [batch,kv_heads,past_seq,head_dim] -> logits + present_key_i/present_value_i",
}


def model_config(name, size):
    """What an input generator and a report need to know about a model of this size."""
    c = SIZES[size]
    d = {"size": size}
    if name == "llama_kv":
        d.update(LLAMA_SIZES[size])
        return d
    if name == "t5":
        d.update(T5_SIZES[size])
        return d
    if name in ("int64_embedding", "gpt2", "gpt2_kv", "bert"):
        d["width"] = c["width"]
    if name in ("gpt2", "gpt2_kv", "bert"):
        d.update(layers=c["layers"], heads=c["heads"])
    if name in ("gpt2", "gpt2_kv"):
        d["vocab"] = c["gpt2_vocab"]
    elif name == "bert":
        d["vocab"] = c["bert_vocab"]
    elif name == "int64_embedding":
        d["vocab"] = c["emb_vocab"]
    elif name == "mlp":
        d["hidden"] = list(c["mlp"])
    return d


# ---------------------------------------------------------------------------------------------------
# Export (torch)
# ---------------------------------------------------------------------------------------------------

def build_torch_models(size):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    cfg = SIZES[size]
    WIDTH, HEADS, n_layers = cfg["width"], cfg["heads"], cfg["layers"]
    GPT2_VOCAB, BERT_VOCAB, EMB_VOCAB = cfg["gpt2_vocab"], cfg["bert_vocab"], cfg["emb_vocab"]
    MLP_IN, MLP_HIDDEN = cfg["mlp"]
    neg = torch.finfo(torch.float32).min

    def init_gpt(module):
        for m in module.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, 0.02)
                if getattr(m, "bias", None) is not None:
                    nn.init.normal_(m.bias, 0.0, 0.02)

    class GptAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(WIDTH, 3 * WIDTH)
            self.c_proj = nn.Linear(WIDTH, WIDTH)

        def forward(self, x, past_k=None, past_v=None):
            b, t = x.size(0), x.size(1)
            dh = WIDTH // HEADS
            q, k, v = self.c_attn(x).split(WIDTH, dim=2)
            q = q.view(b, t, HEADS, dh).transpose(1, 2)
            k = k.view(b, t, HEADS, dh).transpose(1, 2)
            v = v.view(b, t, HEADS, dh).transpose(1, 2)
            if past_k is not None:
                k = torch.cat([past_k, k], dim=2)
                v = torch.cat([past_v, v], dim=2)
            total = k.size(2)
            att = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(dh))
            q_pos = torch.arange(t) + (total - t)
            k_pos = torch.arange(total)
            future = k_pos.unsqueeze(0) > q_pos.unsqueeze(1)  # causal mask, offset by the past
            att = att.masked_fill(future, neg)
            att = F.softmax(att, dim=-1)
            y = torch.matmul(att, v).transpose(1, 2).reshape(b, t, WIDTH)
            return self.c_proj(y), k, v

    class GptBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(WIDTH)
            self.attn = GptAttention()
            self.ln_2 = nn.LayerNorm(WIDTH)
            self.c_fc = nn.Linear(WIDTH, 4 * WIDTH)
            self.c_proj = nn.Linear(4 * WIDTH, WIDTH)

        def forward(self, x, past_k=None, past_v=None):
            a, k, v = self.attn(self.ln_1(x), past_k, past_v)
            x = x + a
            x = x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))
            return x, k, v

    class Gpt2(nn.Module):
        def __init__(self, with_cache):
            super().__init__()
            self.with_cache = with_cache
            self.wte = nn.Embedding(GPT2_VOCAB, WIDTH)
            self.wpe = nn.Embedding(GPT2_CTX, WIDTH)
            self.h = nn.ModuleList([GptBlock() for _ in range(n_layers)])
            self.ln_f = nn.LayerNorm(WIDTH)
            init_gpt(self)

        def forward(self, input_ids, position_ids=None, *past):
            if position_ids is None:
                position_ids = torch.arange(input_ids.size(1)).unsqueeze(0)
            x = self.wte(input_ids) + self.wpe(position_ids)
            presents = []
            for i, block in enumerate(self.h):
                if self.with_cache:
                    x, k, v = block(x, past[2 * i], past[2 * i + 1])
                    presents += [k, v]
                else:
                    x, _, _ = block(x)
            logits = F.linear(self.ln_f(x), self.wte.weight)
            return (logits, *presents) if self.with_cache else logits

    class BertLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.q = nn.Linear(WIDTH, WIDTH)
            self.k = nn.Linear(WIDTH, WIDTH)
            self.v = nn.Linear(WIDTH, WIDTH)
            self.o = nn.Linear(WIDTH, WIDTH)
            self.ln1 = nn.LayerNorm(WIDTH, eps=1e-12)
            self.ff1 = nn.Linear(WIDTH, 4 * WIDTH)
            self.ff2 = nn.Linear(4 * WIDTH, WIDTH)
            self.ln2 = nn.LayerNorm(WIDTH, eps=1e-12)

        def forward(self, x, ext_mask):
            b, t = x.size(0), x.size(1)
            dh = WIDTH // HEADS

            def heads(y):
                return y.view(b, t, HEADS, dh).transpose(1, 2)

            q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
            att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dh) + ext_mask
            att = F.softmax(att, dim=-1)
            y = torch.matmul(att, v).transpose(1, 2).reshape(b, t, WIDTH)
            x = self.ln1(x + self.o(y))
            return self.ln2(x + self.ff2(F.gelu(self.ff1(x))))

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.word = nn.Embedding(BERT_VOCAB, WIDTH)
            self.pos = nn.Embedding(BERT_CTX, WIDTH)
            self.token_type = nn.Embedding(2, WIDTH)
            self.ln = nn.LayerNorm(WIDTH, eps=1e-12)
            self.layers = nn.ModuleList([BertLayer() for _ in range(n_layers)])
            init_gpt(self)

        def forward(self, input_ids, attention_mask, token_type_ids):
            pos = torch.arange(input_ids.size(1)).unsqueeze(0)
            x = self.ln(self.word(input_ids) + self.pos(pos) + self.token_type(token_type_ids))
            ext = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
            for layer in self.layers:
                x = layer(x, ext)
            return x

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(MLP_IN, MLP_HIDDEN)
            self.fc2 = nn.Linear(MLP_HIDDEN, MLP_IN)

        def forward(self, x):
            return self.fc2(F.gelu(self.fc1(x)))

    class Int64Embedding(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(EMB_VOCAB, WIDTH)
            self.pos = nn.Embedding(GPT2_CTX, WIDTH)
            self.ln = nn.LayerNorm(WIDTH)
            init_gpt(self)

        def forward(self, input_ids):
            pos = torch.arange(input_ids.size(1)).unsqueeze(0)
            return self.ln(self.tok(input_ids) + self.pos(pos))

    def conv_bn(cin, cout, stride=1):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU())

    def random_batch_norms(module):  # non-trivial BatchNorm statistics, folded into the convs at export
        for m in module.modules():
            if isinstance(m, nn.BatchNorm2d):
                nn.init.uniform_(m.weight, 0.5, 1.5)
                nn.init.uniform_(m.bias, -0.1, 0.1)
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)

    class Cnn(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = conv_bn(3, 32)
            self.c1 = conv_bn(32, 32)
            self.c2 = conv_bn(32, 64)
            self.c3 = conv_bn(64, 64)
            self.c4 = conv_bn(64, 128)
            self.fc = nn.Linear(128, 10)
            random_batch_norms(self)

        def forward(self, x):
            x = self.stem(x)
            x = x + self.c1(x)
            x = F.max_pool2d(x, 2)
            x = self.c3(self.c2(x))
            x = F.max_pool2d(x, 2)
            x = self.c4(x)
            x = F.adaptive_avg_pool2d(x, 1).flatten(1)
            return self.fc(x)

    t5 = T5_SIZES[size]

    class RmsNorm(nn.Module):
        def __init__(self, w):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(w))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight

    class T5Layer(nn.Module):
        def __init__(self):
            super().__init__()
            w = t5["width"]
            self.q, self.k, self.v, self.o = (nn.Linear(w, w, bias=False) for _ in range(4))
            self.wi = nn.Linear(w, t5["ff"], bias=False)
            self.wo = nn.Linear(t5["ff"], w, bias=False)
            self.ln1, self.ln2 = RmsNorm(w), RmsNorm(w)

        def forward(self, x, bias):
            b, t, h = x.size(0), x.size(1), t5["heads"]

            def heads(y):
                return y.view(b, t, h, -1).transpose(1, 2)

            y = self.ln1(x)
            q, k, v = heads(self.q(y)), heads(self.k(y)), heads(self.v(y))
            att = F.softmax(torch.matmul(q, k.transpose(-1, -2)) + bias, dim=-1)  # T5: no 1/sqrt(d)
            x = x + self.o(torch.matmul(att, v).transpose(1, 2).reshape(b, t, -1))
            return x + self.wo(F.relu(self.wi(self.ln2(x))))

    class T5Encoder(nn.Module):
        BUCKETS, MAX_DISTANCE = 32, 128

        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(t5["vocab"], t5["width"])
            self.rel = nn.Embedding(self.BUCKETS, t5["heads"])
            self.layers = nn.ModuleList([T5Layer() for _ in range(t5["layers"])])
            self.ln_f = RmsNorm(t5["width"])
            init_gpt(self)

        def bucket(self, rel):  # T5's bidirectional buckets: exact below 8, logarithmic up to 128
            half = self.BUCKETS // 2
            exact = half // 2
            n = rel.abs()
            large = exact + (torch.log(n.float() / exact) / math.log(self.MAX_DISTANCE / exact)
                             * (half - exact)).to(torch.long)
            large = torch.min(large, torch.full_like(large, half - 1))
            return (rel > 0).to(torch.long) * half + torch.where(n < exact, n, large)

        def forward(self, input_ids, attention_mask):
            pos = torch.arange(input_ids.size(1))
            bias = self.rel(self.bucket(pos[None, :] - pos[:, None])).permute(2, 0, 1).unsqueeze(0)
            bias = bias + (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -1e9
            x = self.embed(input_ids)
            for layer in self.layers:
                x = layer(x, bias)
            return self.ln_f(x)

    class Detect(nn.Module):
        """A one-stage detector's shape of work: strided backbone, FPN neck (Resize + Concat), heads per level."""
        CLASSES, ANCHORS, NECK = 20, 3, 64

        def __init__(self):
            super().__init__()
            widths = [32, 64, 128, 256]
            self.stages = nn.ModuleList()
            cin = 3
            for w in widths:  # strides 2, 4, 8, 16
                self.stages.append(nn.Sequential(conv_bn(cin, w, 2), conv_bn(w, w, 1)))
                cin = w
            n = self.NECK
            self.lateral = nn.ModuleList(nn.Conv2d(w, n, 1) for w in widths[1:])  # levels at strides 4, 8, 16
            self.merge = nn.ModuleList(conv_bn(2 * n, n, 1) for _ in widths[1:-1])
            self.cls = nn.ModuleList(nn.Conv2d(n, self.ANCHORS * self.CLASSES, 3, padding=1) for _ in widths[1:])
            self.box = nn.ModuleList(nn.Conv2d(n, self.ANCHORS * 4, 3, padding=1) for _ in widths[1:])
            random_batch_norms(self)

        def forward(self, x):
            feats = []
            for stage in self.stages:
                x = stage(x)
                feats.append(x)
            lat = [l(f) for l, f in zip(self.lateral, feats[1:])]
            levels = [lat[-1]]
            for i in range(len(lat) - 2, -1, -1):  # top-down: upsample the coarser level, concat, merge
                up = F.interpolate(levels[0], scale_factor=2.0, mode="nearest")
                levels.insert(0, self.merge[i](torch.cat([lat[i], up], dim=1)))
            b = x.shape[0]
            scores = [c(f).reshape(b, self.ANCHORS * self.CLASSES, -1).transpose(1, 2).reshape(b, -1, self.CLASSES)
                      for c, f in zip(self.cls, levels)]
            boxes = [h(f).reshape(b, self.ANCHORS * 4, -1).transpose(1, 2).reshape(b, -1, 4)
                     for h, f in zip(self.box, levels)]
            return torch.sigmoid(torch.cat(scores, dim=1)), torch.cat(boxes, dim=1)

    dh = WIDTH // HEADS
    models = {}

    def add(name, module, args, input_names, output_names, dynamic_axes):
        models[name] = (module, args, input_names, output_names, dynamic_axes)

    torch.manual_seed(0)
    add("mlp", Mlp(), (torch.randn(2, MLP_IN),), ["x"], ["y"], {"x": {0: "batch"}, "y": {0: "batch"}})
    torch.manual_seed(1)
    ids = torch.randint(0, 100, (1, 5))
    add("int64_embedding", Int64Embedding(), (ids,), ["input_ids"], ["embeddings"],
        {"input_ids": {0: "batch", 1: "seq"}, "embeddings": {0: "batch", 1: "seq"}})
    torch.manual_seed(2)
    add("gpt2", Gpt2(False), (ids,), ["input_ids"], ["logits"],
        {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}})
    torch.manual_seed(3)
    past = []
    in_names, out_names = ["input_ids", "position_ids"], ["logits"]
    axes = {"input_ids": {0: "batch", 1: "seq"}, "position_ids": {0: "batch", 1: "seq"},
            "logits": {0: "batch", 1: "seq"}}
    for i in range(n_layers):
        for kv in ("key", "value"):
            past.append(torch.randn(1, HEADS, 4, dh))
            in_names.append(f"past_{kv}_{i}")
            out_names.append(f"present_{kv}_{i}")
            axes[f"past_{kv}_{i}"] = {0: "batch", 2: "past_seq"}
            axes[f"present_{kv}_{i}"] = {0: "batch", 2: "total_seq"}
    pos_ids = torch.arange(4, 5).unsqueeze(0)
    add("gpt2_kv", Gpt2(True), (ids[:, :1], pos_ids, *past), in_names, out_names, axes)
    torch.manual_seed(4)
    mask = torch.ones(1, 5, dtype=torch.int64)
    types = torch.zeros(1, 5, dtype=torch.int64)
    add("bert", Bert(), (ids, mask, types), ["input_ids", "attention_mask", "token_type_ids"],
        ["last_hidden_state"],
        {n: {0: "batch", 1: "seq"} for n in ["input_ids", "attention_mask", "token_type_ids", "last_hidden_state"]})
    torch.manual_seed(7)
    add("t5", T5Encoder(), (ids, mask), ["input_ids", "attention_mask"], ["last_hidden_state"],
        {n: {0: "batch", 1: "seq"} for n in ["input_ids", "attention_mask", "last_hidden_state"]})
    torch.manual_seed(5)
    add("cnn", Cnn(), (torch.randn(1, 3, 32, 32),), ["image"], ["logits"],
        {"image": {0: "batch", 2: "height", 3: "width"}, "logits": {0: "batch"}})
    torch.manual_seed(6)
    add("detect", Detect(), (torch.randn(1, 3, 64, 64),), ["image"], ["scores", "boxes"],
        {"image": {0: "batch", 2: "height", 3: "width"}, "scores": {0: "batch", 1: "anchors"},
         "boxes": {0: "batch", 1: "anchors"}})
    return models


def build_vision_models(names):
    """torchvision's classifiers with their own random initialisation (no weights are downloaded)."""
    import torch
    try:
        import torchvision
    except ImportError:  # Debian's package, installed here when missing (as scripts/lib.sh installs the rest)
        print("make_models: installing Debian's python3-torchvision", flush=True)
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        subprocess.run(sudo + ["apt-get", "install", "-y", "-q", "python3-torchvision"], check=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        import torchvision

    import torch.nn as nn

    ctors = {"resnet50": torchvision.models.resnet50, "mobilenetv3": torchvision.models.mobilenet_v3_small}
    models = {}
    for name in names:
        torch.manual_seed(10 + VISION_MODELS.index(name))
        module = ctors[name]()
        if name == "mobilenetv3":
            # torchvision's own initialisation (fan-out convs, unit BatchNorms) shrinks the logits to ~1e-9
            # over its 52 layers, which any output would match: fan-in weights and BatchNorm statistics near
            # one keep them near 0.2.
            for m in module.modules():
                if isinstance(m, (nn.Conv2d, nn.Linear)):
                    nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.uniform_(m.weight, 0.8, 1.2)
                    nn.init.uniform_(m.bias, -0.2, 0.2)
                    m.running_mean.uniform_(-0.1, 0.1)
                    m.running_var.uniform_(0.5, 1.5)
        models[name] = (module, (torch.randn(1, 3, 224, 224),), ["image"], ["logits"],
                        {"image": {0: "batch", 2: "height", 3: "width"}, "logits": {0: "batch"}})
    return models


def build_llama_model(size):
    """The Llama-style decode step (llama_kv): RMSNorm as x / Sqrt(ReduceMean(x^2) + eps) * w; rotary embedding
    computed from position_ids (Cast, Mul by inv_freq, Concat, Cos, Sin; rotate_half by Slice/Neg/Concat);
    grouped-query attention, the K/V heads repeated after the cache (Unsqueeze/Expand/Reshape), so the presents
    hold the kv_heads; a causal mask offset by the past (Range from Shape); SiLU MLP (gate * up); no biases;
    untied LM head. Same interface as gpt2_kv (input_ids, position_ids, past_key_i/past_value_i)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    c = LLAMA_SIZES[size]
    C, H, KVH, L, I, V = c["width"], c["heads"], c["kv_heads"], c["layers"], c["mlp"], c["vocab"]
    D, REP, EPS = C // H, H // KVH, 1e-5
    neg = torch.finfo(torch.float32).min

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(C))

        def forward(self, x):
            return self.weight * (x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + EPS))

    def rotate_half(x):
        return torch.cat([-x[..., D // 2:], x[..., :D // 2]], dim=-1)

    def repeat_kv(x):
        b, _, s, _ = x.size()
        return x[:, :, None, :, :].expand(b, KVH, REP, s, D).reshape(b, H, s, D)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = nn.Linear(C, H * D, bias=False)
            self.k_proj = nn.Linear(C, KVH * D, bias=False)
            self.v_proj = nn.Linear(C, KVH * D, bias=False)
            self.o_proj = nn.Linear(H * D, C, bias=False)

        def forward(self, x, cos, sin, past_k, past_v):
            b, t = x.size(0), x.size(1)
            q = self.q_proj(x).view(b, t, H, D).transpose(1, 2)
            k = self.k_proj(x).view(b, t, KVH, D).transpose(1, 2)
            v = self.v_proj(x).view(b, t, KVH, D).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            k = torch.cat([past_k, k], dim=2)
            v = torch.cat([past_v, v], dim=2)
            total = k.size(2)
            att = torch.matmul(q, repeat_kv(k).transpose(-1, -2)) * (1.0 / math.sqrt(D))
            q_pos = torch.arange(t) + (total - t)
            future = torch.arange(total).unsqueeze(0) > q_pos.unsqueeze(1)  # causal mask, offset by the past
            att = F.softmax(att.masked_fill(future, neg), dim=-1)
            y = torch.matmul(att, repeat_kv(v)).transpose(1, 2).reshape(b, t, C)
            return self.o_proj(y), k, v

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_layernorm = RMSNorm()
            self.self_attn = Attention()
            self.post_attention_layernorm = RMSNorm()
            self.gate_proj = nn.Linear(C, I, bias=False)
            self.up_proj = nn.Linear(C, I, bias=False)
            self.down_proj = nn.Linear(I, C, bias=False)

        def forward(self, x, cos, sin, past_k, past_v):
            a, k, v = self.self_attn(self.input_layernorm(x), cos, sin, past_k, past_v)
            x = x + a
            h = self.post_attention_layernorm(x)
            return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h)), k, v

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(V, C)
            self.layers = nn.ModuleList([Block() for _ in range(L)])
            self.norm = RMSNorm()
            self.lm_head = nn.Linear(C, V, bias=False)
            self.register_buffer("inv_freq", 1.0 / (10000.0 ** (torch.arange(0, D, 2, dtype=torch.float32) / D)),
                                 persistent=False)
            for m in self.modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(m.weight, 0.0, 0.02)

        def forward(self, input_ids, position_ids, *past):
            x = self.embed_tokens(input_ids)
            freqs = position_ids[:, :, None].to(torch.float32) * self.inv_freq[None, None, :]
            emb = torch.cat([freqs, freqs], dim=-1)
            cos, sin = emb.cos()[:, None], emb.sin()[:, None]  # [batch, 1, seq, head_dim]
            presents = []
            for i, block in enumerate(self.layers):
                x, k, v = block(x, cos, sin, past[2 * i], past[2 * i + 1])
                presents += [k, v]
            return (self.lm_head(self.norm(x)), *presents)

    torch.manual_seed(6)
    module = Llama()
    in_names, out_names = ["input_ids", "position_ids"], ["logits"]
    axes = {"input_ids": {0: "batch", 1: "seq"}, "position_ids": {0: "batch", 1: "seq"},
            "logits": {0: "batch", 1: "seq"}}
    past = []
    for i in range(L):
        for kv in ("key", "value"):
            past.append(torch.randn(1, KVH, 4, D))
            in_names.append(f"past_{kv}_{i}")
            out_names.append(f"present_{kv}_{i}")
            axes[f"past_{kv}_{i}"] = {0: "batch", 2: "past_seq"}
            axes[f"present_{kv}_{i}"] = {0: "batch", 2: "total_seq"}
    ids = torch.randint(0, V, (1, 2))
    pos_ids = torch.arange(4, 6).unsqueeze(0)
    return {"llama_kv": (module, (ids, pos_ids, *past), in_names, out_names, axes)}


def strip_to_skeleton(model, model_name):
    """Empties float initializers of >= STRIP_MIN_ELEMENTS elements; records how to refill them."""
    import numpy as np
    from onnx import numpy_helper, TensorProto

    stripped = 0
    for init in model.graph.initializer:
        n = int(np.prod(init.dims)) if len(init.dims) else 1
        if init.data_type != TensorProto.FLOAT or n < STRIP_MIN_ELEMENTS:
            continue
        arr = numpy_helper.to_array(init).astype(np.float64)
        seed = zlib.crc32((model_name + "/" + init.name).encode()) & 0x7FFFFFFF
        spec = {"seed": seed, "mean": float(arr.mean()), "std": float(arr.std())}
        init.ClearField("raw_data")
        init.ClearField("float_data")
        init.ClearField("external_data")  # (a > 2 GB export's, read in by onnx.load)
        init.data_location = TensorProto.DEFAULT
        init.doc_string = FILL_MARK + json.dumps(spec, sort_keys=True)
        stripped += n
    return stripped


def export(size, root, force=False, names=None):
    """names: the models to export (default MODEL_NAMES, bench/compare's); skeletons already there are kept."""
    import tempfile
    import torch
    import onnx

    out_dir = os.path.join(root, "skel", size)
    os.makedirs(out_dir, exist_ok=True)
    todo = [n for n in (names or MODEL_NAMES) if force or not os.path.exists(os.path.join(out_dir, n + ".onnx"))]
    if not todo:
        return
    models = build_torch_models(size) if any(n != "llama_kv" and n not in VISION_MODELS for n in todo) else {}
    if "llama_kv" in todo:
        models.update(build_llama_model(size))
    if any(n in VISION_MODELS for n in todo):
        models.update(build_vision_models([n for n in todo if n in VISION_MODELS]))
    kwargs = {}
    if int(torch.__version__.split(".")[0]) >= 2:
        kwargs["dynamo"] = False  # the TorchScript exporter, as with torch 1.13
    for name in todo:
        module, args, in_names, out_names, axes = models[name]
        module.eval()
        # A folder of its own: past 2 GB, torch writes the weights as external data files beside the model.
        with tempfile.TemporaryDirectory(dir=out_dir) as tmp_dir:
            tmp = os.path.join(tmp_dir, name + ".onnx")
            with torch.no_grad():
                torch.onnx.export(module, args, tmp, opset_version=17, input_names=in_names, output_names=out_names,
                                  dynamic_axes=axes, do_constant_folding=True, **kwargs)
            m = onnx.load(tmp)  # external data read in, and the tensors marked as holding their data
        stripped = strip_to_skeleton(m, name)
        m.doc_string = DESCRIPTIONS[name]
        meta = dict(model_config(name, size), model=name, torch=torch.__version__, opset=17,
                    stripped_elements=stripped)
        entry = m.metadata_props.add()
        entry.key, entry.value = "onnxgpu_bench", json.dumps(meta, sort_keys=True)
        onnx.save(m, os.path.join(out_dir, name + ".onnx"))
        print(f"export: {size}/{name}: {len(m.graph.node)} nodes, {stripped / 1e6:.1f}M elements to refill",
              file=sys.stderr)


# ---------------------------------------------------------------------------------------------------
# Inflate (numpy + onnx)
# ---------------------------------------------------------------------------------------------------

def fill_values(spec, n):
    import numpy as np
    rs = np.random.RandomState(spec["seed"])
    half_width = spec["std"] * math.sqrt(3.0)  # uniform with the recorded std
    return ((rs.random_sample(n) * 2.0 - 1.0) * half_width + spec["mean"]).astype(np.float32)


def inflate(size, root, force=False, names=None):
    """names: the models to inflate (default MODEL_NAMES). A model over EXTERNAL_DATA_MIN_BYTES keeps its weights
    in <model>.onnx.data beside it (ONNX external data, one file)."""
    import numpy as np
    import onnx

    skel_dir, out_dir = os.path.join(root, "skel", size), os.path.join(root, size)
    os.makedirs(out_dir, exist_ok=True)
    manifest_path = os.path.join(out_dir, "manifest.json")
    manifest = json.load(open(manifest_path)) if os.path.exists(manifest_path) else {}
    for name in names or MODEL_NAMES:
        skel = os.path.join(skel_dir, name + ".onnx")
        out = os.path.join(out_dir, name + ".onnx")
        if not os.path.exists(skel):
            raise SystemExit(f"inflate: {skel} is missing (run `make_models.py export --size {size}` where torch is)")
        skel_sha = sha256_file(skel)
        if not force and os.path.exists(out) and manifest.get(name, {}).get("skeleton_sha256") == skel_sha:
            continue
        m = onnx.load(skel)
        params = 0
        for init in m.graph.initializer:
            n = int(np.prod(init.dims)) if len(init.dims) else 1
            params += n
            if not init.doc_string.startswith(FILL_MARK):
                continue
            spec = json.loads(init.doc_string[len(FILL_MARK):])
            init.raw_data = fill_values(spec, n).tobytes()
            init.doc_string = ""
        tmp = out + ".tmp"
        data_name = name + ".onnx.data"
        data_path = os.path.join(out_dir, data_name)
        if os.path.exists(data_path):
            os.remove(data_path)  # onnx appends to an existing external data file
        external = sum(len(i.raw_data) for i in m.graph.initializer) > EXTERNAL_DATA_MIN_BYTES
        if external:
            onnx.save_model(m, tmp, save_as_external_data=True, all_tensors_to_one_file=True, location=data_name,
                            size_threshold=1024)
        else:
            onnx.save(m, tmp)
        os.replace(tmp, out)
        manifest[name] = {"skeleton_sha256": skel_sha, "model_sha256": sha256_file(out), "parameters": params,
                          "bytes": os.path.getsize(out) + (os.path.getsize(data_path) if external else 0),
                          "external_data": data_name if external else None,
                          "config": model_config(name, size), "description": DESCRIPTIONS[name]}
        print(f"inflate: {size}/{name}: {params / 1e6:.1f}M parameters, {manifest[name]['bytes'] / 2**20:.0f} MiB"
              + (f" ({data_name})" if external else ""),
              file=sys.stderr)
        with open(manifest_path, "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------------
# Inputs (numpy + onnx)
# ---------------------------------------------------------------------------------------------------

def graph_inputs(model):
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def input_shape(value_info, dims):
    shape = []
    for d in value_info.type.tensor_type.shape.dim:
        if d.HasField("dim_value"):
            shape.append(d.dim_value)
        elif d.dim_param in dims:
            shape.append(dims[d.dim_param])
        else:
            raise SystemExit(f"inputs: no value for dimension '{d.dim_param}' of input {value_info.name}")
    return shape


def make_input(model_name, value_info, shape, dims, rs, vocab, pad=0):
    import numpy as np
    from onnx import TensorProto

    name, dtype = value_info.name, value_info.type.tensor_type.elem_type
    if dtype == TensorProto.FLOAT:
        return rs.uniform(-1.0, 1.0, size=shape).astype(np.float32)
    if dtype != TensorProto.INT64:
        raise SystemExit(f"inputs: {model_name}.{name}: unexpected element type {dtype}")
    if name == "input_ids":
        return rs.randint(0, vocab, size=shape).astype(np.int64)
    if name == "position_ids":
        past = dims.get("past_seq", 0)
        return np.broadcast_to(np.arange(past, past + shape[1], dtype=np.int64), shape).copy()
    if name == "attention_mask":
        mask = np.ones(shape, dtype=np.int64)
        padded = int(shape[-1] * pad)  # rows after the first end in this many padded positions
        if padded:
            mask[1:, shape[-1] - padded:] = 0
        return mask
    if name == "token_type_ids":
        t = np.zeros(shape, dtype=np.int64)
        t[:, shape[1] // 2:] = 1
        return t
    raise SystemExit(f"inputs: {model_name}.{name}: no rule for this int64 input")


def make_inputs(size, profile, root, force=False, names=None):
    """names: only the cases of these models (default: every case)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    for name in [c for c in CASE_NAMES if names is None or case_model(c) in names]:
        model_path = os.path.join(root, size, case_model(name) + ".onnx")
        out_dir = os.path.join(root, size, "inputs", profile, name)
        dims = PROFILES[profile][name]
        stamp = os.path.join(out_dir, "dims.json")
        if not force and os.path.exists(stamp) and json.load(open(stamp)) == dims:
            continue
        m = onnx.load(model_path, load_external_data=False)
        os.makedirs(out_dir, exist_ok=True)
        for old in glob.glob(os.path.join(out_dir, "output_*.pb")):  # reference outputs of the inputs replaced
            os.remove(old)
        rs = np.random.RandomState(zlib.crc32((profile + "/" + name).encode()) & 0x7FFFFFFF)
        for k, vi in enumerate(graph_inputs(m)):
            arr = make_input(case_model(name), vi, input_shape(vi, dims), dims, rs,
                             model_config(case_model(name), size).get("vocab"), PADDING.get(name, 0))
            with open(os.path.join(out_dir, f"input_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(arr, vi.name).SerializeToString())
        with open(stamp, "w") as f:
            json.dump(dims, f, sort_keys=True)
        print(f"inputs: {size}/{profile}/{name}: {dims}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=["export", "inflate", "inputs", "all"])
    ap.add_argument("--size", choices=sorted(SIZES), default="tiny")
    ap.add_argument("--profile", choices=sorted(PROFILES), default="swiftshader")
    ap.add_argument("--root", default=DEFAULT_ROOT, help="models folder (default bench/models)")
    ap.add_argument("--force", action="store_true", help="redo even when up to date")
    ap.add_argument("--models", help="comma-separated models for export and inflate (default: bench/compare's, "
                    + ",".join(MODEL_NAMES) + "; also known: llama_kv)")
    a = ap.parse_args()
    names = [n for n in a.models.split(",") if n] if a.models else None
    for n in names or []:
        if n not in ALL_MODELS:
            ap.error(f"unknown model {n!r}; known: {', '.join(ALL_MODELS)}")
    if a.step in ("export", "all"):
        export(a.size, a.root, a.force, names)
    if a.step in ("inflate", "all"):
        inflate(a.size, a.root, a.force, names)
    if a.step in ("inputs", "all"):
        make_inputs(a.size, a.profile, a.root, a.force, names)


if __name__ == "__main__":
    main()
