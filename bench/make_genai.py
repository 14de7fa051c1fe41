#!/usr/bin/python3
"""A GenAI-style LLM decoder: the graph ONNX Runtime's GenAI model builder writes for a Llama with int4
weights and WebGPU graph capture, with random weights, built with the onnx Python API (onnx 1.12 here,
1.23 on the device machine; numpy only).

What the builder writes (onnxruntime-genai src/python/py/models/builders/base.py, with
`-e webgpu -p int4 --extra_options enable_webgpu_graph=true`) and this script reproduces:
  inputs   input_ids int64 [batch_size, sequence_length]
           attention_mask int64 [batch_size, total_sequence_length]
           past_key_values.N.key / .value float32 [batch_size, kv_heads, past_sequence_length, head_size]
  outputs  logits float32 [batch_size, sequence_length, vocab]
           present.N.key / .value float32 [batch_size, kv_heads, total_sequence_length, head_size]
  The mask becomes GroupQueryAttention's lengths on the GPU (the builder's graph-capture variant, no Shape
  op): Cast(int32) -> ReduceSum(axis 1) -> Sub 1 = seqlens_k; ReduceMax of the sums = total_sequence_length.
  Rotary is inside GroupQueryAttention (do_rotary=1, cos_cache/sin_cache [max_len, head_size/2]), so there is
  no position_ids input (the builder drops it then). Q, K and V come packed from one MatMulNBits.
  Per layer: SimplifiedLayerNormalization (layer 0) or SkipSimplifiedLayerNormalization (the residual sum
  from its output 3), MatMulNBits qkv, GroupQueryAttention, MatMulNBits o, SkipSimplifiedLayerNormalization,
  MatMulNBits gate and up, SiLU (Sigmoid, Mul), Mul, MatMulNBits down; then the final
  SkipSimplifiedLayerNormalization and the lm_head MatMulNBits. The embedding is a float Gather.
  MatMulNBits: bits 4, block_size 32, no zero points (the default 8), scales [N * blocks], accuracy_level 4
  (the builder's default for cpu and webgpu; --accuracy-level 0 for float activations everywhere).

The KV cache is a static max-length buffer, as GenAI runs it with graph capture (past_present_share_buffer):
the caller allocates past [1, kv_heads, max_len, head_size] once and feeds each step's present back as the
next past; the attention mask is [1, max_len] with ones for the first total positions, zeros after (GenAI's
static mask), so every step has the same shapes. seqlens_k = total - 1 says where the new token's K/V go.

  /usr/bin/python3 bench/make_genai.py --size tiny --out bench/models/genai/tiny.onnx
  python3 bench/make_genai.py --size full --out bench/models/genai/full.onnx     # ~0.9 GB, one file

Sizes: tiny (2 layers, hidden 64, 4 heads of 16, 2 kv heads, intermediate 128, vocab 512, max_len 64: runs
on SwiftShader in a test) and full (a ~1B Llama-style: 16 layers, hidden 2048, 32 heads of 64, 8 kv heads,
intermediate 8192, vocab 32000, max_len 2048). Weights come from numpy's RandomState(seed), so a model made
on either machine is the same.
"""
import argparse
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SIZES = {
    "tiny": dict(layers=2, hidden=64, heads=4, kv_heads=2, intermediate=128, vocab=512, max_len=64),
    "full": dict(layers=16, hidden=2048, heads=32, kv_heads=8, intermediate=8192, vocab=32000, max_len=2048),
}
BITS, BLOCK = 4, 32
OPSET = 17  # what Debian's onnx 1.12 checks; com.microsoft 1
EPS = 1e-5


