#!/usr/bin/python3
"""Writes the ONNX Runtime contrib-op test cases in tests/data/contrib/, and those of ai.onnx.ml's numeric ops
(CPU kernels only) in tests/data/ml/ (ONNX backend-test layout):

    <case>/model.onnx                        a one-node model (qoperator_cnn, ort_optimized_bert: a small model
                                             as ONNX Runtime's quantizer or optimizer writes one)
    <case>/test_data_set_0/input_<i>.pb      inputs (numpy, seeded: the same bytes on every run)
    <case>/test_data_set_0/output_<i>.pb     ONNX Runtime's outputs for them

    tests/data/contrib/make_cases.py [--peer PATH/ort_peer] [--only REGEX]

The outputs are ONNX Runtime 1.30's, computed by ort_peer (/work/shared/peer: the release's
libonnxruntime.so.1 through its C API): its CPU EP, the judge, for every op it has; for BiasAdd, which
ONNX Runtime implements only on its GPU EPs, its WebGPU EP (on SwiftShader here, --io host). Without
--peer the peer is built in bench/.peer as bench/compare.py builds it.

The cases cover each op's attributes, optional inputs and outputs, dtypes (float32, float16) and
shapes; values are small (a few KB per case, 21 KB at most: the attention ops' KV caches). The engine's tests run them on the CPU reference and on
WebGPU with capture and replays (tests/unit/test_contrib_ops.cpp; tests/conformance, suite "contrib",
which docs/ops.md reports). Needs Debian's python3 (onnx, numpy).
"""
import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
MS = "com.microsoft"
F32, F16, I64, I32 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64, TensorProto.INT32
NP = {F32: np.float32, F16: np.float16, I64: np.int64, I32: np.int32}
ELEM = {np.float32: F32, np.float64: TensorProto.DOUBLE, np.float16: F16, np.int64: I64, np.int32: I32, np.uint8: TensorProto.UINT8,
        np.int8: TensorProto.INT8, np.bool_: TensorProto.BOOL, np.uint16: TensorProto.UINT16,
        np.int16: TensorProto.INT16}


class Case:
    """One model: `inputs` [(name, numpy array, initializer?)], `outputs` [(name or "", elem type)]."""

    def __init__(self, name, op, inputs, outputs, attrs=None, domain=MS, opset=17, ep="cpu", domain_opset=1):
        self.name, self.op, self.inputs, self.outputs = name, op, inputs, outputs
        self.attrs, self.domain, self.opset, self.ep = attrs or {}, domain, opset, ep
        self.domain_opset = domain_opset
        # tests/data/<suite>: contrib (every case on the GPU too) or ml (ai.onnx.ml: CPU kernels only)
        self.suite = "ml" if domain == "ai.onnx.ml" else "contrib"

    def model(self):
        node = helper.make_node(self.op, [n for n, _, _ in self.inputs], [n for n, _ in self.outputs],
                                name="node", domain=self.domain, **self.attrs)
        graph_inputs, inits = [], []
        for n, a, init in self.inputs:
            if not n:
                continue
            if init:
                inits.append(numpy_helper.from_array(a, n))
            else:
                elem = ELEM[a.dtype.type]
                graph_inputs.append(helper.make_tensor_value_info(n, elem, list(a.shape)))
        graph_outputs = [helper.make_tensor_value_info(n, t, None) for n, t in self.outputs if n]
        graph = helper.make_graph([node], self.name, graph_inputs, graph_outputs, inits)
        imports = [helper.make_opsetid("", self.opset)]
        if self.domain:
            imports.append(helper.make_opsetid(self.domain, self.domain_opset))
        return helper.make_model(graph, opset_imports=imports, ir_version=8 if self.opset < 21 else 10,
                                 producer_name="tests/data/contrib/make_cases.py")


def rng(name):
    return np.random.default_rng(sum(ord(c) * (i + 1) for i, c in enumerate(name)))


def values(r, shape, dtype=np.float32, lo=-2.0, hi=2.0):
    return r.uniform(lo, hi, size=shape).astype(dtype)


def rotary_cache(max_pos, half, dtype=np.float32):
    """cos and sin of position * 10000^(-k/half), [max_pos, half]: a Llama-style cache."""
    inv_freq = 1.0 / (10000.0 ** (np.arange(half) / half))
    angles = np.outer(np.arange(max_pos), inv_freq)
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


# ---- The cases ---------------------------------------------------------------------------------------

def norm_cases():
    cases = []

    def skip_ln(name, dt=np.float32, x=(2, 3, 8), skip=None, beta=True, bias=True, outs=4, eps=1e-5,
                simplified=False, params_as_initializers=False, omit=()):
        r = rng(name)
        h = x[-1]
        t = F16 if dt == np.float16 else F32
        ins = [("input", values(r, x, dt), False), ("skip", values(r, skip or x, dt), False),
               ("gamma", values(r, (h,), dt, 0.5, 1.5), params_as_initializers)]
        if not simplified:
            ins.append(("beta", values(r, (h,), dt), params_as_initializers) if beta else ("", None, False))
        if bias:
            ins.append(("bias", values(r, (h,), dt, -0.5, 0.5), False))
        while ins and not ins[-1][0]:
            ins.pop()
        names = [("output", t), ("mean", F32), ("inv_std_var", F32), ("input_skip_bias_sum", t)][:outs]
        names = [("", e) if n in omit else (n, e) for n, e in names]
        attrs = {} if eps is None else {"epsilon": eps}
        op = "SkipSimplifiedLayerNormalization" if simplified else "SkipLayerNormalization"
        cases.append(Case(name, op, ins, names, attrs))

    skip_ln("skip_layer_norm")
    skip_ln("skip_layer_norm_skip_2d_no_beta", skip=(3, 8), beta=False, omit=("mean", "inv_std_var"))
    skip_ln("skip_layer_norm_skip_batch1_no_bias_default_epsilon", skip=(1, 3, 8), bias=False, outs=3, eps=None,
            params_as_initializers=True)
    skip_ln("skip_layer_norm_2d_bias_without_beta", x=(6, 8), beta=False, outs=1)
    skip_ln("skip_layer_norm_float16", dt=np.float16)
    skip_ln("skip_layer_norm_hidden_40", x=(2, 5, 40), outs=3)
    skip_ln("skip_simplified_layer_norm", simplified=True)
    skip_ln("skip_simplified_layer_norm_float16_no_bias", dt=np.float16, simplified=True, bias=False, outs=3,
            omit=("mean",))
    skip_ln("skip_simplified_layer_norm_2d_skip", simplified=True, skip=(3, 8), outs=1, params_as_initializers=True)

    def simplified_ln(name, dt=np.float32, x=(2, 3, 8), axis=None, scale=None, outs=2, eps=1e-6, op="SimplifiedLayerNormalization",
                      opset=17, stash=None):
        r = rng(name)
        t = F16 if dt == np.float16 else F32
        a = -1 if axis is None else axis
        sshape = scale or tuple(x[a:])
        ins = [("X", values(r, x, dt), False), ("scale", values(r, sshape, dt, 0.5, 1.5), False)]
        attrs = {"epsilon": eps}
        if axis is not None:
            attrs["axis"] = axis
        if stash is not None:
            attrs["stash_type"] = stash
        outputs = [("Y", t), ("inv_std_var", F32)][:outs]
        cases.append(Case(name, op, ins, outputs, attrs, domain="", opset=opset))

    simplified_ln("simplified_layer_norm")
    simplified_ln("simplified_layer_norm_axis1", axis=1)
    simplified_ln("simplified_layer_norm_float16", dt=np.float16, outs=1, eps=1e-5)
    simplified_ln("rms_normalization", op="RMSNormalization", opset=23, outs=1, eps=1e-5)
    simplified_ln("rms_normalization_axis1_scale_broadcast", op="RMSNormalization", opset=23, outs=1, axis=1,
                  scale=(1, 8), eps=1e-5)
    simplified_ln("rms_normalization_float16", dt=np.float16, op="RMSNormalization", opset=23, outs=1, eps=1e-5)
    return cases


def gelu_cases():
    cases = []

    def act(name, op, dt=np.float32, bias=True, skip=False, attrs=None, ep="cpu", x=(2, 3, 8)):
        r = rng(name)
        t = F16 if dt == np.float16 else F32
        ins = [("X", values(r, x, dt, -4.0, 4.0), False)]
        if bias:
            ins.append(("bias", values(r, (x[-1],), dt, -1.0, 1.0), False))
        if skip:
            ins.append(("skip", values(r, x, dt), False))
        cases.append(Case(name, op, ins, [("Y", t)], attrs, ep=ep))

    act("fast_gelu", "FastGelu", bias=False)
    act("fast_gelu_bias", "FastGelu")
    act("fast_gelu_bias_float16", "FastGelu", dt=np.float16)
    act("bias_gelu", "BiasGelu")
    act("bias_gelu_float16", "BiasGelu", dt=np.float16)
    act("gelu_microsoft", "Gelu", bias=False)  # com.microsoft's Gelu (ONNX Runtime's optimizer fuses to it)
    act("quick_gelu", "QuickGelu", bias=False)
    act("quick_gelu_alpha", "QuickGelu", bias=False, attrs={"alpha": 1.25})
    act("quick_gelu_float16", "QuickGelu", dt=np.float16, bias=False, attrs={"alpha": 2.0})
    # ONNX Runtime has BiasAdd on its GPU EPs only (CUDA, ROCm, WebGPU): its WebGPU EP is the reference.
    act("bias_add", "BiasAdd", skip=True, ep="webgpu")
    # BiasSplitGelu (Stable Diffusion's GEGLU): on ONNX Runtime's GPU EPs only, its WebGPU EP the reference.
    r = rng("bias_split_gelu")
    cases.append(Case("bias_split_gelu", "BiasSplitGelu", [("X", values(r, (2, 4, 16)), False), ("bias", values(r, (16,)), True)],
                      [("Y", F32)], ep="webgpu"))
    return cases


