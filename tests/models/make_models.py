#!/usr/bin/python3
"""Create onnxgpu's own test models with reference outputs.

Usage:  /usr/bin/python3 tests/models/make_models.py OUT_DIR [NAME ...]

Writes, deterministically (fixed seeds), one folder per model in the ONNX
backend-test layout:

    OUT_DIR/<name>/model.onnx
    OUT_DIR/<name>/test_data_set_<k>/input_<i>.pb, output_<j>.pb

Each .pb is a TensorProto named after the graph input/output, in graph order.
The references are computed by torch (torch models) or numpy (hand-built
models), never by onnxgpu. The INT64 references are checked a second time
with plain Python integers. Every model passes onnx.checker (full_check) and
strict shape inference, and the inferred output dtypes/ranks are checked
against the references.

Needs Debian's python (/usr/bin/python3: onnx 1.12, numpy, torch 1.13).
"""

import io
import math
import os
import shutil
import struct
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
I64_MIN = -(2 ** 63)
I64_MAX = 2 ** 63 - 1


# ----------------------------------------------------------------------------
# common helpers
# ----------------------------------------------------------------------------

def check_model(model):
    """onnx.checker + strict shape inference; returns the inferred model."""
    onnx.checker.check_model(model, full_check=True)
    return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)


def _check_against_inferred(inferred, outputs):
    """Inferred output element types and ranks must match the references."""
    for vi, arr in zip(inferred.graph.output, outputs):
        tt = vi.type.tensor_type
        want = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[tt.elem_type]
        assert arr.dtype == want, (vi.name, arr.dtype, want)
        if tt.HasField("shape"):
            dims = tt.shape.dim
            assert len(dims) == arr.ndim, (vi.name, len(dims), arr.shape)
            for d, n in zip(dims, arr.shape):
                if d.HasField("dim_value"):
                    assert d.dim_value == n, (vi.name, d.dim_value, arr.shape)


def save_case(out_dir, name, model, datasets):
    """datasets: list of (inputs, outputs), lists of numpy arrays in graph order."""
    inferred = check_model(model)
    in_names = [i.name for i in model.graph.input
                if i.name not in {t.name for t in model.graph.initializer}]
    out_names = [o.name for o in model.graph.output]
    d = os.path.join(out_dir, name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    for k, (ins, outs) in enumerate(datasets):
        assert len(ins) == len(in_names) and len(outs) == len(out_names), name
        _check_against_inferred(inferred, outs)
        dd = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(dd)
        for prefix, names, arrs in (("input", in_names, ins), ("output", out_names, outs)):
            for i, (n, a) in enumerate(zip(names, arrs)):
                t = numpy_helper.from_array(np.array(a, order="C"), n)  # (ascontiguousarray makes 0-d arrays 1-d)
                with open(os.path.join(dd, "%s_%d.pb" % (prefix, i)), "wb") as f:
                    f.write(t.SerializeToString())


def make_model(nodes, inputs, outputs, initializers, name):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=initializers)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="onnxgpu-tests")
    m.ir_version = 8
    return m