class Builder:
    def __init__(self, seed, accuracy_level):
        self.accuracy_level = accuracy_level
        self.rng = np.random.RandomState(seed)
        self.nodes, self.inits = [], []
        self.count = 0

    def name(self, op):
        self.count += 1
        return f"/model/{op}_{self.count}"

    def node(self, op, inputs, outputs=None, domain="", **attrs):
        n = self.name(op)
        outputs = outputs or [n + "/output_0"]
        self.nodes.append(helper.make_node(op, inputs, outputs, name=n, domain=domain or None, **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def init(self, name, array):
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def float_init(self, name, shape, low, high):
        return self.init(name, self.rng.uniform(low, high, size=shape).astype(np.float32))

    def matmul_nbits(self, x, name, K, N):
        """y = x @ W^T with W [N, K] 4-bit block-quantized: random codes (two per byte), scales of random sign
        sized so that y has about x's spread (the codes minus 8 have a standard deviation of about 4.6)."""
        blocks = -(-K // BLOCK)
        blob = BLOCK * BITS // 8
        codes = np.frombuffer(self.rng.bytes(N * blocks * blob), dtype=np.uint8).reshape(N, blocks, blob)
        scale = 1.0 / (4.6 * np.sqrt(K))
        scales = (self.rng.uniform(0.5, 1.5, size=N * blocks) * scale *
                  self.rng.choice([-1.0, 1.0], size=N * blocks)).astype(np.float32)
        b = self.init(name + ".qweight", np.ascontiguousarray(codes))
        s = self.init(name + ".scales", scales)
        return self.node("MatMulNBits", [x, b, s], domain="com.microsoft", K=K, N=N, bits=BITS, block_size=BLOCK,
                         accuracy_level=self.accuracy_level)


def build(size, seed=1, accuracy_level=4, layers=None):
    c = dict(SIZES[size], **({"layers": layers} if layers else {}))
    L, D, N, NKV, I, V, MAX = (c[k] for k in ("layers", "hidden", "heads", "kv_heads", "intermediate", "vocab", "max_len"))
    H = D // N
    b = Builder(seed, accuracy_level)

    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch_size", "total_sequence_length"])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch_size", "sequence_length", V])]
    for i in range(L):
        for kv in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(f"past_key_values.{i}.{kv}", TensorProto.FLOAT,
                                                        ["batch_size", NKV, "past_sequence_length", H]))
            outputs.append(helper.make_tensor_value_info(f"present.{i}.{kv}", TensorProto.FLOAT,
                                                         ["batch_size", NKV, "total_sequence_length", H]))

    # The mask's lengths, on the GPU (the builder's graph-capture variant).
    b.init("/model/constants/INT64/[1]", np.array([1], dtype=np.int64))
    b.init("/model/constants/INT32/[1]", np.array([1], dtype=np.int32))
    mask32 = b.node("Cast", ["attention_mask"], to=TensorProto.INT32)
    sums = b.node("ReduceSum", [mask32, "/model/constants/INT64/[1]"], keepdims=0)
    seqlens_k = b.node("Sub", [sums, "/model/constants/INT32/[1]"])
    total = b.node("ReduceMax", [sums], keepdims=0)

    # Llama-style rotary caches: position * 10000^(-k / (H/2)).
    half = H // 2
    inv_freq = 1.0 / (10000.0 ** (np.arange(half) / half))
    angles = np.outer(np.arange(MAX), inv_freq)
    b.init("cos_cache", np.cos(angles).astype(np.float32))
    b.init("sin_cache", np.sin(angles).astype(np.float32))

    embed = b.float_init("model.embed_tokens.weight", (V, D), -1.0, 1.0)
    x = b.node("Gather", [embed, "input_ids"])
    residual, pending = x, None  # pending: the sublayer output that the next norm adds to the residual
    for i in range(L):
        gamma = b.float_init(f"model.layers.{i}.input_layernorm.weight", (D,), 0.8, 1.2)
        if pending is None:
            h = b.node("SimplifiedLayerNormalization", [residual, gamma], axis=-1, epsilon=EPS, stash_type=1)
        else:
            n = b.name("SkipSimplifiedLayerNormalization")
            outs = [n + "/output_0", "", "", n + "/output_3"]
            b.nodes.append(helper.make_node("SkipSimplifiedLayerNormalization", [pending, residual, gamma], outs, name=n,
                                            domain="com.microsoft", epsilon=EPS))
            h, residual = outs[0], outs[3]
        qkv = b.matmul_nbits(h, f"model.layers.{i}.attn.qkv_proj", D, (N + 2 * NKV) * H)
        n = b.name("GroupQueryAttention")
        attn = n + "/output_0"
        b.nodes.append(helper.make_node(
            "GroupQueryAttention",
            [qkv, "", "", f"past_key_values.{i}.key", f"past_key_values.{i}.value", seqlens_k, total, "cos_cache", "sin_cache"],
            [attn, f"present.{i}.key", f"present.{i}.value"], name=n, domain="com.microsoft",
            num_heads=N, kv_num_heads=NKV, do_rotary=1, rotary_interleaved=0, local_window_size=-1, scale=0.0,
            softcap=0.0))
        o = b.matmul_nbits(attn, f"model.layers.{i}.attn.o_proj", N * H, D)
        gamma = b.float_init(f"model.layers.{i}.post_attention_layernorm.weight", (D,), 0.8, 1.2)
        n = b.name("SkipSimplifiedLayerNormalization")
        outs = [n + "/output_0", "", "", n + "/output_3"]
        b.nodes.append(helper.make_node("SkipSimplifiedLayerNormalization", [o, residual, gamma], outs, name=n,
                                        domain="com.microsoft", epsilon=EPS))
        h, residual = outs[0], outs[3]
        gate = b.matmul_nbits(h, f"model.layers.{i}.mlp.gate_proj", D, I)
        up = b.matmul_nbits(h, f"model.layers.{i}.mlp.up_proj", D, I)
        silu = b.node("Mul", [gate, b.node("Sigmoid", [gate])])
        pending = b.matmul_nbits(b.node("Mul", [silu, up]), f"model.layers.{i}.mlp.down_proj", I, D)
    gamma = b.float_init("model.norm.weight", (D,), 0.8, 1.2)
    n = b.name("SkipSimplifiedLayerNormalization")
    b.nodes.append(helper.make_node("SkipSimplifiedLayerNormalization", [pending, residual, gamma], [n + "/output_0"],
                                    name=n, domain="com.microsoft", epsilon=EPS))
    logits = b.matmul_nbits(n + "/output_0", "lm_head", D, V)
    b.nodes.append(helper.make_node("Identity", [logits], ["logits"], name="/model/logits"))

    graph = helper.make_graph(b.nodes, f"genai_{size}", inputs, outputs, b.inits)
    model = helper.make_model(graph, producer_name="onnxgpu bench/make_genai.py",
                              opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    meta = dict(size=size, seed=seed, layers=L, hidden=D, heads=N, kv_heads=NKV, head_size=H, intermediate=I, vocab=V,
                max_len=MAX, bits=BITS, block_size=BLOCK, accuracy_level=accuracy_level)
    for k, v in meta.items():
        model.metadata_props.add(key=k, value=str(v))
    return model, meta


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="tiny")
    ap.add_argument("--out", required=True, help="model path (.onnx)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--layers", type=int, help="another layer count than the size's (e.g. a full-width model of 2 "
                                               "layers to try the full shapes on SwiftShader)")
    ap.add_argument("--accuracy-level", type=int, default=4, choices=[0, 1, 2, 3, 4],
                    help="MatMulNBits accuracy_level (default 4, what the builder writes for cpu and webgpu: ONNX "
                         "Runtime may then quantize the activations to int8; 0 computes in float)")
    a = ap.parse_args()
    model, meta = build(a.size, a.seed, a.accuracy_level, a.layers)
    # (No onnx.checker: SimplifiedLayerNormalization lives in the default domain, as ONNX Runtime registers it
    # and the builder writes it, but onnx's schemas do not know it.)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    tmp = a.out + ".tmp"
    onnx.save_model(model, tmp)
    os.replace(tmp, a.out)
    weights = sum(int(np.prod(t.dims)) * (1 if t.data_type == TensorProto.UINT8 else 4) for t in model.graph.initializer)
    meta.update(path=a.out, bytes=os.path.getsize(a.out), weight_bytes=weights)
    print(json.dumps(meta))


if __name__ == "__main__":
    sys.exit(main())