def rotary_cases():
    cases = []

    def ms_rotary(name, x, pos, cache_half, max_pos=12, dt=np.float32, attrs=None):
        r = rng(name)
        t = F16 if dt == np.float16 else F32
        cos, sin = rotary_cache(max_pos, cache_half, dt)
        ins = [("input", values(r, x, dt), False), ("position_ids", np.array(pos, dtype=np.int64), False),
               ("cos_cache", cos, False), ("sin_cache", sin, False)]
        cases.append(Case(name, "RotaryEmbedding", ins, [("output", t)], attrs))

    ms_rotary("rotary_embedding", (2, 3, 16), [[0, 1, 2], [5, 7, 11]], 4, attrs={"num_heads": 2})
    ms_rotary("rotary_embedding_interleaved", (2, 3, 16), [[3, 4, 5], [0, 2, 4]], 4,
              attrs={"num_heads": 2, "interleaved": 1})
    ms_rotary("rotary_embedding_position_offset", (2, 3, 16), [4], 4)  # num_heads from the cache: 2
    ms_rotary("rotary_embedding_position_scalar_interleaved", (1, 4, 8), 2, 4, attrs={"interleaved": 1})
    ms_rotary("rotary_embedding_4d", (2, 2, 3, 8), [[1, 2, 3], [9, 10, 11]], 4, attrs={"num_heads": 2})
    ms_rotary("rotary_embedding_rotary_dim", (2, 3, 24), [[0, 1, 2], [6, 3, 0]], 2,
              attrs={"num_heads": 2, "rotary_embedding_dim": 4})
    ms_rotary("rotary_embedding_rotary_dim_interleaved_4d", (1, 3, 2, 12), [[0, 5]], 3,
              attrs={"num_heads": 3, "rotary_embedding_dim": 6, "interleaved": 1, "scale": 0.5})
    ms_rotary("rotary_embedding_float16", (2, 3, 16), [[0, 1, 2], [3, 8, 11]], 4, dt=np.float16,
              attrs={"num_heads": 2})

    def onnx_rotary(name, x, cache_half, pos=None, cache_shape=None, attrs=None):
        r = rng(name)
        if pos is not None:
            cos, sin = rotary_cache(12, cache_half)
        else:
            angles = r.uniform(0, 6.3, size=cache_shape)
            cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
        ins = [("X", values(r, x), False), ("cos_cache", cos, False), ("sin_cache", sin, False)]
        if pos is not None:
            ins.append(("position_ids", np.array(pos, dtype=np.int64), False))
        cases.append(Case(name, "RotaryEmbedding", ins, [("Y", F32)], attrs, domain="", opset=23))

    onnx_rotary("onnx_rotary_embedding_3d", (2, 3, 16), 4, pos=[[0, 1, 2], [4, 8, 11]], attrs={"num_heads": 2})
    onnx_rotary("onnx_rotary_embedding_4d_interleaved_rotary_dim", (2, 2, 3, 8), 2, pos=[[0, 1, 2], [7, 7, 7]],
                attrs={"interleaved": 1, "rotary_embedding_dim": 4})
    onnx_rotary("onnx_rotary_embedding_no_position_ids", (2, 2, 3, 8), 4, cache_shape=(2, 3, 4))
    return cases