def i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def vinfo(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


# ----------------------------------------------------------------------------
# torch models
# ----------------------------------------------------------------------------

def torch_export(module, args, input_names, output_names, dynamic_axes, keep_batchnorm=False):
    import torch
    import warnings
    buf = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")   # tracer/constant-folding advice, not errors
        torch.onnx.export(module, args, buf, opset_version=OPSET, do_constant_folding=True,
                          input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic_axes,
                          # EVAL folds BatchNorm into the preceding Conv; PRESERVE on a module
                          # in eval mode keeps an inference-mode BatchNormalization node.
                          training=(torch.onnx.TrainingMode.PRESERVE if keep_batchnorm
                                    else torch.onnx.TrainingMode.EVAL))
    return onnx.load_from_string(buf.getvalue())


def torch_run(module, arrays):
    import torch
    with torch.no_grad():
        out = module(*[torch.from_numpy(a) for a in arrays])
    if not isinstance(out, (tuple, list)):
        out = (out,)
    return [o.detach().numpy().copy() for o in out]


def _randomize(module, gen, std=0.2):
    """Non-trivial deterministic weights (LayerNorm/BatchNorm affine near 1/0)."""
    import torch
    with torch.no_grad():
        for pname, p in module.named_parameters():
            if p.dim() == 1 and ("ln" in pname or "norm" in pname or "bn" in pname):
                if pname.endswith("weight"):
                    p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
                else:
                    p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(std * torch.randn(p.shape, generator=gen))


def _ids(rng, shape, vocab):
    ids = rng.integers(0, vocab, size=shape, dtype=np.int64)
    ids.flat[0] = 0            # the whole vocab range, both ends
    ids.flat[-1] = vocab - 1
    return ids


def build_gpt2_tiny():
    import torch
    from torch import nn

    V, P, C, H, L = 100, 32, 64, 4, 2

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(C, 3 * C)
            self.c_proj = nn.Linear(C, C)

        def forward(self, x):
            B, T, _ = x.size()
            q, k, v = self.c_attn(x).split(C, dim=2)
            q = q.view(B, T, H, C // H).transpose(1, 2)
            k = k.view(B, T, H, C // H).transpose(1, 2)
            v = v.view(B, T, H, C // H).transpose(1, 2)
            att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
            # causal mask built in-graph from the sequence length
            causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
            att = att.masked_fill(causal, torch.finfo(torch.float32).min)
            att = torch.softmax(att, dim=-1)
            y = torch.matmul(att, v).transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(C)
            self.attn = Attention()
            self.ln_2 = nn.LayerNorm(C)
            self.fc = nn.Linear(C, 4 * C)
            self.act = nn.GELU(approximate="tanh")
            self.proj = nn.Linear(4 * C, C)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.proj(self.act(self.fc(self.ln_2(x))))

    class GPT2(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(V, C)
            self.wpe = nn.Embedding(P, C)
            self.h = nn.ModuleList([Block() for _ in range(L)])
            self.ln_f = nn.LayerNorm(C)

        def forward(self, input_ids):
            T = input_ids.size(1)
            pos = torch.arange(0, T, dtype=torch.long).unsqueeze(0)
            x = self.wte(input_ids) + self.wpe(pos)
            for blk in self.h:
                x = blk(x)
            return torch.matmul(self.ln_f(x), self.wte.weight.t())   # tied LM head

    gen = torch.Generator().manual_seed(1234)
    m = GPT2().eval()
    _randomize(m, gen)
    rng = np.random.default_rng(1)
    model = torch_export(m, (torch.from_numpy(_ids(rng, (2, 5), V)),), ["input_ids"], ["logits"],
                         {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}})
    datasets = []
    for shape in ((1, 7), (2, 16)):
        ids = _ids(rng, shape, V)
        datasets.append(([ids], torch_run(m, [ids])))
    return model, datasets


def build_bert_tiny():
    import torch
    from torch import nn

    V, P, C, H, L, I = 120, 64, 64, 4, 2, 256

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.query = nn.Linear(C, C)
            self.key = nn.Linear(C, C)
            self.value = nn.Linear(C, C)
            self.attn_out = nn.Linear(C, C)
            self.attn_norm = nn.LayerNorm(C, eps=1e-12)
            self.inter = nn.Linear(C, I)
            self.act = nn.GELU()   # erf
            self.out = nn.Linear(I, C)
            self.out_norm = nn.LayerNorm(C, eps=1e-12)

        def heads(self, t):
            B, T, _ = t.size()
            return t.view(B, T, H, C // H).permute(0, 2, 1, 3)

        def forward(self, x, ext_mask):
            B, T, _ = x.size()
            q, k, v = self.heads(self.query(x)), self.heads(self.key(x)), self.heads(self.value(x))
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(C // H)
            probs = torch.softmax(scores + ext_mask, dim=-1)
            ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous().view(B, T, C)
            x = self.attn_norm(x + self.attn_out(ctx))
            return self.out_norm(x + self.out(self.act(self.inter(x))))

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.word = nn.Embedding(V, C)
            self.position = nn.Embedding(P, C)
            self.token_type = nn.Embedding(2, C)
            self.emb_norm = nn.LayerNorm(C, eps=1e-12)
            self.layers = nn.ModuleList([Layer() for _ in range(L)])
            self.pool = nn.Linear(C, C)

        def forward(self, input_ids, attention_mask, token_type_ids):
            T = input_ids.size(1)
            pos = torch.arange(T, dtype=torch.long).unsqueeze(0)
            x = self.word(input_ids) + self.position(pos) + self.token_type(token_type_ids)
            x = self.emb_norm(x)
            ext = attention_mask[:, None, None, :].to(torch.float32)
            ext = (1.0 - ext) * -10000.0
            for layer in self.layers:
                x = layer(x, ext)
            pooled = torch.tanh(self.pool(x[:, 0]))
            return x, pooled

    gen = torch.Generator().manual_seed(4321)
    m = Bert().eval()
    _randomize(m, gen)
    rng = np.random.default_rng(2)

    def inputs(B, T, pads):
        ids = _ids(rng, (B, T), V)
        mask = np.ones((B, T), np.int64)
        for b, (lo, hi) in enumerate(pads):
            mask[b, lo:hi] = 0
        tt = np.zeros((B, T), np.int64)
        tt[:, T // 2:] = 1
        return [ids, mask, tt]

    dummy = inputs(2, 6, [(4, 6), (6, 6)])
    dyn = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
           "token_type_ids": {0: "batch", 1: "seq"},
           "last_hidden_state": {0: "batch", 1: "seq"}, "pooler_output": {0: "batch"}}
    model = torch_export(m, tuple(torch.from_numpy(a) for a in dummy),
                         ["input_ids", "attention_mask", "token_type_ids"],
                         ["last_hidden_state", "pooler_output"], dyn)
    datasets = []
    for B, T, pads in ((2, 8, [(8, 8), (5, 8)]), (3, 13, [(10, 13), (13, 13), (1, 4)])):
        ins = inputs(B, T, pads)
        datasets.append((ins, torch_run(m, ins)))
    return model, datasets


def build_cnn_tiny():
    import torch
    from torch import nn

    m = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
    gen = torch.Generator().manual_seed(99)
    _randomize(m, gen)
    with torch.no_grad():   # non-trivial running statistics
        bn = m[1]
        bn.running_mean.copy_(0.3 * torch.randn(8, generator=gen))
        bn.running_var.copy_(0.5 + torch.rand(8, generator=gen))
    m.eval()
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 32, 32)).astype(np.float32)
    model = torch_export(m, (torch.from_numpy(x),), ["input"], ["logits"],
                         {"input": {0: "batch"}, "logits": {0: "batch"}}, keep_batchnorm=True)
    bn_nodes = [n for n in model.graph.node if n.op_type == "BatchNormalization"]
    assert len(bn_nodes) == 1 and all(a.i == 0 for a in bn_nodes[0].attribute
                                      if a.name == "training_mode"), bn_nodes
    datasets = []
    for B in (1, 3):
        x = rng.standard_normal((B, 3, 32, 32)).astype(np.float32)
        datasets.append(([x], torch_run(m, [x])))
    return model, datasets


# ----------------------------------------------------------------------------
# decode-step models with a KV cache (torch export)
# ----------------------------------------------------------------------------
# The interface both share (the one ort_peer's --decode-loop and `onnxgpu decode` drive):
#   inputs  input_ids int64 [batch, seq], position_ids int64 [batch, seq],
#           past_key_<i>, past_value_<i> f32 [batch, kv_heads, past_seq, head_dim]
#   outputs logits f32 [batch, seq, vocab],
#           present_key_<i>, present_value_<i> = Concat(past, new, axis 2) [batch, kv_heads, total_seq, head_dim]
# past_seq may be 0 (a prefill): the graph is exported once for any past length.

KV_POSITIONS = 128   # positions the models know (a 40-step loop after a prompt fits)


def _kv_io(layers):
    in_names, out_names = ["input_ids", "position_ids"], ["logits"]
    axes = {"input_ids": {0: "batch", 1: "seq"}, "position_ids": {0: "batch", 1: "seq"},
            "logits": {0: "batch", 1: "seq"}}
    for i in range(layers):
        for kv in ("key", "value"):
            in_names.append("past_%s_%d" % (kv, i))
            out_names.append("present_%s_%d" % (kv, i))
            axes["past_%s_%d" % (kv, i)] = {0: "batch", 2: "past_seq"}
            axes["present_%s_%d" % (kv, i)] = {0: "batch", 2: "total_seq"}
    return in_names, out_names, axes


def _kv_datasets(m, rng, V, layers, kv_heads, head_dim):
    """Three steps, references from torch:
       0: a prefill, batch 1: past 0 + a 7-token prompt at positions 0..6;
       1: a decode step, batch 1: the past is the presents of torch's own 5-token prefill, 1 token at 5;
       2: batch 2: a random past of 3 + 2 tokens at positions 3, 4 (the causal mask inside the new tokens)."""
    def run(ids, past):
        B, T = ids.shape
        P = past[0].shape[2]
        pos = np.broadcast_to(np.arange(P, P + T, dtype=np.int64), (B, T)).copy()
        ins = [ids, pos] + list(past)
        return ins, torch_run(m, ins)

    def zeros_past(B, P):
        return [np.zeros((B, kv_heads, P, head_dim), np.float32) for _ in range(2 * layers)]

    datasets = [run(_ids(rng, (1, 7), V), zeros_past(1, 0))]
    _, prefill_out = run(_ids(rng, (1, 5), V), zeros_past(1, 0))
    datasets.append(run(_ids(rng, (1, 1), V), prefill_out[1:]))
    rand_past = [rng.standard_normal((2, kv_heads, 3, head_dim)).astype(np.float32) for _ in range(2 * layers)]
    datasets.append(run(_ids(rng, (2, 2), V), rand_past))
    for ins, outs in datasets:   # presents = Concat(past, new) along the sequence axis
        for k in range(2 * layers):
            assert np.array_equal(outs[1 + k][:, :, :ins[2 + k].shape[2]], ins[2 + k])
    return datasets


def _kv_export(m, V, layers, kv_heads, head_dim):
    import torch
    in_names, out_names, axes = _kv_io(layers)
    # The dummy step avoids sizes 0 and 1 so that no dimension is specialised: batch 2, past 3, seq 2.
    g = torch.Generator().manual_seed(7)
    ids = torch.randint(0, V, (2, 2), generator=g)
    pos = torch.arange(3, 5).unsqueeze(0).expand(2, 2).contiguous()
    past = [torch.randn(2, kv_heads, 3, head_dim, generator=g) for _ in range(2 * layers)]
    return torch_export(m, (ids, pos, *past), in_names, out_names, axes)


def build_gpt2_kv_tiny():
    """GPT-2 decode step. The causal mask is HF GPT-2's: a constant lower-triangular bool table
    [1, 1, 128, 128] sliced at [total - seq : total, :total], total = past_seq + seq read from the past's
    Shape, so the shape values flow Shape -> Gather -> Add/Sub -> Slice -> Where."""
    import torch
    from torch import nn

    V, C, H, L = 100, 32, 2, 2
    D = C // H

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(C, 3 * C)
            self.c_proj = nn.Linear(C, C)
            self.register_buffer("bias", torch.tril(torch.ones(KV_POSITIONS, KV_POSITIONS, dtype=torch.bool))
                                 .view(1, 1, KV_POSITIONS, KV_POSITIONS), persistent=False)

        def forward(self, x, past_k, past_v):
            B, T, _ = x.size()
            q, k, v = self.c_attn(x).split(C, dim=2)
            q = q.view(B, T, H, D).transpose(1, 2)
            k = torch.cat([past_k, k.view(B, T, H, D).transpose(1, 2)], dim=2)
            v = torch.cat([past_v, v.view(B, T, H, D).transpose(1, 2)], dim=2)
            S = k.size(2)
            att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D)
            causal = self.bias[:, :, S - T:S, :S]
            att = torch.where(causal, att, torch.tensor(torch.finfo(torch.float32).min))
            att = torch.softmax(att, dim=-1)
            y = torch.matmul(att, v).transpose(1, 2).reshape(B, T, C)
            return self.c_proj(y), k, v

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(C)
            self.attn = Attention()
            self.ln_2 = nn.LayerNorm(C)
            self.fc = nn.Linear(C, 4 * C)
            self.act = nn.GELU(approximate="tanh")
            self.proj = nn.Linear(4 * C, C)

        def forward(self, x, past_k, past_v):
            a, k, v = self.attn(self.ln_1(x), past_k, past_v)
            x = x + a
            return x + self.proj(self.act(self.fc(self.ln_2(x)))), k, v

    class GPT2(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(V, C)
            self.wpe = nn.Embedding(KV_POSITIONS, C)
            self.h = nn.ModuleList([Block() for _ in range(L)])
            self.ln_f = nn.LayerNorm(C)

        def forward(self, input_ids, position_ids, *past):
            x = self.wte(input_ids) + self.wpe(position_ids)
            presents = []
            for i, blk in enumerate(self.h):
                x, k, v = blk(x, past[2 * i], past[2 * i + 1])
                presents += [k, v]
            return (torch.matmul(self.ln_f(x), self.wte.weight.t()), *presents)   # tied LM head

    gen = torch.Generator().manual_seed(2024)
    m = GPT2().eval()
    _randomize(m, gen)
    model = _kv_export(m, V, L, H, D)
    assert any(n.op_type == "Slice" for n in model.graph.node), "gpt2_kv_tiny: the mask Slice is missing"
    return model, _kv_datasets(m, np.random.default_rng(11), V, L, H, D)


def build_llama_kv_tiny():
    """Llama-style decode step in plain ONNX ops: RMSNorm (Pow, ReduceMean, Add, Sqrt, Div, Mul), rotary
    position embedding from position_ids (Cast, Mul by inv_freq, Concat, Cos, Sin; rotate_half by Slice, Neg,
    Concat), grouped-query attention (4 query heads share 2 K/V heads: Unsqueeze, Expand, Reshape), a causal
    mask offset by the past (Range from Shape, Greater, Where), SiLU MLP (Sigmoid, Mul: gate * up), no biases,
    an untied LM head. The presents hold the 2 K/V heads (before the repeat), as Llama's cache does."""
    import torch
    from torch import nn

    V, C, H, KVH, L, I = 100, 32, 4, 2, 2, 64
    D, REP, EPS = C // H, H // KVH, 1e-5

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(C))

        def forward(self, x):
            var = x.pow(2).mean(-1, keepdim=True)
            return self.weight * (x / torch.sqrt(var + EPS))

    def rotate_half(x):
        return torch.cat([-x[..., D // 2:], x[..., :D // 2]], dim=-1)

    def repeat_kv(x):
        B, _, S, _ = x.size()
        return x[:, :, None, :, :].expand(B, KVH, REP, S, D).reshape(B, H, S, D)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = nn.Linear(C, H * D, bias=False)
            self.k_proj = nn.Linear(C, KVH * D, bias=False)
            self.v_proj = nn.Linear(C, KVH * D, bias=False)
            self.o_proj = nn.Linear(H * D, C, bias=False)

        def forward(self, x, cos, sin, past_k, past_v):
            B, T, _ = x.size()
            q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)
            k = self.k_proj(x).view(B, T, KVH, D).transpose(1, 2)
            v = self.v_proj(x).view(B, T, KVH, D).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            k = torch.cat([past_k, k], dim=2)
            v = torch.cat([past_v, v], dim=2)
            S = k.size(2)
            att = torch.matmul(q, repeat_kv(k).transpose(-1, -2)) / math.sqrt(D)
            q_pos = torch.arange(T) + (S - T)
            future = torch.arange(S).unsqueeze(0) > q_pos.unsqueeze(1)   # causal, offset by the past
            att = att.masked_fill(future, torch.finfo(torch.float32).min)
            att = torch.softmax(att, dim=-1)
            y = torch.matmul(att, repeat_kv(v)).transpose(1, 2).reshape(B, T, C)
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
            return x + self.down_proj(nn.functional.silu(self.gate_proj(h)) * self.up_proj(h)), k, v

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(V, C)
            self.layers = nn.ModuleList([Block() for _ in range(L)])
            self.norm = RMSNorm()
            self.lm_head = nn.Linear(C, V, bias=False)
            self.register_buffer("inv_freq", 1.0 / (10000.0 ** (torch.arange(0, D, 2, dtype=torch.float32) / D)),
                                 persistent=False)

        def forward(self, input_ids, position_ids, *past):
            x = self.embed_tokens(input_ids)
            freqs = position_ids[:, :, None].to(torch.float32) * self.inv_freq[None, None, :]
            emb = torch.cat([freqs, freqs], dim=-1)
            cos, sin = emb.cos()[:, None], emb.sin()[:, None]   # [batch, 1, seq, head_dim]
            presents = []
            for i, blk in enumerate(self.layers):
                x, k, v = blk(x, cos, sin, past[2 * i], past[2 * i + 1])
                presents += [k, v]
            return (self.lm_head(self.norm(x)), *presents)

    gen = torch.Generator().manual_seed(4242)
    m = Llama().eval()
    _randomize(m, gen)
    model = _kv_export(m, V, L, KVH, D)
    ops = {n.op_type for n in model.graph.node}
    for op in ("Pow", "ReduceMean", "Sqrt", "Cos", "Sin", "Neg", "Expand", "Sigmoid"):
        assert op in ops, "llama_kv_tiny: no %s node in the export" % op
    return model, _kv_datasets(m, np.random.default_rng(12), V, L, KVH, D)


# ----------------------------------------------------------------------------
# hand-built models
# ----------------------------------------------------------------------------

def build_mlp():
    rng = np.random.default_rng(6)
    w1 = (rng.standard_normal((16, 32)) * 0.3).astype(np.float32)
    b1 = (rng.standard_normal(32) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((32, 8)) * 0.3).astype(np.float32)
    b2 = (rng.standard_normal(8) * 0.1).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"]),
        helper.make_node("Add", ["h1", "b1"], ["a1"]),
        helper.make_node("Relu", ["a1"], ["r1"]),
        helper.make_node("MatMul", ["r1", "w2"], ["h2"]),
        helper.make_node("Add", ["h2", "b2"], ["a2"]),
        helper.make_node("Relu", ["a2"], ["y"]),
    ]
    inits = [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))]
    model = make_model(nodes, [vinfo("x", TensorProto.FLOAT, ["batch", 16])],
                       [vinfo("y", TensorProto.FLOAT, ["batch", 8])], inits, "mlp")
    datasets = []
    for B in (1, 5):
        x = rng.standard_normal((B, 16)).astype(np.float32)
        h = np.maximum(x.astype(np.float64) @ w1 + b1, 0)
        y = np.maximum(h @ w2 + b2, 0).astype(np.float32)   # float64 accumulation
        datasets.append(([x], [y]))
    return model, datasets


def _tdiv(a, b):
    """Python-int integer division truncating toward zero."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _in_range(v):
    assert I64_MIN <= v <= I64_MAX, v
    return v


def build_int64_arith():
    A = [[3000000000, -3000000001, 2 ** 40 + 3, 2 ** 62],
         [-7, 7, -(2 ** 62), 4294967296 + 5],
         [0, -1, 123456789012, -(2 ** 33)]]
    B = [[7, -3, -1000003, -2],
         [2, -2, 1, -1000],
         [9, 4, -1, 2 ** 20 + 1]]
    # comparison partner: equal or off by one at magnitudes float32 cannot tell apart
    Cc = [[3000000001, -3000000001, 2 ** 40 + 2, 2 ** 62],
          [-7, 8, -(2 ** 62) + 1, 4294967296 + 4],
          [0, -2, 123456789012, -(2 ** 33) + 1]]
    ROW = [1, -1, 2 ** 33, -(2 ** 33)]
    SMALL = [-(2 ** 31), 2 ** 31 - 1, -5, 0]
    a, b, c = (np.array(v, np.int64) for v in (A, B, Cc))
    row, small = np.array(ROW, np.int64), np.array(SMALL, np.int64)

    # --- numpy references --------------------------------------------------
    np_fmod = np.fmod(a, b)                       # sign of dividend, exact for ints
    outs = {
        "add": a + b,
        "sub": a - b,
        "mul": a * b,
        "div": (a - np_fmod) // b,                # exact: truncation toward zero
        "mod": np.mod(a, b),                      # fmod=0: sign of divisor
        "mod_fmod": np_fmod,                      # fmod=1: sign of dividend
        "neg": -a,
        "abs": np.abs(a),
        "less": (a < c).astype(np.int64),
        "greater": (a > c).astype(np.int64),
        "equal": (a == c).astype(np.int64),
        "max": np.maximum(a, c),
        "min": np.minimum(a, c),
        "add_bcast": a + row,
        "reduce_sum": a.sum(axis=1),
        "reduce_sum_keep": a.sum(axis=0, keepdims=True),
        "cumsum": np.cumsum(a, axis=1),
        "cumsum_rev_excl": None,                  # filled below
        "argmax": np.argmax(a, axis=1).astype(np.int64),
        "argmin_keep": np.argmin(c, axis=0)[None, :].astype(np.int64),
        "cast_f32": a.astype(np.float32),
        "cast_f64": a.astype(np.float64),
        "cast_i32": small.astype(np.int32),
    }
    # reverse exclusive cumsum along axis 1
    rev = np.cumsum(a[:, ::-1], axis=1)[:, ::-1]
    outs["cumsum_rev_excl"] = rev - a

    # --- second computation with Python ints --------------------------------
    def elem(f, x, y):
        return [[_in_range(f(p, q)) for p, q in zip(rx, ry)] for rx, ry in zip(x, y)]
    py = {
        "add": elem(lambda p, q: p + q, A, B),
        "sub": elem(lambda p, q: p - q, A, B),
        "mul": elem(lambda p, q: p * q, A, B),
        "div": elem(_tdiv, A, B),
        "mod": elem(lambda p, q: p % q, A, B),
        "mod_fmod": elem(lambda p, q: p - q * _tdiv(p, q), A, B),
        "neg": elem(lambda p, q: -p, A, A),
        "abs": elem(lambda p, q: abs(p), A, A),
        "less": elem(lambda p, q: int(p < q), A, Cc),
        "greater": elem(lambda p, q: int(p > q), A, Cc),
        "equal": elem(lambda p, q: int(p == q), A, Cc),
        "max": elem(max, A, Cc),
        "min": elem(min, A, Cc),
        "add_bcast": elem(lambda p, q: p + q, A, [ROW] * 3),
        "reduce_sum": [_in_range(sum(r)) for r in A],
        "reduce_sum_keep": [[_in_range(sum(col)) for col in zip(*A)]],
        "cumsum": [[_in_range(sum(r[:j + 1])) for j in range(4)] for r in A],
        "cumsum_rev_excl": [[_in_range(sum(r[j + 1:])) for j in range(4)] for r in A],
        "argmax": [r.index(max(r)) for r in A],
        "argmin_keep": [[col.index(min(col)) for col in map(list, zip(*Cc))]],
        "cast_f32": [[struct.unpack("f", struct.pack("f", float(v)))[0] for v in r] for r in A],
        "cast_f64": [[float(v) for v in r] for r in A],
        "cast_i32": SMALL,
    }
    for k, v in py.items():
        assert np.array_equal(outs[k], np.array(v, dtype=outs[k].dtype)), k
    assert all(abs(v) < 2 ** 53 or v == 2 ** 62 or v == -(2 ** 62) for r in A for v in r)

    # --- graph ---------------------------------------------------------------
    N = helper.make_node
    nodes = [
        N("Add", ["a", "b"], ["add"]),
        N("Sub", ["a", "b"], ["sub"]),
        N("Mul", ["a", "b"], ["mul"]),
        N("Div", ["a", "b"], ["div"]),
        N("Mod", ["a", "b"], ["mod"], fmod=0),
        N("Mod", ["a", "b"], ["mod_fmod"], fmod=1),
        N("Neg", ["a"], ["neg"]),
        N("Abs", ["a"], ["abs"]),
        N("Less", ["a", "c"], ["less_b"]), N("Cast", ["less_b"], ["less"], to=TensorProto.INT64),
        N("Greater", ["a", "c"], ["greater_b"]),
        N("Cast", ["greater_b"], ["greater"], to=TensorProto.INT64),
        N("Equal", ["a", "c"], ["equal_b"]), N("Cast", ["equal_b"], ["equal"], to=TensorProto.INT64),
        N("Max", ["a", "c"], ["max"]),
        N("Min", ["a", "c"], ["min"]),
        N("Add", ["a", "row"], ["add_bcast"]),
        N("ReduceSum", ["a", "axis1"], ["reduce_sum"], keepdims=0),
        N("ReduceSum", ["a", "axis0"], ["reduce_sum_keep"], keepdims=1),
        N("CumSum", ["a", "axis1_scalar"], ["cumsum"]),
        N("CumSum", ["a", "axis1_scalar"], ["cumsum_rev_excl"], exclusive=1, reverse=1),
        N("ArgMax", ["a"], ["argmax"], axis=1, keepdims=0),
        N("ArgMin", ["c"], ["argmin_keep"], axis=0, keepdims=1),
        N("Cast", ["a"], ["cast_f32"], to=TensorProto.FLOAT),
        N("Cast", ["a"], ["cast_f64"], to=TensorProto.DOUBLE),
        N("Cast", ["small"], ["cast_i32"], to=TensorProto.INT32),
    ]
    inits = [i64("axis1", [1]), i64("axis0", [0]),
             numpy_helper.from_array(np.array(1, np.int64), "axis1_scalar")]
    I = TensorProto.INT64
    inputs = [vinfo("a", I, [3, 4]), vinfo("b", I, [3, 4]), vinfo("c", I, [3, 4]),
              vinfo("row", I, [4]), vinfo("small", I, [4])]
    names = list(outs.keys())
    elem_of = {np.dtype(np.int64): I, np.dtype(np.float32): TensorProto.FLOAT,
               np.dtype(np.float64): TensorProto.DOUBLE, np.dtype(np.int32): TensorProto.INT32}
    outputs = [vinfo(n, elem_of[outs[n].dtype], list(outs[n].shape)) for n in names]
    model = make_model(nodes, inputs, outputs, inits, "int64_arith")
    return model, [([a, b, c, row, small], [outs[n] for n in names])]


def _onnx_slice_indices(n, start, end, step):
    """ONNX Slice index rule for one axis, in Python ints (spec text)."""
    if start < 0:
        start += n
    if end < 0:
        end += n
    if step > 0:
        start, end = min(max(start, 0), n), min(max(end, 0), n)
    else:
        start, end = min(max(start, 0), n - 1), min(max(end, -1), n - 1)
    return list(range(start, end, step))


def build_int64_sentinels():
    I = TensorProto.INT64
    N = helper.make_node
    BIG = 2 ** 40 + 1
    GIDX0 = [-1, 0, -3, 1]
    GIDX1 = [[-1, -9], [2, -4]]
    nodes = [
        # Slice with INT64 sentinels and negative steps
        N("Slice", ["x1", "s_min", "s_max", "ax0", "one"], ["slice_full"]),
        N("Slice", ["x1", "s_max", "s_min", "ax0", "minus_one"], ["slice_rev"]),
        N("Slice", ["x1", "minus_two", "s_min", "ax0", "minus_three"], ["slice_step"]),
        N("Slice", ["x2", "s2_starts", "s2_ends", "s2_axes", "s2_steps"], ["slice_2d"]),
        # Gather with negative indices
        N("Gather", ["x2", "gidx0"], ["gather_neg0"], axis=0),
        N("Gather", ["x1", "gidx1"], ["gather_neg1"], axis=0),
        N("Gather", ["x2", "gidx_cols"], ["gather_neg_axis1"], axis=-1),
        # Range with runtime start/limit/delta
        N("Range", ["start", "limit", "delta"], ["range"]),
        N("Unsqueeze", ["range", "unsq_axes"], ["range_unsq"]),
        N("Squeeze", ["range_unsq", "minus_one"], ["range_sq"]),
        N("Squeeze", ["range_unsq"], ["range_sq_all"]),
        # shape arithmetic
        N("Shape", ["x2"], ["x2_shape"]),
        N("ConstantOfShape", ["x2_shape"], ["const_of_shape"],
          value=helper.make_tensor("value", I, [1], [BIG])),
        N("Gather", ["x2_shape", "minus_one_scalar"], ["last_dim"], axis=0),
        N("Unsqueeze", ["last_dim", "zero_axis"], ["shape_dim"]),
        N("Slice", ["x2_shape", "zero_axis", "one"], ["first_dim"]),
        N("Concat", ["first_dim", "three"], ["concat_shape"], axis=0),
        N("Expand", ["col", "concat_shape"], ["expand"]),
        N("Expand", ["q", "shape_3_1"], ["expand_q"]),
        N("Where", ["cond", "p", "q"], ["where"]),
    ]
    inits = [
        i64("s_min", [I64_MIN]), i64("s_max", [I64_MAX]), i64("ax0", [0]), i64("one", [1]),
        i64("minus_one", [-1]), i64("minus_two", [-2]), i64("minus_three", [-3]),
        i64("s2_starts", [1, I64_MIN]), i64("s2_ends", [I64_MAX, -1]),
        i64("s2_axes", [0, -1]), i64("s2_steps", [1, 2]),
        i64("gidx0", GIDX0), i64("gidx1", GIDX1), i64("gidx_cols", [-1, -2]),
        i64("unsq_axes", [0, -1]), i64("zero_axis", [0]), i64("three", [3]),
        i64("shape_3_1", [3, 1]),
        numpy_helper.from_array(np.array(-1, np.int64), "minus_one_scalar"),
    ]
    inputs = [vinfo("x1", I, ["L"]), vinfo("x2", I, ["N", "M"]),
              vinfo("start", I, []), vinfo("limit", I, []), vinfo("delta", I, []),
              vinfo("cond", TensorProto.BOOL, [2, 4]), vinfo("p", I, [2, 4]), vinfo("q", I, [4]),
              vinfo("col", I, ["N", 1])]
    out_names = ["slice_full", "slice_rev", "slice_step", "slice_2d", "gather_neg0", "gather_neg1",
                 "gather_neg_axis1", "range", "range_unsq", "range_sq", "range_sq_all",
                 "const_of_shape", "shape_dim", "concat_shape", "expand", "expand_q", "where"]
    ranks = {"slice_full": 1, "slice_rev": 1, "slice_step": 1, "slice_2d": 2, "gather_neg0": 2,
             "gather_neg1": 2, "gather_neg_axis1": 2, "range": 1, "range_unsq": 3, "range_sq": 2,
             "range_sq_all": 1, "const_of_shape": 2, "shape_dim": 1, "concat_shape": 1,
             "expand": 2, "expand_q": 2, "where": 2}
    outputs = [vinfo(n, I, [None] * ranks[n]) for n in out_names]
    model = make_model(nodes, inputs, outputs, inits, "int64_sentinels")

    rng = np.random.default_rng(4)

    def big(shape):
        v = rng.integers(I64_MIN, I64_MAX, size=shape, dtype=np.int64, endpoint=True)
        v.flat[0], v.flat[-1] = I64_MIN, I64_MAX
        return v

    datasets = []
    for L, Nn, M, (start, limit, delta) in (
            (10, 4, 6, (2 ** 33 + 10, 2 ** 33 - 11, -3)),
            (9, 3, 7, (-(2 ** 40), -(2 ** 40) + 2 ** 33, 2 ** 30 + 7))):
        x1, x2, col = big(L), big((Nn, M)), big((Nn, 1))
        cond = rng.integers(0, 2, size=(2, 4)).astype(bool)
        p, q = big((2, 4)), big(4)
        # numpy references
        rng_np = np.arange(start, limit, delta, dtype=np.int64)
        ref = {
            "slice_full": x1[I64_MIN:I64_MAX],
            "slice_rev": x1[::-1],
            "slice_step": x1[-2::-3],
            "slice_2d": x2[1:, 0:-1:2],
            "gather_neg0": x2[np.array(GIDX0)],
            "gather_neg1": x1[np.array(GIDX1)],
            "gather_neg_axis1": x2[:, [-1, -2]],
            "range": rng_np,
            "range_unsq": rng_np[None, :, None],
            "range_sq": rng_np[None, :],
            "range_sq_all": rng_np,
            "const_of_shape": np.full((Nn, M), BIG, np.int64),
            "shape_dim": np.array([M], np.int64),
            "concat_shape": np.array([Nn, 3], np.int64),
            "expand": np.broadcast_to(col, (Nn, 3)),
            "expand_q": np.broadcast_to(q, (3, 4)),
            "where": np.where(cond, p, q),
        }
        # second computation: Python ints and the spec's index rules
        X1, X2 = x1.tolist(), x2.tolist()
        count = max(-((limit - start) // -delta), 0)          # ceil((limit-start)/delta)
        rng_py = [start + i * delta for i in range(count)]
        assert rng_py == list(range(start, limit, delta))
        cols = _onnx_slice_indices(M, I64_MIN, -1, 2)
        py = {
            "slice_full": [X1[i] for i in _onnx_slice_indices(L, I64_MIN, I64_MAX, 1)],
            "slice_rev": [X1[i] for i in _onnx_slice_indices(L, I64_MAX, I64_MIN, -1)],
            "slice_step": [X1[i] for i in _onnx_slice_indices(L, -2, I64_MIN, -3)],
            "slice_2d": [[X2[r][cc] for cc in cols] for r in _onnx_slice_indices(Nn, 1, I64_MAX, 1)],
            "gather_neg0": [X2[i + Nn if i < 0 else i] for i in GIDX0],
            "gather_neg1": [[X1[i + L if i < 0 else i] for i in r] for r in GIDX1],
            "gather_neg_axis1": [[r[M - 1], r[M - 2]] for r in X2],
            "range": rng_py,
            "range_unsq": [[[v] for v in rng_py]],
            "range_sq": [rng_py],
            "range_sq_all": rng_py,
            "const_of_shape": [[BIG] * M for _ in range(Nn)],
            "shape_dim": [M],
            "concat_shape": [Nn, 3],
            "expand": [[r[0]] * 3 for r in col.tolist()],
            "expand_q": [q.tolist()] * 3,
            "where": [[pv if cv else qv for cv, pv, qv in zip(cr, pr, q.tolist())]
                      for cr, pr in zip(cond.tolist(), p.tolist())],
        }
        for k in out_names:
            assert np.array_equal(ref[k], np.array(py[k], np.int64).reshape(ref[k].shape)), k
            assert ref[k].dtype == np.int64 and np.array(py[k]).size == ref[k].size, k
        assert len(rng_py) > 1
        scalar = lambda v: np.array(v, np.int64)
        datasets.append(([x1, x2, scalar(start), scalar(limit), scalar(delta), cond, p, q, col],
                         [np.ascontiguousarray(ref[k]) for k in out_names]))
    return model, datasets


def build_int64_embedding():
    V, P, D = 50, 16, 32
    rng = np.random.default_rng(5)
    tok = rng.standard_normal((V, D)).astype(np.float32)
    pos = rng.standard_normal((P, D)).astype(np.float32)
    N = helper.make_node
    nodes = [
        N("Gather", ["tok_emb", "input_ids"], ["tok"], axis=0),
        N("Shape", ["input_ids"], ["ids_shape"]),
        N("Gather", ["ids_shape", "one_scalar"], ["seq_len"], axis=0),
        N("Range", ["zero_scalar", "seq_len", "one_scalar"], ["positions"]),
        N("Unsqueeze", ["positions", "axes0"], ["position_ids"]),
        N("Gather", ["pos_emb", "position_ids"], ["posv"], axis=0),
        N("Add", ["tok", "posv"], ["embeddings"]),
    ]
    inits = [numpy_helper.from_array(tok, "tok_emb"), numpy_helper.from_array(pos, "pos_emb"),
             numpy_helper.from_array(np.array(0, np.int64), "zero_scalar"),
             numpy_helper.from_array(np.array(1, np.int64), "one_scalar"), i64("axes0", [0])]
    model = make_model(nodes, [vinfo("input_ids", TensorProto.INT64, ["batch", "seq"])],
                       [vinfo("embeddings", TensorProto.FLOAT, ["batch", "seq", D])],
                       inits, "int64_embedding")
    datasets = []
    for shape in ((1, 5), (3, 12)):
        ids = _ids(rng, shape, V)
        ref = tok[ids] + pos[np.arange(shape[1])][None]
        py = [[[tok[i][d] + pos[t][d] for d in range(D)] for t, i in enumerate(r)]
              for r in ids.tolist()]
        assert np.array_equal(ref, np.array(py, np.float32))
        datasets.append(([ids], [ref]))
    return model, datasets


BUILDERS = {
    "gpt2_tiny": build_gpt2_tiny,
    "bert_tiny": build_bert_tiny,
    "int64_arith": build_int64_arith,
    "int64_sentinels": build_int64_sentinels,
    "int64_embedding": build_int64_embedding,
    "mlp": build_mlp,
    "cnn_tiny": build_cnn_tiny,
    "gpt2_kv_tiny": build_gpt2_kv_tiny,
    "llama_kv_tiny": build_llama_kv_tiny,
}


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    out_dir = argv[1]
    names = argv[2:] or list(BUILDERS)
    unknown = [n for n in names if n not in BUILDERS]
    if unknown:
        print("unknown model(s): %s; known: %s" % (", ".join(unknown), ", ".join(BUILDERS)))
        return 2
    try:
        import torch
        torch.set_num_threads(1)
        torch.manual_seed(0)
    except ImportError:
        pass
    os.makedirs(out_dir, exist_ok=True)
    for n in names:
        t0 = time.time()
        model, datasets = BUILDERS[n]()
        save_case(out_dir, n, model, datasets)
        ops = sorted({node.op_type for node in model.graph.node})
        print("%-16s %5.2fs  %d data sets  ops: %s" % (n, time.time() - t0, len(datasets), " ".join(ops)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