def pack(q, bits):
    """`bits`-bit values q [..., n] (n a multiple of 8 / bits) packed low bits first into uint8 [..., n * bits / 8]."""
    per = 8 // bits
    q = q.astype(np.uint8).reshape(q.shape[:-1] + (q.shape[-1] // per, per))
    out = np.zeros(q.shape[:-1], dtype=np.uint8)
    for j in range(per):
        out |= q[..., j] << (j * bits)
    return out


def pack_padded(q, bits, r):
    """pack() of q padded along its last axis to whole bytes with random values (padding never read)."""
    per = 8 // bits
    pad = (-q.shape[-1]) % per
    if pad:
        q = np.concatenate([q, r.integers(0, 1 << bits, size=q.shape[:-1] + (pad,))], axis=-1)
    return pack(q, bits)


def block_quant_cases():
    """MatMulNBits and GatherBlockQuantized on random codes (every value of the bit width, the padding of a
    last block past K random too), scales of both signs, zero points packed, as floats or left out (the
    default 2^(bits - 1)). Weights, scales and zero points are initializers, as in real models."""
    cases = []

    def nbits(name, a_shape, N, bits, block, zp=None, bias=False, dt=np.float32, attrs=None):
        r = rng(name)
        K = a_shape[-1]
        k_blocks = -(-K // block)
        q = r.integers(0, 1 << bits, size=(N, k_blocks * block))
        B = pack(q, bits).reshape(N, k_blocks, block * bits // 8)
        scales = (r.uniform(0.02, 0.12, size=(N, k_blocks)) * r.choice([-1, 1], size=(N, k_blocks))).astype(dt)
        ins = [("A", values(r, a_shape, dt, -1.0, 1.0), False), ("B", B, True), ("scales", scales, True)]
        if zp == "packed":
            ins.append(("zero_points", pack_padded(r.integers(0, 1 << bits, size=(N, k_blocks)), bits, r), True))
        elif zp == "float":
            ins.append(("zero_points", r.uniform(0, (1 << bits) - 1, size=(N, k_blocks)).astype(dt), True))
        if bias:
            while len(ins) < 5:
                ins.append(("", None, False))
            ins.append(("bias", values(r, (N,), dt, -1.0, 1.0), True))
        t = F16 if dt == np.float16 else F32
        a = {"K": K, "N": N, "bits": bits, "block_size": block}
        a.update(attrs or {})
        cases.append(Case(name, "MatMulNBits", ins, [("Y", t)], a))

    # M = 1 and M <= 4 take the GPU's rows kernel (a decode step), M = 7 and more its tiled one.
    nbits("matmul_nbits_b4_bs16_zp", (1, 64), 24, 4, 16, zp="packed")
    nbits("matmul_nbits_b4_bs32_m7", (7, 96), 20, 4, 32)
    nbits("matmul_nbits_b4_bs64_k100_zp", (1, 100), 12, 4, 64, zp="packed")
    nbits("matmul_nbits_b4_bs64_k100_zp_m7", (7, 100), 12, 4, 64, zp="packed")
    nbits("matmul_nbits_b4_bs128_3d_zpf_bias", (2, 3, 200), 16, 4, 128, zp="float", bias=True)
    nbits("matmul_nbits_b4_bs256_k300_zp_bias", (1, 300), 8, 4, 256, zp="packed", bias=True)
    nbits("matmul_nbits_b4_bs32_float16_m5", (5, 64), 12, 4, 32, zp="packed", dt=np.float16)
    nbits("matmul_nbits_b8_bs16_k40_zp_m7", (7, 40), 16, 8, 16, zp="packed")
    nbits("matmul_nbits_b8_bs32", (1, 64), 12, 8, 32, attrs={"accuracy_level": 1})
    nbits("matmul_nbits_b8_bs64_3d_zp", (1, 3, 128), 10, 8, 64, zp="packed")  # ORT: no float zero points at 8 bits
    nbits("matmul_nbits_b8_bs128_k130_bias_m7", (7, 130), 8, 8, 128, bias=True)
    nbits("matmul_nbits_b8_bs256_zp_m2", (2, 256), 8, 8, 256, zp="packed")
    nbits("matmul_nbits_b2_bs32_zp", (1, 80), 12, 2, 32, zp="packed")
    nbits("matmul_nbits_b2_bs16_m7", (7, 48), 12, 2, 16)

    def gather(name, data_shape, bits, block, indices, zp=True, dt=np.float32, index_type=np.int64):
        r = rng(name)
        per = 8 // bits
        values_shape = data_shape[:-1] + (data_shape[-1] * per,)
        q = r.integers(0, 1 << bits, size=values_shape)
        blocks = -(-values_shape[-1] // block)
        scales = (r.uniform(0.05, 0.5, size=data_shape[:-1] + (blocks,)) * r.choice([-1, 1], size=data_shape[:-1] + (blocks,))).astype(dt)
        ins = [("data", pack(q, bits), True), ("indices", np.array(indices, dtype=index_type), False), ("scales", scales, True)]
        if zp:
            ins.append(("zero_points", pack_padded(r.integers(0, 1 << bits, size=data_shape[:-1] + (blocks,)), bits, r), True))
        t = F16 if dt == np.float16 else F32
        attrs = {"bits": bits, "block_size": block, "gather_axis": 0, "quantize_axis": len(data_shape) - 1}
        cases.append(Case(name, "GatherBlockQuantized", ins, [("output", t)], attrs))

    # MatMulBnb4 (bitsandbytes' 4-bit weights, transformers.js's "bnb4" models): random codes of both
    # tables, a block not dividing N K, float16.
    def bnb4(name, a_shape, N, block, quant_type, dt=np.float32, opset=17):
        r = rng(name)
        K = a_shape[-1]
        ins = [("A", values(r, a_shape, dt, -1.0, 1.0), False),
               ("B", r.integers(0, 256, size=((N * K + 1) // 2,)).astype(np.uint8), True),
               ("absmax", r.uniform(0.05, 0.5, size=(-(-N * K // block),)).astype(dt), True)]
        cases.append(Case(name, "MatMulBnb4", ins, [("Y", F16 if dt == np.float16 else F32)],
                          {"K": K, "N": N, "block_size": block, "quant_type": quant_type}, opset=opset))

    bnb4("matmul_bnb4_nf4", (3, 32), 8, 64, 1)
    bnb4("matmul_bnb4_fp4_odd_blocks", (2, 2, 15), 7, 16, 0)
    bnb4("matmul_bnb4_nf4_float16_opset14", (2, 16), 6, 32, 1, dt=np.float16, opset=14)

    gather("gather_block_quantized_b4_bs16", (6, 16), 4, 16, [[0, 5, -1], [2, 2, -6]])
    gather("gather_block_quantized_b4_3d_int32_no_zp", (5, 2, 8), 4, 16, [4, 0, -2, 1], zp=False, index_type=np.int32)
    gather("gather_block_quantized_b8_bs32_scalar_index", (4, 40), 8, 32, 3)
    gather("gather_block_quantized_b4_bs32_float16", (8, 32), 4, 32, [7, 1, 3], dt=np.float16)
    gather("gather_block_quantized_b2_bs16", (4, 8), 2, 16, [[1, 3], [0, -1]])
    return cases


def gqa_cases():
    """GroupQueryAttention: kv heads fewer than heads (and one), the prompt, a decode step after a past
    that grew by concatenation, a static max-length buffer with per-sequence lengths (seqlens_k), a
    later prompt chunk, a padded prompt, packed QKV, rotary inside (interleaved or not, partial), local
    window, softcap, smooth softmax, scale, attention_bias, head_sink, position_ids, float16."""
    cases = []

    def gqa(name, b, s, n, nkv, h, past=None, seqlens=None, total=None, packed=False, rotary=None, dt=np.float32,
            attrs=None, position_ids=None, attention_bias=None, head_sink=False):
        r = rng(name)
        t = F16 if dt == np.float16 else F32
        total = s if total is None else total
        seqlens = [total - 1] * b if seqlens is None else seqlens
        q = values(r, (b, s, n * h), dt, -1.0, 1.0)
        k = values(r, (b, s, nkv * h), dt, -1.0, 1.0)
        v = values(r, (b, s, nkv * h), dt, -1.0, 1.0)
        ins = [("query", np.concatenate([q, k, v], axis=2), False)] if packed else [("query", q, False), ("key", k, False),
                                                                                  ("value", v, False)]
        if packed:
            ins += [("", None, False), ("", None, False)]
        if past is not None:
            ins += [("past_key", values(r, (b, nkv, past, h), dt, -1.0, 1.0), False),
                    ("past_value", values(r, (b, nkv, past, h), dt, -1.0, 1.0), False)]
        else:
            ins += [("", None, False), ("", None, False)]
        ins += [("seqlens_k", np.array(seqlens, dtype=np.int32), False),
                ("total_sequence_length", np.array(total, dtype=np.int32), False)]
        a = {"num_heads": n, "kv_num_heads": nkv}
        if rotary is not None:
            half, interleaved = rotary
            cos, sin = rotary_cache(max(total, past or 0) + 2, half, dt)
            ins += [("cos_cache", cos, False), ("sin_cache", sin, False)]
            a.update(do_rotary=1, rotary_interleaved=int(interleaved))
        else:
            ins += [("", None, False), ("", None, False)]
        ins.append(("position_ids", np.array(position_ids, dtype=np.int64), False) if position_ids is not None
                   else ("", None, False))
        ins.append(("attention_bias", values(r, attention_bias, dt, -1.0, 1.0), False) if attention_bias
                   else ("", None, False))
        ins.append(("head_sink", values(r, (n,), dt, -1.0, 1.0), False) if head_sink else ("", None, False))
        while ins and not ins[-1][0]:
            ins.pop()
        a.update(attrs or {})
        cases.append(Case(name, "GroupQueryAttention", ins, [("output", t), ("present_key", t), ("present_value", t)], a))

    gqa("gqa_prompt", 2, 5, 4, 2, 16)
    gqa("gqa_prompt_packed_rotary", 2, 4, 4, 2, 16, packed=True, rotary=(8, False))
    gqa("gqa_prompt_window_softcap", 1, 7, 4, 1, 8, attrs={"local_window_size": 3, "softcap": 2.0})
    gqa("gqa_prompt_padded_smooth_scale", 2, 5, 2, 2, 8, seqlens=[4, 2], attrs={"smooth_softmax": 1, "scale": 0.5})
    gqa("gqa_decode_past", 2, 1, 4, 2, 16, past=6, total=7)
    gqa("gqa_decode_mqa_window", 1, 1, 4, 1, 16, past=9, total=10, attrs={"local_window_size": 4})
    gqa("gqa_decode_static_rotary_interleaved", 2, 1, 6, 2, 16, past=12, seqlens=[3, 9], total=10, rotary=(8, True))
    gqa("gqa_decode_static_partial_rotary_softcap", 2, 1, 4, 2, 32, past=8, seqlens=[5, 2], total=6,
        rotary=(8, False), attrs={"softcap": 1.5})
    gqa("gqa_static_prompt", 2, 4, 4, 2, 16, past=8, rotary=(8, False))
    gqa("gqa_later_prompt_chunk", 1, 3, 4, 2, 16, past=12, seqlens=[7], total=8, rotary=(8, False))
    gqa("gqa_decode_float16", 2, 1, 4, 2, 16, past=5, total=6, dt=np.float16)
    # attention_bias (after softcap), head_sink (a sink logit per head), position_ids (which ONNX
    # Runtime's CPU EP reads and does not use: the positions come from seqlens_k).
    gqa("gqa_prompt_attention_bias_head_sink", 2, 4, 4, 2, 16, attention_bias=(2, 1, 4, 4), head_sink=True,
        attrs={"softcap": 1.0})
    gqa("gqa_decode_static_bias_sink_position_ids", 2, 1, 6, 2, 16, past=8, seqlens=[2, 6], total=7, rotary=(8, False),
        position_ids=[[5], [0]], attention_bias=(1, 6, 1, 7), head_sink=True)
    return cases


def mha_cases():
    """MultiHeadAttention: separate Q, K, V [B, S, D] with and without bias, key padding masks (key
    counts [B] and [B, T]), attention_bias (broadcast over batch or heads), a past with presents,
    unidirectional, scale, mask_filter_value, a value head size of its own, K and V in BNSH."""
    cases = []

    def mha(name, b, s, l, n, h, hv=None, past=None, bias=False, mask=None, attn_bias=None, bnsh=False, attrs=None):
        r = rng(name)
        hv = hv or h
        ins = [("query", values(r, (b, s, n * h), lo=-1.0, hi=1.0), False)]
        if bnsh:
            ins += [("key", values(r, (b, n, l, h), lo=-1.0, hi=1.0), False),
                    ("value", values(r, (b, n, l, hv), lo=-1.0, hi=1.0), False)]
        else:
            ins += [("key", values(r, (b, l, n * h), lo=-1.0, hi=1.0), False),
                    ("value", values(r, (b, l, n * hv), lo=-1.0, hi=1.0), False)]
        ins.append(("bias", values(r, (2 * n * h + n * hv,), lo=-0.5, hi=0.5), False) if bias else ("", None, False))
        ins.append(("key_padding_mask", np.array(mask, dtype=np.int32), False) if mask is not None else ("", None, False))
        ins.append(("attention_bias", values(r, attn_bias, lo=-1.0, hi=1.0), False) if attn_bias else ("", None, False))
        if past is not None:
            ins += [("past_key", values(r, (b, n, past, h), lo=-1.0, hi=1.0), False),
                    ("past_value", values(r, (b, n, past, hv), lo=-1.0, hi=1.0), False)]
        while ins and not ins[-1][0]:
            ins.pop()
        outs = [("output", F32)] + ([("present_key", F32), ("present_value", F32)] if past is not None else [])
        a = {"num_heads": n}
        a.update(attrs or {})
        cases.append(Case(name, "MultiHeadAttention", ins, outs, a))

    mha("mha_cross", 2, 3, 5, 2, 8)
    mha("mha_bias_key_padding_mask", 2, 4, 4, 2, 8, bias=True, mask=[[1, 1, 0, 1], [1, 1, 1, 0]])
    mha("mha_key_counts_attention_bias_scale", 2, 3, 5, 2, 8, hv=4, mask=[5, 3], attn_bias=(1, 2, 3, 5),
        attrs={"scale": 0.5})
    mha("mha_past_unidirectional_bias", 2, 3, 3, 2, 8, past=4, bias=True, attn_bias=(2, 1, 3, 7),
        mask=[[1] * 7, [1, 1, 1, 1, 1, 0, 1]], attrs={"unidirectional": 1, "mask_filter_value": -1e9})
    mha("mha_decode_past", 2, 1, 1, 4, 8, past=6)
    mha("mha_bnsh_kv", 1, 3, 6, 2, 8, bnsh=True)

    # com.microsoft's Attention (ONNX Runtime's BERT and GPT-2 optimizations): packed QKV weights and bias
    # (initializers, as the optimizer writes them), key-length or 0/1 masks, attention_bias, unidirectional.
    def attention(name, b, s, d_in, n, h, mask=None, attn_bias=None, attrs=None, sizes=None, opset=17, past=None):
        r = rng(name)
        dq, dk, dv = sizes or (n * h,) * 3
        ins = [("input", values(r, (b, s, d_in), lo=-1.0, hi=1.0), False),
               ("weights", values(r, (d_in, dq + dk + dv), lo=-0.3, hi=0.3), True),
               ("bias", values(r, (dq + dk + dv,), lo=-0.2, hi=0.2), True),
               ("mask_index", np.array(mask, dtype=np.int32), False) if mask is not None else ("", None, False),
               ("past", values(r, (2, b, n, past, h), lo=-1.0, hi=1.0), False) if past else ("", None, False),
               ("attention_bias", values(r, attn_bias, lo=-1.0, hi=1.0), False) if attn_bias else ("", None, False)]
        while ins and not ins[-1][0]:
            ins.pop()
        a = {"num_heads": n}
        if sizes:
            a["qkv_hidden_sizes"] = list(sizes)
        a.update(attrs or {})
        outs = [("output", F32)] + ([("present", F32)] if past else [])
        cases.append(Case(name, "Attention", ins, outs, a, opset=opset))

    attention("attention_bert_key_lengths", 2, 5, 16, 2, 8, mask=[5, 3])
    attention("attention_mask_2d_attention_bias", 2, 4, 12, 3, 4, mask=[[1, 1, 1, 0], [1, 0, 1, 1]], attn_bias=(1, 3, 4, 4))
    attention("attention_unidirectional_scale", 1, 6, 8, 2, 4, attrs={"unidirectional": 1, "scale": 0.3})
    attention("attention_qkv_hidden_sizes_opset11", 2, 3, 10, 2, 4, sizes=(8, 8, 12), mask=[3, 2], opset=11)
    # GPT-2 as ONNX Runtime optimizes it: a past and present [2, B, N, T, H], a 0/1 mask over all T keys.
    attention("attention_gpt2_past_prompt", 2, 3, 16, 2, 8, past=4, mask=[[1] * 7, [0, 0, 1, 1, 1, 1, 1]],
              attrs={"unidirectional": 1})
    attention("attention_gpt2_past_decode_opset12", 2, 1, 16, 2, 8, past=6, mask=[[1] * 7, [0] + [1] * 6],
              attrs={"unidirectional": 1}, opset=12)

    # com.microsoft's QAttention (Attention after ONNX Runtime's quantize_dynamic): a uint8 input with its scale
    # and zero point (as DynamicQuantizeLinear makes them), int8 or uint8 packed weights with a scale per
    # tensor or per column and zero points, the float bias; key-length masks, unidirectional with a past.
    def qattention(name, b, s, d_in, n, h, mask=None, attrs=None, per_column=False, weight_type=np.int8, zero_points=True,
                   past=None):
        r = rng(name)
        d = 3 * n * h
        lo, hi = (-128, 128) if weight_type == np.int8 else (0, 256)
        ins = [("input", r.integers(0, 256, size=(b, s, d_in)).astype(np.uint8), False),
               ("weight", r.integers(lo, hi, size=(d_in, d)).astype(weight_type), True),
               ("bias", values(r, (d,), lo=-0.2, hi=0.2), True),
               ("input_scale", np.array(0.02, dtype=np.float32), False),
               ("weight_scale", (values(r, (d,), lo=0.001, hi=0.004) if per_column else np.array(0.003, dtype=np.float32)), True),
               ("mask_index", np.array(mask, dtype=np.int32), False) if mask is not None else ("", None, False),
               ("input_zero_point", np.array(128, dtype=np.uint8), False) if zero_points else ("", None, False),
               ("weight_zero_point", np.array(3 if weight_type == np.int8 else 128, dtype=weight_type), True) if zero_points
               else ("", None, False),
               ("past", values(r, (2, b, n, past, h), lo=-1.0, hi=1.0), False) if past else ("", None, False)]
        while ins and not ins[-1][0]:
            ins.pop()
        a = {"num_heads": n}
        a.update(attrs or {})
        outs = [("output", F32)] + ([("present", F32)] if past else [])
        cases.append(Case(name, "QAttention", ins, outs, a))

    qattention("qattention_bert_key_lengths", 2, 5, 16, 2, 8, mask=[5, 3])
    qattention("qattention_per_column_uint8_weights", 1, 4, 12, 3, 4, per_column=True, weight_type=np.uint8)
    qattention("qattention_no_zero_points_scale", 2, 3, 8, 2, 4, zero_points=False, attrs={"scale": 0.25})
    qattention("qattention_gpt2_past", 2, 2, 16, 2, 8, past=3, mask=[[1] * 5, [0, 1, 1, 1, 1]], attrs={"unidirectional": 1})

    # com.microsoft's EmbedLayerNormalization (BERT's embeddings): word, position and segment tables
    # (initializers), int32 ids, a 0/1 mask (its per-sequence count is mask_index), positions given or not.
    def embed(name, b, s, h, segments=True, mask=True, position_ids=False, sum_out=False, attrs=None, opset=17):
        r = rng(name)
        ins = [("input_ids", r.integers(0, 30, size=(b, s)).astype(np.int32), False),
               ("segment_ids", r.integers(0, 2, size=(b, s)).astype(np.int32), False) if segments else ("", None, False),
               ("word_embedding", values(r, (30, h)), True), ("position_embedding", values(r, (16, h)), True),
               ("segment_embedding", values(r, (2, h)), True) if segments else ("", None, False),
               ("gamma", values(r, (h,), lo=0.5, hi=1.5), True), ("beta", values(r, (h,), lo=-0.5, hi=0.5), True),
               ("mask", (r.uniform(size=(b, s)) > 0.3).astype(np.int32), False) if mask else ("", None, False),
               ("position_ids", r.integers(0, 16, size=(b, s)).astype(np.int32), False) if position_ids else ("", None, False)]
        while ins and not ins[-1][0]:
            ins.pop()
        outs = [("output", F32), ("mask_index", I32)] + ([("embedding_sum", F32)] if sum_out else [])
        cases.append(Case(name, "EmbedLayerNormalization", ins, outs, attrs, opset=opset))

    embed("embed_layer_norm_bert", 2, 7, 16)
    embed("embed_layer_norm_no_segments_no_mask_sum", 3, 5, 8, segments=False, mask=False, sum_out=True, attrs={"epsilon": 1e-5})
    embed("embed_layer_norm_position_ids_opset12", 2, 6, 8, position_ids=True, opset=12)

    # com.microsoft's QEmbedLayerNormalization (EmbedLayerNormalization after quantize_dynamic): uint8 tables,
    # gamma and beta, each with its scale and zero point; segments and a mask or neither.
    def qembed(name, b, s, h, segments=True, mask=True, attrs=None):
        r = rng(name)
        def q(shape):
            return r.integers(0, 256, size=shape).astype(np.uint8)
        def scale(lo, hi):
            return np.array(r.uniform(lo, hi), dtype=np.float32)
        def zp():
            return np.array(r.integers(100, 156), dtype=np.uint8)
        none = ("", None, False)
        ins = [("input_ids", r.integers(0, 30, size=(b, s)).astype(np.int32), False),
               ("segment_ids", r.integers(0, 2, size=(b, s)).astype(np.int32), False) if segments else none,
               ("word_q", q((30, h)), True), ("position_q", q((16, h)), True), ("segment_q", q((2, h)), True) if segments else none,
               ("gamma_q", q((h,)), True), ("beta_q", q((h,)), True),
               ("mask", (r.uniform(size=(b, s)) > 0.3).astype(np.int32), False) if mask else none,
               ("word_scale", scale(0.01, 0.02), True), ("position_scale", scale(0.01, 0.02), True),
               ("segment_scale", scale(0.01, 0.02), True) if segments else none,
               ("gamma_scale", scale(0.005, 0.01), True), ("beta_scale", scale(0.002, 0.004), True),
               ("word_zero_point", zp(), True), ("position_zero_point", zp(), True),
               ("segment_zero_point", zp(), True) if segments else none,
               ("gamma_zero_point", np.array(0, dtype=np.uint8), True), ("beta_zero_point", zp(), True)]
        cases.append(Case(name, "QEmbedLayerNormalization", ins, [("output", F32), ("mask_index", I32)], attrs))

    qembed("qembed_layer_norm_bert", 2, 7, 16)
    qembed("qembed_layer_norm_no_segments_no_mask_epsilon", 3, 5, 8, segments=False, mask=False, attrs={"epsilon": 1e-5})
    return cases


def qlinear_cases():
    """ONNX Runtime's QOperator ops (its quantizer's QOperator format) and its integer products with float
    outputs (MatMulIntegerToFloat, DynamicQuantizeMatMul, which its optimizer writes for dynamically quantized
    transformers): uint8 and int8 tensors over their whole range, random scales and zero points as initializers (as the quantizer writes them; the GPU
    builds its lookup tables from them), broadcasting, both layouts of the global pool, a concatenation of
    tensors with their own scales."""
    cases = []
    types = {"uint8": (np.uint8, TensorProto.UINT8), "int8": (np.int8, TensorProto.INT8)}

    def tensor(r, shape, dt):
        info = np.iinfo(dt)
        return r.integers(info.min, info.max + 1, size=shape).astype(dt)

    def zero(r, dt):
        info = np.iinfo(dt)
        return np.array(r.integers(info.min // 2, info.max // 2 + 1), dtype=dt)

    def scale(r, lo, hi):
        return np.array(r.uniform(lo, hi), dtype=np.float32)

    def binary(op, tname, a_shape, b_shape, c_scale, zero_points=True):
        name = f"qlinear_{op[7:].lower()}_{tname}" + ("" if zero_points else "_no_zero_points")
        r = rng(name)
        dt, elem = types[tname]
        zp = (lambda n: (n, zero(r, dt), True)) if zero_points else (lambda n: ("", None, False))
        ins = [("A", tensor(r, a_shape, dt), False), ("A_scale", scale(r, 0.01, 0.05), True), zp("A_zero_point"),
               ("B", tensor(r, b_shape, dt), False), ("B_scale", scale(r, 0.01, 0.05), True), zp("B_zero_point"),
               ("C_scale", scale(r, *c_scale), True)]
        if zero_points:
            ins.append(zp("C_zero_point"))
        cases.append(Case(name, op, ins, [("C", elem)]))

    binary("QLinearAdd", "uint8", (2, 3, 4), (3, 1), (0.02, 0.06))
    binary("QLinearAdd", "int8", (2, 5), (5,), (0.02, 0.06))
    binary("QLinearMul", "uint8", (2, 3, 4), (1, 4), (0.05, 0.2))
    binary("QLinearMul", "int8", (4, 6), (4, 1), (0.05, 0.2))

    def where(tname, c_shape, x_shape, y_shape, same_scales=False):
        name = f"qlinear_where_{tname}" + ("_same_scales" if same_scales else "")
        r = rng(name)
        dt, elem = types[tname]
        xs, xz = scale(r, 0.01, 0.05), zero(r, dt)
        ys, yz = (xs, xz) if same_scales else (scale(r, 0.01, 0.05), zero(r, dt))
        zs, zz = (xs, xz) if same_scales else (scale(r, 0.02, 0.06), zero(r, dt))
        ins = [("condition", r.uniform(size=c_shape) > 0.5, False), ("X", tensor(r, x_shape, dt), False),
               ("x_scale", xs, True), ("x_zero_point", xz, True), ("Y", tensor(r, y_shape, dt), False),
               ("y_scale", ys, True), ("y_zero_point", yz, True), ("z_scale", zs, True), ("z_zero_point", zz, True)]
        cases.append(Case(name, "QLinearWhere", ins, [("Z", elem)]))

    where("uint8", (2, 3, 4), (3, 4), (2, 1, 4))
    where("int8", (5,), (2, 5), (1,))
    where("uint8", (3, 4), (3, 4), (3, 4), same_scales=True)

    def softmax(tname, shape, opset, axis, x_scale, y_scale, y_zero):
        # ONNX Runtime's table approximation (ops/qlinear.h); its quantizer writes y_scale 1/256 (uint8, zero
        # point 0) and 1/255 (int8, zero point -128: int8 results stay within 127, which ONNX Runtime wraps).
        name = f"qlinear_softmax_{tname}_opset{opset}" + ("" if axis is None else f"_axis{axis}")
        r = rng(name)
        dt, elem = types[tname]
        attrs = {"opset": opset} if axis is None else {"opset": opset, "axis": axis}
        ins = [("X", tensor(r, shape, dt), False), ("X_scale", np.array(x_scale, dtype=np.float32), True),
               ("X_zero_point", zero(r, dt), True), ("Y_scale", np.array(y_scale, dtype=np.float32), True),
               ("Y_zero_point", np.array(y_zero, dtype=dt), True)]
        cases.append(Case(name, "QLinearSoftmax", ins, [("Y", elem)], attrs))

    softmax("uint8", (2, 3, 16), 13, None, 0.05, 1 / 256, 0)
    softmax("int8", (2, 5, 7), 13, 1, 0.1, 1 / 255, -128)
    softmax("uint8", (3, 2, 4), 12, 1, 0.02, 1 / 256, 0)
    softmax("int8", (4, 9), 12, None, 0.2, 1 / 255, -128)

    def unary(op, tname, attrs=None):
        name = f"qlinear_{op[7:].lower()}_{tname}"
        r = rng(name)
        dt, elem = types[tname]
        ins = [("X", tensor(r, (2, 5, 7), dt), False), ("X_scale", scale(r, 0.02, 0.08), True), ("X_zero_point", zero(r, dt), True),
               ("Y_scale", scale(r, 0.002, 0.02), True), ("Y_zero_point", zero(r, dt), True)]
        cases.append(Case(name, op, ins, [("Y", elem)], attrs))

    unary("QLinearSigmoid", "uint8")
    unary("QLinearSigmoid", "int8")
    unary("QLinearLeakyRelu", "uint8", {"alpha": 0.1})
    unary("QLinearLeakyRelu", "int8", {"alpha": 0.2})

    def pool(tname, shape, channels_last):
        name = f"qlinear_global_average_pool_{tname}" + ("_channels_last" if channels_last else "")
        r = rng(name)
        dt, elem = types[tname]
        ins = [("X", tensor(r, shape, dt), False), ("x_scale", scale(r, 0.02, 0.08), True), ("x_zero_point", zero(r, dt), True),
               ("y_scale", scale(r, 0.005, 0.02), True), ("y_zero_point", zero(r, dt), True)]
        cases.append(Case(name, "QLinearGlobalAveragePool", ins, [("Y", elem)], {"channels_last": int(channels_last)}))

    pool("uint8", (2, 3, 5, 4), False)
    pool("int8", (2, 4, 3, 6), True)

    def avg_pool(tname, shape, attrs):
        name = f"qlinear_average_pool_{tname}" + "".join(f"_{k}" for k in attrs if k != "kernel_shape")
        r = rng(name)
        dt, elem = types[tname]
        ins = [("X", tensor(r, shape, dt), False), ("x_scale", scale(r, 0.02, 0.08), True), ("x_zero_point", zero(r, dt), True),
               ("y_scale", scale(r, 0.01, 0.04), True), ("y_zero_point", zero(r, dt), True)]
        cases.append(Case(name, "QLinearAveragePool", ins, [("Y", elem)], attrs))

    avg_pool("uint8", (2, 3, 7, 6), {"kernel_shape": [3, 3], "strides": [2, 2]})
    avg_pool("int8", (1, 4, 6, 7), {"kernel_shape": [2, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1})
    avg_pool("uint8", (1, 2, 7, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})

    def qgemm(name, a_type, b_type, M, K, N, trans_b=False, per_column=False, bias=None, out=None, alpha=1.0):
        r = rng("qgemm_" + name)
        (adt, _), (bdt, _) = types[a_type], types[b_type]
        ins = [("A", tensor(r, (M, K), adt), False), ("a_scale", scale(r, 0.01, 0.03), True),
               ("a_zero_point", zero(r, adt), True),
               ("B", tensor(r, (N, K) if trans_b else (K, N), bdt), True),
               ("b_scale", r.uniform(0.005, 0.02, size=(N,)).astype(np.float32) if per_column else scale(r, 0.005, 0.02), True),
               ("b_zero_point", np.zeros(N, dtype=bdt) if per_column else zero(r, bdt), True)]
        if bias == "column":
            ins.append(("C", r.integers(-5000, 5000, size=(N,)).astype(np.int32), True))
        elif bias == "full":
            ins.append(("C", r.integers(-5000, 5000, size=(M, N)).astype(np.int32), True))
        elif out:
            ins.append(("", None, False))
        if out:
            ydt, yelem = types[out]
            ins += [("y_scale", scale(r, 0.05, 0.2), True), ("y_zero_point", zero(r, ydt), True)]
        attrs = {"alpha": alpha}
        if trans_b:
            attrs["transB"] = 1
        cases.append(Case("qgemm_" + name, "QGemm", ins, [("Y", types[out][1] if out else F32)], attrs))

    qgemm("u8s8_per_column_bias_u8", "uint8", "int8", 3, 40, 10, trans_b=True, per_column=True, bias="column", out="uint8")
    qgemm("s8s8_full_bias_s8_alpha", "int8", "int8", 4, 24, 6, bias="full", out="int8", alpha=0.5)
    qgemm("u8u8_float", "uint8", "uint8", 2, 16, 5, bias="column")
    qgemm("u8s8_no_bias_u8", "uint8", "int8", 5, 8, 7, trans_b=True, out="uint8")

    def integer_to_float(name, a_type, b_type, a_shape, K, N, per_column, bias, a_zero=True, dynamic=False, dt=np.float32):
        r = rng(name)
        (adt, _), (bdt, _) = types[a_type], types[b_type]
        b_scale = (r.uniform(0.005, 0.02, size=(N,)) if per_column else np.array(r.uniform(0.005, 0.02))).astype(dt)
        b_zero = r.integers(-3, 4, size=(N,)).astype(bdt) if per_column else np.array(r.integers(0, 5), dtype=bdt)
        bias_in = ("bias", values(r, (N,), dt, -1.0, 1.0), True) if bias else ("", None, False)
        B = ("B", tensor(r, (K, N), bdt), True)
        if dynamic:
            ins = [("A", values(r, a_shape + (K,), dt, -2.0, 3.0), False), B, ("b_scale", b_scale, True),
                   ("b_zero_point", b_zero, True), bias_in]
            op = "DynamicQuantizeMatMul"
        else:
            ins = [("A", tensor(r, a_shape + (K,), adt), False), B, ("a_scale", np.array(r.uniform(0.01, 0.03), dtype=dt), True),
                   ("b_scale", b_scale, True), ("a_zero_point", zero(r, adt), True) if a_zero else ("", None, False),
                   ("b_zero_point", b_zero, True), bias_in]
            op = "MatMulIntegerToFloat"
        while ins and not ins[-1][0]:
            ins.pop()
        cases.append(Case(name, op, ins, [("Y", F16 if dt == np.float16 else F32)]))

    integer_to_float("matmul_integer_to_float_u8s8_per_column_bias", "uint8", "int8", (2, 3), 24, 8, True, True)
    integer_to_float("matmul_integer_to_float_s8s8_no_a_zero_point", "int8", "int8", (5,), 16, 6, False, False, a_zero=False)
    integer_to_float("dynamic_quantize_matmul_per_column_bias", "uint8", "int8", (2, 4), 32, 8, True, True, dynamic=True)
    integer_to_float("dynamic_quantize_matmul_u8", "uint8", "uint8", (3,), 12, 5, False, False, dynamic=True)

    def concat(tname, shapes, axis):
        name = f"qlinear_concat_{tname}_axis_{axis}".replace("-", "minus")
        r = rng(name)
        dt, elem = types[tname]
        y_scale, y_zero = scale(r, 0.02, 0.05), zero(r, dt)
        ins = [("Y_scale", y_scale, True), ("Y_zero_point", y_zero, True)]
        for k, s in enumerate(shapes):
            same = k == 1  # one input already at Y's parameters (a plain copy)
            ins += [(f"X{k}", tensor(r, s, dt), False), (f"X{k}_scale", y_scale if same else scale(r, 0.01, 0.08), True),
                    (f"X{k}_zero_point", y_zero if same else zero(r, dt), True)]
        cases.append(Case(name, "QLinearConcat", ins, [("Y", elem)], {"axis": axis}))

    concat("uint8", [(2, 2, 3), (2, 4, 3), (2, 1, 3)], 1)
    concat("int8", [(3, 2), (3, 5)], -1)
    return cases


class GraphCase(Case):
    """A model of several nodes: `build` returns (nodes, initializers) over graph inputs `inputs`."""

    def __init__(self, name, op, inputs, outputs, build, opset=13):
        super().__init__(name, op, inputs, outputs, opset=opset)
        self.build = build

    def model(self):
        nodes, inits = self.build()
        graph_inputs = [helper.make_tensor_value_info(n, ELEM[a.dtype.type], list(a.shape)) for n, a, _ in self.inputs]
        graph_outputs = [helper.make_tensor_value_info(n, t, None) for n, t in self.outputs]
        graph = helper.make_graph(nodes, self.name, graph_inputs, graph_outputs, inits)
        imports = [helper.make_opsetid("", self.opset), helper.make_opsetid(MS, 1)]
        return helper.make_model(graph, opset_imports=imports, ir_version=7, producer_name="tests/data/contrib/make_cases.py")


def qdq_cases():
    """ONNX Runtime's own QuantizeLinear and DequantizeLinear (its quantizer writes them for 16-bit QDQ models
    below ONNX opset 21): uint16 and int16, per tensor and per axis; inputs beyond the types' ranges saturate.
    Float16 scales only for DequantizeLinear: a float16 QuantizeLinear divides on the CPU (the GPU refuses it, as it
    does ONNX's), so it would fail the fail-loud configuration every contrib case must pass."""
    cases = []
    types = {"uint16": (np.uint16, TensorProto.UINT16), "int16": (np.int16, TensorProto.INT16)}

    def quantize(tname, shape, axis, scale_dt):
        name = f"qdq_quantize_{tname}" + ("" if axis is None else f"_axis{axis}") + ("_float16" if scale_dt == np.float16 else "")
        r = rng(name)
        dt, elem = types[tname]
        info = np.iinfo(dt)
        n = 1 if axis is None else shape[axis]
        scale = r.uniform(0.001, 0.01, size=() if axis is None else (n,)).astype(scale_dt)
        zero = r.integers(info.min // 4, info.max // 4 + 1, size=scale.shape).astype(dt)
        x = r.uniform(-80.0, 400.0, size=shape).astype(scale_dt)
        attrs = {} if axis is None else {"axis": axis}
        cases.append(Case(name, "QuantizeLinear", [("x", x, False), ("y_scale", scale, True), ("y_zero_point", zero, True)],
                          [("y", elem)], attrs))

    def dequantize(tname, shape, axis, scale_dt, zero_point=True):
        name = f"qdq_dequantize_{tname}" + ("" if axis is None else f"_axis{axis}") + (
            "_float16" if scale_dt == np.float16 else "") + ("" if zero_point else "_no_zero_point")
        r = rng(name)
        dt, _ = types[tname]
        info = np.iinfo(dt)
        n = 1 if axis is None else shape[axis]
        scale = r.uniform(0.001, 0.01, size=() if axis is None else (n,)).astype(scale_dt)
        x = r.integers(info.min, info.max + 1, size=shape).astype(dt)
        ins = [("x", x, False), ("x_scale", scale, True)]
        if zero_point:
            ins.append(("x_zero_point", r.integers(info.min // 4, info.max // 4 + 1, size=scale.shape).astype(dt), True))
        attrs = {} if axis is None else {"axis": axis}
        cases.append(Case(name, "DequantizeLinear", ins, [("y", F16 if scale_dt == np.float16 else F32)], attrs))

    quantize("uint16", (2, 3, 4), None, np.float32)
    quantize("int16", (3, 5), 1, np.float32)
    dequantize("uint16", (2, 3, 4), None, np.float32)
    dequantize("int16", (3, 5), 1, np.float32)
    dequantize("uint16", (4, 3), 0, np.float16)
    dequantize("int16", (2, 6), None, np.float32, zero_point=False)
    return cases


def qoperator_model_cases():
    """A small int8 CNN in ONNX Runtime's QOperator format, as its quantizer writes a ResNet-style model:
    QuantizeLinear, QLinearConv (a ReLU folded into its output range), uint8 MaxPool, a residual
    QLinearAdd, QLinearConcat of two branches, QLinearSigmoid, QLinearGlobalAveragePool, QLinearMatMul,
    DequantizeLinear and Softmax, against ONNX Runtime end to end."""
    name = "qoperator_cnn"
    r = rng(name)
    u8, i8 = np.uint8, np.int8
    inits = []

    def init(n, a):
        inits.append(numpy_helper.from_array(np.asarray(a), n))
        return n

    def qparams(prefix, lo, hi, dt=u8):
        return init(prefix + "_scale", np.float32(r.uniform(lo, hi))), init(prefix + "_zp", np.array(r.integers(100, 140) if dt == u8 else 0, dtype=dt))

    def conv(x, xq, c_in, c_out, k, yq, name, pads=1, bias=True):
        w = init(name + "_w", r.integers(-127, 128, size=(c_out, c_in, k, k)).astype(i8))
        ws = init(name + "_w_scale", r.uniform(0.002, 0.01, size=(c_out,)).astype(np.float32))
        wz = init(name + "_w_zp", np.zeros(c_out, dtype=i8))
        ins = [x, *xq, w, ws, wz, *yq]
        if bias:
            ins.append(init(name + "_b", r.integers(-2000, 2000, size=(c_out,)).astype(np.int32)))
        return helper.make_node("QLinearConv", ins, [name], name=name, pads=[pads] * 4)

    def build():
        inits.clear()
        nodes = []
        xq = qparams("x", 0.02, 0.03)
        nodes.append(helper.make_node("QuantizeLinear", ["image", *xq], ["xq"], name="quantize"))
        q1 = qparams("c1", 0.02, 0.04)
        nodes.append(conv("xq", xq, 3, 8, 3, q1, "c1"))
        nodes.append(helper.make_node("MaxPool", ["c1"], ["p1"], name="pool", kernel_shape=[2, 2], strides=[2, 2]))
        q2 = qparams("c2", 0.02, 0.04)
        nodes.append(conv("p1", q1, 8, 8, 3, q2, "c2"))
        qa = qparams("res", 0.03, 0.05)
        nodes.append(helper.make_node("QLinearAdd", ["c2", *q2, "p1", *q1, *qa], ["res"], name="residual", domain=MS))
        q3 = qparams("c3", 0.02, 0.04)
        nodes.append(conv("res", qa, 8, 4, 1, q3, "c3", pads=0, bias=False))
        qs = qparams("sig", 0.003, 0.005)
        nodes.append(helper.make_node("QLinearSigmoid", ["c3", *q3, *qs], ["sig"], name="gate", domain=MS))
        qc = qparams("cat", 0.03, 0.05)
        nodes.append(helper.make_node("QLinearConcat", [*qc, "res", *qa, "sig", *qs], ["cat"], name="concat", axis=1, domain=MS))
        qg = qparams("gap", 0.01, 0.02)
        nodes.append(helper.make_node("QLinearGlobalAveragePool", ["cat", *qc, *qg], ["gap"], name="gap", domain=MS))
        nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"))
        w = init("fc_w", r.integers(-127, 128, size=(12, 5)).astype(i8))
        fq = (init("fc_w_scale", np.float32(0.01)), init("fc_w_zp", np.array(0, dtype=i8)))
        qf = qparams("fc", 0.05, 0.1)
        nodes.append(helper.make_node("QLinearMatMul", ["flat", *qg, w, *fq, *qf], ["fc"], name="fc"))
        nodes.append(helper.make_node("DequantizeLinear", ["fc", *qf], ["logits"], name="dequantize"))
        nodes.append(helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1))
        return nodes, list(inits)

    image = r.uniform(-1.0, 1.5, size=(2, 3, 12, 12)).astype(np.float32)
    return [GraphCase(name, "QOperator model", [("image", image, False)], [("probs", F32), ("res", TensorProto.UINT8)], build)]


def fused_conv_cases():
    """com.microsoft's FusedConv (ONNX Runtime's Conv + activation, in models its optimizer saved): each
    activation with its parameters, a residual Z, groups and strides, opsets before and after Clip took
    its bounds as inputs."""
    cases = []

    def fused(name, x, w, act, params=None, z=False, attrs=None, opset=17):
        r = rng(name)
        ins = [("X", values(r, x), False), ("W", values(r, w, lo=-0.5, hi=0.5), True), ("B", values(r, (w[0],), lo=-0.5, hi=0.5), True)]
        a = {"activation": act}
        a.update(attrs or {})
        if params:
            a["activation_params"] = params
        if z:
            stride = (attrs or {}).get("strides", [1, 1])[0]
            ins.append(("Z", values(r, (x[0], w[0], (x[2] - w[2] + 2 * (attrs or {}).get("pads", [0])[0]) // stride + 1,
                                        (x[3] - w[3] + 2 * (attrs or {}).get("pads", [0])[0]) // stride + 1)), False))
        cases.append(Case(name, "FusedConv", ins, [("Y", F32)], a, opset=opset))

    fused("fused_conv_relu_z", (1, 3, 6, 6), (4, 3, 3, 3), "Relu", z=True, attrs={"pads": [1, 1, 1, 1]})
    fused("fused_conv_leaky_relu_group_stride", (2, 4, 7, 7), (6, 2, 3, 3), "LeakyRelu", [0.1],
          attrs={"group": 2, "strides": [2, 2]})
    fused("fused_conv_clip", (1, 2, 5, 5), (3, 2, 1, 1), "Clip", [0.0, 6.0])
    fused("fused_conv_clip_opset10", (1, 2, 5, 5), (3, 2, 3, 3), "Clip", [-1.0, 1.0], opset=10)
    fused("fused_conv_hard_sigmoid", (1, 3, 4, 4), (2, 3, 3, 3), "HardSigmoid", [0.2, 0.5], attrs={"pads": [1, 1, 1, 1]})
    fused("fused_conv_sigmoid", (1, 3, 4, 4), (2, 3, 2, 2), "Sigmoid")
    return cases


def fused_gemm_cases():
    """com.microsoft's FusedGemm (ONNX Runtime's Gemm + activation, in models its optimizer saved): each
    activation with its activation_* parameters (given or defaulted), transposes, alpha, beta, with and
    without C."""
    cases = []

    def fg(name, m, k, n, act, params=None, trans_a=0, trans_b=0, c="row", attrs=None):
        r = rng(name)
        ins = [("A", values(r, (k, m) if trans_a else (m, k)), False),
               ("B", values(r, (n, k) if trans_b else (k, n), lo=-0.5, hi=0.5), True)]
        if c:
            ins.append(("C", values(r, {"row": (n,), "full": (m, n), "scalar": ()}[c]), True))
        a = {"activation": act, "transA": trans_a, "transB": trans_b}
        a.update({"activation_" + key: v for key, v in (params or {}).items()})
        a.update(attrs or {})
        cases.append(Case(name, "FusedGemm", ins, [("Y", F32)], a))

    fg("fused_gemm_relu", 4, 6, 5, "Relu")
    fg("fused_gemm_leaky_relu_trans_b", 3, 8, 4, "LeakyRelu", {"alpha": 0.2}, trans_b=1)
    fg("fused_gemm_sigmoid_full_c_alpha_beta", 5, 4, 3, "Sigmoid", c="full", attrs={"alpha": 0.5, "beta": 2.0})
    fg("fused_gemm_tanh_trans_a_no_c", 4, 3, 6, "Tanh", trans_a=1, c=None)
    fg("fused_gemm_hard_sigmoid", 2, 5, 4, "HardSigmoid", {"alpha": 0.3, "beta": 0.4}, c="scalar")
    fg("fused_gemm_elu", 3, 4, 5, "Elu", {"alpha": 0.8})
    fg("fused_gemm_selu", 3, 4, 5, "Selu", {"alpha": 1.5, "gamma": 1.1})
    fg("fused_gemm_softplus", 3, 4, 5, "Softplus")
    return cases


def fused_matmul_cases():
    """com.microsoft's FusedMatMul (ONNX Runtime's MatMul + Transpose + scale fusion): attention scores
    (Q K^T times 1/sqrt(H), 4-D), a transposed A, batch broadcasting, float16, declared or undeclared ranks."""
    cases = []

    def fm(name, a, b, attrs, dt=np.float32, declare=True, opset=17):
        r = rng(name)
        ins = [("A", values(r, a, dt), False), ("B", values(r, b, dt), False)]
        case = Case(name, "FusedMatMul", ins, [("Y", F16 if dt == np.float16 else F32)], attrs, opset=opset)
        if not declare:  # the graph inputs without shapes: the composition cannot know their ranks
            model = case.model
            def undeclared():
                m = model()
                for v in m.graph.input:
                    v.type.tensor_type.ClearField("shape")
                return m
            case.model = undeclared
        cases.append(case)

    fm("fused_matmul_attention_scores", (2, 3, 5, 8), (2, 3, 6, 8), {"transB": 1, "alpha": 0.35355339})
    fm("fused_matmul_trans_a_broadcast", (4, 3), (2, 4, 5), {"transA": 1, "alpha": 2.0})
    fm("fused_matmul_both_undeclared_ranks", (2, 6, 4), (2, 5, 6), {"transA": 1, "transB": 1}, declare=False)
    fm("fused_matmul_float16_opset13", (3, 4), (5, 4), {"transB": 1, "alpha": 0.5}, dt=np.float16, opset=13)
    return cases


def optimized_bert_cases():
    """A two-layer BERT as ONNX Runtime's transformer optimizer saves it (opset 12): EmbedLayerNormalization,
    Attention with packed QKV weights and the mask's per-sequence counts, SkipLayerNormalization, MatMul and
    BiasGelu / com.microsoft Gelu, against ONNX Runtime end to end."""
    name = "ort_optimized_bert"
    r = rng(name)
    B, S, H, N, V, FF = 2, 6, 16, 2, 40, 32
    inits = []

    def init(n, a):
        inits.append(numpy_helper.from_array(np.asarray(a), n))
        return n

    def w(n, shape, scale=0.2):
        return init(n, values(r, shape, lo=-scale, hi=scale))

    def build():
        inits.clear()
        nodes = [helper.make_node("EmbedLayerNormalization",
                                  ["input_ids", "segment_ids", w("word", (V, H), 1.0), w("pos", (S, H), 1.0), w("seg", (2, H), 1.0),
                                   init("emb_gamma", values(r, (H,), lo=0.8, hi=1.2)), w("emb_beta", (H,)), "mask"],
                                  ["emb", "mask_index"], name="embeddings", domain=MS, epsilon=1e-12)]
        h = "emb"
        for layer in range(2):
            p = f"l{layer}_"
            nodes.append(helper.make_node("Attention", [h, w(p + "qkv_w", (H, 3 * H)), w(p + "qkv_b", (3 * H,)), "mask_index"],
                                          [p + "attn"], name=p + "attention", domain=MS, num_heads=N))
            nodes.append(helper.make_node("MatMul", [p + "attn", w(p + "o_w", (H, H))], [p + "o"], name=p + "out_proj"))
            nodes.append(helper.make_node("SkipLayerNormalization",
                                          [p + "o", h, init(p + "ln1_g", values(r, (H,), lo=0.8, hi=1.2)), w(p + "ln1_b", (H,)),
                                           w(p + "o_b", (H,))], [p + "ln1"], name=p + "skip_ln1", domain=MS, epsilon=1e-12))
            nodes.append(helper.make_node("MatMul", [p + "ln1", w(p + "ff1_w", (H, FF))], [p + "ff1"], name=p + "ff1"))
            if layer == 0:
                nodes.append(helper.make_node("BiasGelu", [p + "ff1", w(p + "ff1_b", (FF,))], [p + "act"], name=p + "gelu", domain=MS))
            else:
                nodes.append(helper.make_node("Add", [p + "ff1", w(p + "ff1_b", (FF,))], [p + "ff1b"], name=p + "ff1_bias"))
                nodes.append(helper.make_node("Gelu", [p + "ff1b"], [p + "act"], name=p + "gelu", domain=MS))
            nodes.append(helper.make_node("MatMul", [p + "act", w(p + "ff2_w", (FF, H))], [p + "ff2"], name=p + "ff2"))
            nodes.append(helper.make_node("SkipLayerNormalization",
                                          [p + "ff2", p + "ln1", init(p + "ln2_g", values(r, (H,), lo=0.8, hi=1.2)), w(p + "ln2_b", (H,)),
                                           w(p + "ff2_b", (H,))], [p + "out"], name=p + "skip_ln2", domain=MS, epsilon=1e-12))
            h = p + "out"
        nodes.append(helper.make_node("Identity", [h], ["last_hidden_state"], name="output"))
        return nodes, list(inits)

    ids = r.integers(0, V, size=(B, S)).astype(np.int32)
    segments = np.concatenate([np.zeros((B, S // 2)), np.ones((B, S - S // 2))], axis=1).astype(np.int32)
    mask = np.ones((B, S), dtype=np.int32)
    mask[1, 4:] = 0  # the second sequence is padded
    return [GraphCase(name, "ORT-optimized BERT", [("input_ids", ids, False), ("segment_ids", segments, False), ("mask", mask, False)],
                      [("last_hidden_state", F32)], build, opset=12)]


def random_trees(r, n_trees, n_features, n_targets, modes, depth=3, nan_track=True, weights_per_leaf=(1, 2),
                 targets_used=None, weight_range=(-1, 1)):
    """Random trees in TreeEnsembleRegressor's layout (nodes named by tree and node id, root first). Splits and
    the inputs' values lie on a grid of quarters, so that ties (LEQ against LT, EQ, NEQ) happen."""
    a = {k: [] for k in ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes", "nodes_values",
                         "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true",
                         "target_treeids", "target_nodeids", "target_ids", "target_weights")}
    for tree in range(n_trees):
        nodes = []

        def build(d):
            nid = len(nodes)
            nodes.append(None)
            if d == depth or (d > 0 and r.random() < 0.3):
                nodes[nid] = ("LEAF", 0, 0.0, 0, 0, 0)
                k = int(r.integers(weights_per_leaf[0], weights_per_leaf[1] + 1))
                used = targets_used if targets_used is not None else list(range(n_targets))
                for t in r.choice(used, size=min(k, len(used)), replace=False):
                    a["target_treeids"].append(tree)
                    a["target_nodeids"].append(nid)
                    a["target_ids"].append(int(t))
                    a["target_weights"].append(float(np.float32(r.uniform(*weight_range))))
                return nid
            mode = str(modes[int(r.integers(len(modes)))])
            split = float(r.integers(-4, 5)) / 4
            miss = int(r.random() < 0.5) if nan_track else 0
            t, f = build(d + 1), build(d + 1)
            nodes[nid] = (mode, int(r.integers(n_features)), split, t, f, miss)
            return nid
        build(0)
        for nid, (mode, feat, split, t, f, miss) in enumerate(nodes):
            for k, v in zip(("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes", "nodes_values",
                             "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true"),
                            (tree, nid, feat, mode, split, t, f, miss)):
                a[k].append(v)
    if not nan_track:
        del a["nodes_missing_value_tracks_true"]
    return a


def grid_values(r, shape, dtype=np.float32, nan=0.1):
    """Inputs on the splits' grid of quarters, some NaN (missing values)."""
    x = (r.integers(-5, 6, size=shape) / 4).astype(np.float64)
    if nan:
        x[r.random(shape) < nan] = np.nan
    return x.astype(dtype)


def ml_cases():
    """ai.onnx.ml's numeric operators (CPU kernels only; in a WebGPU session each node falls back alone)."""
    cases = []
    ML = "ai.onnx.ml"
    all_modes = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]

    def regressor(name, n_trees=4, n_features=5, n_targets=2, agg="SUM", post="NONE", base=None, dtype=np.float32,
                  rows=12, modes=all_modes, as_tensor=False, nan=0.1, weights_per_leaf=(1, 2)):
        r = rng(name)
        a = random_trees(r, n_trees, n_features, n_targets, modes, weights_per_leaf=weights_per_leaf)
        a.update(n_targets=n_targets, aggregate_function=agg, post_transform=post)
        if base is not None:
            a["base_values"] = base
        if as_tensor:  # opset 3's double-precision attributes
            for k in ("nodes_values", "target_weights", "base_values"):
                if k in a:
                    a[k + "_as_tensor"] = numpy_helper.from_array(np.array(a.pop(k), np.float64), k)
        x = grid_values(r, (rows, n_features), dtype, nan if np.issubdtype(dtype, np.floating) else 0)
        cases.append(Case(name, "TreeEnsembleRegressor", [("X", x, False)], [("Y", F32)], a, domain=ML,
                          domain_opset=3 if as_tensor else 1))

    regressor("ml_tree_ensemble_regressor_sum", base=[0.5, -0.25])
    regressor("ml_tree_ensemble_regressor_average_softmax", n_targets=3, agg="AVERAGE", post="SOFTMAX", n_trees=5)
    regressor("ml_tree_ensemble_regressor_min_one_target", n_targets=1, agg="MIN", base=[0.125], weights_per_leaf=(1, 1))
    regressor("ml_tree_ensemble_regressor_max_logistic", n_targets=2, agg="MAX", post="LOGISTIC")
    regressor("ml_tree_ensemble_regressor_softmax_zero", n_targets=4, post="SOFTMAX_ZERO", weights_per_leaf=(1, 1))
    regressor("ml_tree_ensemble_regressor_float64_as_tensor", dtype=np.float64, as_tensor=True, base=[1.0, 2.0])
    regressor("ml_tree_ensemble_regressor_leq_eq_one_target", n_targets=1, weights_per_leaf=(1, 1),
              modes=["BRANCH_LEQ", "BRANCH_EQ"], nan=0)
    regressor("ml_tree_ensemble_regressor_many_trees", n_trees=40, n_features=8, n_targets=3, rows=64)

    def classifier(name, labels, n_trees=4, n_features=5, post="NONE", base=None, used=None, weight_range=(-1, 1),
                   weights_per_leaf=(1, 2)):
        r = rng(name)
        a = random_trees(r, n_trees, n_features, len(labels), all_modes, weights_per_leaf=weights_per_leaf,
                         targets_used=used, weight_range=weight_range)
        a = {k.replace("target_", "class_"): v for k, v in a.items()}
        a.update(classlabels_int64s=labels, post_transform=post)
        if base is not None:
            a["base_values"] = base
        cases.append(Case(name, "TreeEnsembleClassifier", [("X", grid_values(r, (12, n_features)), False)],
                          [("Y", I64), ("Z", F32)], a, domain=ML))

    classifier("ml_tree_ensemble_classifier_multiclass_softmax", [0, 1, 2], post="SOFTMAX")
    classifier("ml_tree_ensemble_classifier_multiclass_base", [5, 6, 7, 8], base=[0.1, -0.2, 0.3, 0.0], weights_per_leaf=(1, 1))
    # Two classes with weights for the second only (ONNX Runtime's binary case): a probability (positive
    # weights, a random forest's) or a margin (signed weights, gradient boosting's) under LOGISTIC.
    classifier("ml_tree_ensemble_classifier_binary_probability", [10, 20], used=[1], weight_range=(0, 0.25), weights_per_leaf=(1, 1))
    classifier("ml_tree_ensemble_classifier_binary_margin_logistic", [0, 1], used=[1], post="LOGISTIC", weights_per_leaf=(1, 1))
    # scikit-learn's gradient boosting as converters write it: one score (class id 0), its prior as the one base value.
    classifier("ml_tree_ensemble_classifier_binary_margin_base", [0, 1], used=[0], base=[0.25], post="LOGISTIC",
               weights_per_leaf=(1, 1))
    classifier("ml_tree_ensemble_classifier_binary_both_classes", [0, 1], post="SOFTMAX")

    def linear(name, labels, n_classes, post="NONE"):
        r = rng(name)
        cases.append(Case(name, "LinearClassifier", [("X", values(r, (6, 4)), False)], [("Y", I64), ("Z", F32)],
                          dict(coefficients=values(r, (n_classes * 4,)).tolist(), intercepts=values(r, (n_classes,)).tolist(),
                               classlabels_ints=labels, post_transform=post), domain=ML))

    linear("ml_linear_classifier_multiclass_softmax", [1, 2, 3], 3, "SOFTMAX")
    linear("ml_linear_classifier_two_rows_logistic", [0, 1], 2, "LOGISTIC")
    linear("ml_linear_classifier_one_row", [3, 7], 1)
    linear("ml_linear_classifier_one_row_logistic", [3, 7], 1, "LOGISTIC")

    r = rng("ml_imputer")
    xi = values(r, (5, 3))
    xi[r.random((5, 3)) < 0.3] = np.nan
    cases.append(Case("ml_imputer_nan_per_feature", "Imputer", [("X", xi, False)], [("Y", F32)],
                      dict(imputed_value_floats=[1.5, -2.0, 0.25], replaced_value_float=float("nan")), domain=ML))
    cases.append(Case("ml_imputer_int64", "Imputer", [("X", r.integers(-2, 3, size=(4, 3)), False)], [("Y", I64)],
                      dict(imputed_value_int64s=[99], replaced_value_int64=-1), domain=ML))
    r = rng("ml_one_hot_encoder")
    cases.append(Case("ml_one_hot_encoder_int64", "OneHotEncoder", [("X", r.integers(0, 9, size=(4, 3)), False)],
                      [("Y", F32)], dict(cats_int64s=[1, 3, 5, 7]), domain=ML))
    cases.append(Case("ml_one_hot_encoder_float", "OneHotEncoder", [("X", (r.integers(-8, 32, size=(6,)) / 4).astype(np.float32), False)],
                      [("Y", F32)], dict(cats_int64s=[0, 2, 4, -1]), domain=ML))  # fractions: converted to integers first
    r = rng("ml_label_encoder")
    cases.append(Case("ml_label_encoder_int64_to_float", "LabelEncoder", [("X", r.integers(0, 8, size=(3, 4)), False)],
                      [("Y", F32)], dict(keys_int64s=[1, 2, 5, 7], values_floats=[0.5, -1.5, 2.25, 8.0], default_float=-3.0),
                      domain=ML, domain_opset=2))
    cases.append(Case("ml_label_encoder_float_to_int64", "LabelEncoder",
                      [("X", np.array([0.5, 1.0, -2.5, 3.0, 1.0, 7.25], np.float32), False)], [("Y", I64)],
                      dict(keys_floats=[0.5, 1.0, 3.0], values_int64s=[10, 20, 30]), domain=ML, domain_opset=2))
    cases.append(Case("ml_label_encoder_tensors_float64_to_int64", "LabelEncoder",
                      [("X", np.array([[0.5, 1.0], [2.0, -1.0]], np.float64), False)], [("Y", I64)],
                      dict(keys_tensor=numpy_helper.from_array(np.array([0.5, 2.0]), "k"),
                           values_tensor=numpy_helper.from_array(np.array([7, 9], np.int64), "v"),
                           default_tensor=numpy_helper.from_array(np.array([-5], np.int64), "d")),
                      domain=ML, domain_opset=4, opset=21))

    r = rng("ml_svm_regressor")
    sv = values(r, (5, 4))
    for kernel, params in (("RBF", [0.5, 0.0, 0.0]), ("POLY", [0.25, 1.0, 3.0]), ("SIGMOID", [0.3, -0.2, 0.0]), ("LINEAR", [0.0, 0.0, 0.0])):
        cases.append(Case(f"ml_svm_regressor_{kernel.lower()}", "SVMRegressor", [("X", values(r, (6, 4)), False)], [("Y", F32)],
                          dict(kernel_type=kernel, kernel_params=params, n_supports=5, support_vectors=sv.flatten().tolist(),
                               coefficients=values(r, (5,)).tolist(), rho=[0.125]), domain=ML))
    cases.append(Case("ml_svm_regressor_linear_form_one_class", "SVMRegressor", [("X", values(r, (6, 4)), False)], [("Y", F32)],
                      dict(n_supports=0, kernel_params=[0.0, 0.0, 0.0], coefficients=values(r, (4,)).tolist(), rho=[-0.25],
                           one_class=1), domain=ML))
    # SVMClassifier: libsvm's one-against-one (support vectors per class, a decision per pair of classes, votes),
    # with and without Platt's probabilities (pairwise coupling), two classes' single decision written as two,
    # and the linear form (no support vectors: a score per class).
    def svc(name, labels, per_class, kernel, params, proba=False, post="NONE", rows=7, dtype=np.float32):
        r = rng(name)
        c, v, f = len(labels), sum(per_class), 4
        a = dict(classlabels_ints=labels, vectors_per_class=per_class, kernel_type=kernel, kernel_params=params,
                 support_vectors=values(r, (v, f)).flatten().tolist(), coefficients=values(r, (c - 1, v)).flatten().tolist(),
                 rho=values(r, (c * (c - 1) // 2,)).tolist(), post_transform=post)
        if proba:
            a.update(prob_a=(-1.0 - 2 * r.random(c * (c - 1) // 2)).tolist(), prob_b=(0.2 * values(r, (c * (c - 1) // 2,))).tolist())
        x = values(r, (rows, f)).astype(dtype)
        cases.append(Case(name, "SVMClassifier", [("X", x, False)], [("Y", I64), ("Z", F32)], a, domain=ML))
    svc("ml_svm_classifier_rbf_3", [0, 1, 2], [2, 3, 2], "RBF", [0.7, 0.0, 0.0])
    svc("ml_svm_classifier_poly_3_proba", [0, 1, 2], [3, 1, 2], "POLY", [0.5, 1.0, 2.0], proba=True)
    svc("ml_svm_classifier_sigmoid_4_proba_labels", [7, 3, 11, 5], [2, 2, 1, 3], "SIGMOID", [0.4, 0.1, 0.0], proba=True,
        dtype=np.float64)
    svc("ml_svm_classifier_linear_3_softmax", [1, 2, 3], [2, 2, 2], "LINEAR", [0.0, 0.0, 0.0], post="SOFTMAX")
    svc("ml_svm_classifier_rbf_2", [4, 9], [3, 2], "RBF", [0.5, 0.0, 0.0])
    svc("ml_svm_classifier_rbf_2_logistic", [4, 9], [3, 2], "RBF", [0.5, 0.0, 0.0], post="LOGISTIC")
    svc("ml_svm_classifier_rbf_2_softmax", [4, 9], [3, 2], "RBF", [0.5, 0.0, 0.0], post="SOFTMAX")
    svc("ml_svm_classifier_sigmoid_2_softmax_zero", [0, 1], [2, 2], "SIGMOID", [0.5, 0.0, 0.0], post="SOFTMAX_ZERO")
    svc("ml_svm_classifier_poly_2_proba", [0, 1], [2, 3], "POLY", [0.5, 0.5, 3.0], proba=True)
    r = rng("ml_svm_classifier_linear_form")
    for c, signs, post in ((3, "mixed", "SOFTMAX"), (2, "mixed", "NONE"), (2, "positive", "NONE"), (2, "mixed", "LOGISTIC")):
        w = values(r, (c, 4))
        if signs == "positive":
            w = np.abs(w) * 0.2
        cases.append(Case(f"ml_svm_classifier_linear_form_{c}_{signs}_{post.lower()}", "SVMClassifier",
                          [("X", values(r, (7, 4)), False)], [("Y", I64), ("Z", F32)],
                          dict(classlabels_ints=list(range(10, 10 + c)), coefficients=w.flatten().tolist(), rho=[0.125],
                               kernel_type="RBF", kernel_params=[0.5, 0.0, 0.0], post_transform=post), domain=ML))
    cases.append(Case("ml_svm_classifier_rbf_3_int64", "SVMClassifier", [("X", r.integers(-2, 3, size=(5, 4)), False)],
                      [("Y", I64), ("Z", F32)],
                      dict(classlabels_ints=[0, 1, 2], vectors_per_class=[1, 2, 1], kernel_type="RBF", kernel_params=[0.25, 0.0, 0.0],
                           support_vectors=r.integers(-2, 3, size=(4, 4)).astype(float).flatten().tolist(),
                           coefficients=values(r, (2, 4)).flatten().tolist(), rho=values(r, (3,)).tolist()), domain=ML))
    r = rng("ml_feature_vectorizer")
    cases.append(Case("ml_feature_vectorizer", "FeatureVectorizer",
                      [("A", values(r, (3, 2)), False), ("B", values(r, (3, 4)), False), ("C", values(r, (3, 1)), False)],
                      [("Y", F32)], dict(inputdimensions=[2, 3, 2]), domain=ML))  # B cut to 3 columns, C padded to 2

    # TreeEnsemble (opset 5): one tree with set membership, missing values and both leaf kinds of children.
    r = rng("ml_tree_ensemble_v5")
    v5 = dict(nodes_featureids=[0, 1, 2, 1], nodes_modes=numpy_helper.from_array(np.array([6, 0, 4, 3], np.uint8), "m"),
              nodes_splits=numpy_helper.from_array(np.array([0, 0.25, -0.5, 0.5], np.float32), "s"),
              nodes_truenodeids=[1, 0, 3, 1], nodes_trueleafs=[0, 1, 0, 1],
              nodes_falsenodeids=[2, 1, 2, 2], nodes_falseleafs=[0, 1, 1, 1],
              nodes_missing_value_tracks_true=[0, 1, 0, 1],
              membership_values=numpy_helper.from_array(np.array([-1, 0, 1, np.nan], np.float32), "mv"),
              leaf_targetids=[0, 1, 0, 2], leaf_weights=numpy_helper.from_array(np.array([1, 10, 100, 1000], np.float32), "w"),
              n_targets=3, tree_roots=[0], aggregate_function=1, post_transform=0)
    # The feature tested for membership holds whole numbers: ONNX Runtime tests a float's membership after
    # converting it to an integer (its categorical splits), the ONNX reference without.
    xm = grid_values(r, (16, 3))
    xm[:, 0] = np.floor(xm[:, 0])
    cases.append(Case("ml_tree_ensemble_v5_member", "TreeEnsemble", [("X", xm, False)], [("Y", F32)],
                      v5, domain=ML, domain_opset=5, opset=21))
    xd = grid_values(rng("ml_tree_ensemble_v5_f64"), (16, 3), np.float64)
    xd[:, 0] = np.floor(xd[:, 0])
    v5d = dict(v5, leaf_weights=numpy_helper.from_array(np.array([0.5, -1.5, 2.25, 0.75]), "w"),
               nodes_splits=numpy_helper.from_array(np.array([0, 0.25, -0.5, 0.5]), "s"),
               membership_values=numpy_helper.from_array(np.array([-1, 0, 1, np.nan]), "mv"),
               tree_roots=[0, 2], aggregate_function=0)
    cases.append(Case("ml_tree_ensemble_v5_float64_two_roots_average", "TreeEnsemble",
                      [("X", xd, False)],
                      [("Y", TensorProto.DOUBLE)], v5d, domain=ML, domain_opset=5, opset=21))

    r = rng("ml_linear_regressor")
    cases.append(Case("ml_linear_regressor", "LinearRegressor", [("X", values(r, (6, 4)), False)], [("Y", F32)],
                      dict(coefficients=values(r, (8,)).tolist(), intercepts=[0.5, -1.0], targets=2), domain=ML))
    cases.append(Case("ml_linear_regressor_one_target", "LinearRegressor", [("X", values(r, (5, 3)), False)], [("Y", F32)],
                      dict(coefficients=values(r, (3,)).tolist()), domain=ML))
    r = rng("ml_scaler")
    cases.append(Case("ml_scaler_per_feature", "Scaler", [("X", values(r, (4, 3)), False)], [("Y", F32)],
                      dict(offset=[0.5, -1.0, 2.0], scale=[2.0, 0.5, -1.0]), domain=ML))
    cases.append(Case("ml_scaler_one_value_int64", "Scaler", [("X", r.integers(-9, 10, size=(3, 5)), False)], [("Y", F32)],
                      dict(offset=[1.5], scale=[0.25]), domain=ML))
    r = rng("ml_normalizer")
    xz = values(r, (4, 5))
    xz[2] = 0  # a row whose norm is 0: copied
    for norm in ("MAX", "L1", "L2"):
        cases.append(Case(f"ml_normalizer_{norm.lower()}", "Normalizer", [("X", xz, False)], [("Y", F32)], dict(norm=norm),
                          domain=ML))
    cases.append(Case("ml_normalizer_l2_int32_one_row", "Normalizer", [("X", np.array([3, -4, 0], np.int32), False)],
                      [("Y", F32)], dict(norm="L2"), domain=ML))
    r = rng("ml_binarizer")
    cases.append(Case("ml_binarizer", "Binarizer", [("X", grid_values(r, (3, 4), nan=0), False)], [("Y", F32)],
                      dict(threshold=0.25), domain=ML))  # values on a grid of quarters: some equal the threshold
    r = rng("ml_array_feature_extractor")
    cases.append(Case("ml_array_feature_extractor_rank3", "ArrayFeatureExtractor",
                      [("X", values(r, (2, 3, 5)), False), ("Y", np.array([4, 0, 4], np.int64), False)], [("Z", F32)],
                      domain=ML))
    cases.append(Case("ml_array_feature_extractor_rank1_int64", "ArrayFeatureExtractor",
                      [("X", r.integers(0, 100, size=(6,)), False), ("Y", np.array([[5, 1]], np.int64), False)],
                      [("Z", I64)], domain=ML))
    return cases


ALL = (norm_cases() + gelu_cases() + rotary_cases() + block_quant_cases() + gqa_cases() + mha_cases() +
       qlinear_cases() + qdq_cases() + qoperator_model_cases() + optimized_bert_cases() + fused_conv_cases() +
       fused_gemm_cases() + fused_matmul_cases() + ml_cases())


# ---- Running ONNX Runtime ------------------------------------------------------------------------------

def default_peer():
    sys.path.insert(0, os.path.join(REPO, "bench"))
    import compare  # noqa: E402  (builds bench/.peer from /work/shared/peer)
    return compare.ensure_peer()


def write_case(case, peer):
    out = os.path.join(os.path.dirname(HERE), case.suite, case.name)
    data = os.path.join(out, "test_data_set_0")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(data)
    model_path = os.path.join(out, "model.onnx")
    onnx.save(case.model(), model_path)
    k = 0
    for n, a, init in case.inputs:
        if n and not init:
            onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(data, f"input_{k}.pb"))
            k += 1
    with tempfile.TemporaryDirectory() as tmp:
        tool = peer if case.ep == "cpu" else os.path.join(os.path.dirname(peer), "run_env.sh")
        cmd = [tool, model_path, "--ep", case.ep, "--input-dir", data, "--out-dir", tmp, "--runs", "1",
               "--warmup", "0", "--json"]
        if case.ep == "webgpu":
            cmd += ["--io", "host"]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            sys.exit(f"{case.name}: ort_peer failed ({p.returncode}): {p.stdout[-2000:]} {p.stderr[-2000:]}")
        for i in range(k):  # the peer ran on exactly our inputs
            ours = onnx.load_tensor(os.path.join(data, f"input_{i}.pb"))
            theirs = onnx.load_tensor(os.path.join(tmp, f"input_{i}.pb"))
            a, b = numpy_helper.to_array(ours), numpy_helper.to_array(theirs)
            if not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
                sys.exit(f"{case.name}: ort_peer ran on other values of input {i}")
        n_out = sum(1 for n, _ in case.outputs if n)
        for i in range(n_out):
            shutil.copy(os.path.join(tmp, f"output_{i}.pb"), os.path.join(data, f"output_{i}.pb"))
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs)
    print(f"{case.name}: {case.domain or 'ai.onnx'}.{case.op}, ORT {case.ep} EP, {size} bytes")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", help="the ort_peer binary (default: bench/.peer, built as bench/compare.py does)")
    ap.add_argument("--only", help="only the cases whose name matches this regex")
    args = ap.parse_args()
    peer = os.path.abspath(args.peer) if args.peer else default_peer()
    for case in ALL:
        if args.only and not re.search(args.only, case.name):
            continue
        write_case(case, peer)


if __name__ == "__main__":
    main()
