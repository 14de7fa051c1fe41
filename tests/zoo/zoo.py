#!/usr/bin/python3
"""Real architectures as users export them: torchvision's models (Debian's python3-torchvision, their own
random initialisation, no weights downloaded) and torch.nn's, exported by torch.onnx at opset 17, run by
onnxgpu against torch's own outputs.

Usage:
  /usr/bin/python3 tests/zoo/zoo.py make OUT_DIR [NAME ...] [--float16]   export, with inputs and torch's outputs
  /usr/bin/python3 tests/zoo/zoo.py check OUT_DIR NAME ONNXGPU [onnxgpu run options ...]
  /usr/bin/python3 tests/zoo/zoo.py list [--all]

make writes OUT_DIR/<name>/model.onnx and test_data_set_0/{input_K,output_K}.pb (the ONNX backend-test
layout). Its default NAMEs are the ones ctest runs (`list`); `list --all` gives every model here, for a sweep
by hand (docs/models.md has the last one's results). --float16: the exported model converted to float16
(weights, constants, Casts to float, its float inputs and outputs; named <name>_fp16), against torch's
float32 outputs rounded to float16. check runs `ONNXGPU run` on that data set with the options given (e.g. --ep webgpu
--capture --fail-loud --runs 3) and a tolerance scaled to the outputs: |got - want| <= r |want| + a max|want|,
r, a = 1e-3, 1e-5 (float16: 1e-2, 1e-3). Random weights leave some models' outputs far from 1; the scale
keeps the check as tight for them.

What ctest's models bring that the bench's do not: squeezenet1_1 (Concat of 1x1 and 3x3 branches, ceil-mode
MaxPool), shufflenet_v2 (channel shuffle: Reshape, Transpose, Split), regnet_y_400mf (grouped convolutions,
squeeze-and-excitation), lraspp (segmentation: the bilinear Resize back to the image, HardSigmoid), swin_t
(shifted-window attention: Roll as Slice and Concat, masks, a Dropout exported in training mode with ratio
0), convnext_tiny (depthwise 7x7, LayerNorm over channels through Transposes), nn_transformer_functions (torch.nn's
encoder exported with its layers and LayerNorms as model-local functions).
"""

import math
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

OPSET = 17
NAMES = ["squeezenet1_1", "shufflenet_v2", "regnet_y_400mf", "lraspp", "swin_t", "convnext_tiny", "nn_transformer_functions"]


def cases():
    """name -> (the module, a function of no arguments giving its example inputs[, torch.onnx.export's
    extra arguments])."""
    import torch
    import torch.nn as nn
    import torchvision.models as M
    import torchvision.models.optical_flow as F
    import torchvision.models.segmentation as S
    import torchvision.models.video as V

    def image(*shape):
        return lambda: (torch.randn(*shape),)

    class Encoder(nn.Module):  # torch.nn's pre-norm encoder over token ids, with a key padding mask
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(1000, 256)
            layer = nn.TransformerEncoderLayer(256, 8, 1024, batch_first=True, norm_first=True)
            self.enc = nn.TransformerEncoder(layer, 4)

        def forward(self, ids, pad):
            return self.enc(self.emb(ids), src_key_padding_mask=pad)

    def tokens():
        pad = torch.zeros(2, 50, dtype=torch.bool)
        pad[1, 40:] = True
        return torch.randint(0, 1000, (2, 50)), pad

    def vit_b_32():  # torchvision initialises the head to zeros: every output would be 0
        m = M.vit_b_32()
        nn.init.normal_(m.heads.head.weight, std=0.02)
        return m

    class ConvBnSiLU(nn.Sequential):
        def __init__(self, cin, cout, k=1, s=1):
            super().__init__(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout), nn.SiLU())

    class C2f(nn.Module):  # YOLOv8's block: split in halves, bottlenecks on one, everything concatenated
        def __init__(self, cin, cout, n=1):
            super().__init__()
            self.c = cout // 2
            self.cv1, self.cv2 = ConvBnSiLU(cin, 2 * self.c), ConvBnSiLU((2 + n) * self.c, cout)
            self.m = nn.ModuleList(nn.Sequential(ConvBnSiLU(self.c, self.c, 3), ConvBnSiLU(self.c, self.c, 3)) for _ in range(n))

        def forward(self, x):
            y = list(self.cv1(x).split((self.c, self.c), 1))
            for m in self.m:
                y.append(y[-1] + m(y[-1]))
            return self.cv2(torch.cat(y, 1))

    class YoloLike(nn.Module):
        """A YOLOv8-style detector: C2f backbone, SPPF, a PAN neck (nearest upsampling, concatenations),
        decoupled heads, the DFL (a softmax over 16 bins times their index) and the boxes decoded against
        the anchor grid: scores and boxes [1, 4 + classes, anchors], as its exports end before NMS."""

        def __init__(self, classes=8, reg=16):
            super().__init__()
            self.reg = reg
            self.stem = nn.Sequential(ConvBnSiLU(3, 16, 3, 2), ConvBnSiLU(16, 32, 3, 2), C2f(32, 32))
            self.p4 = nn.Sequential(ConvBnSiLU(32, 64, 3, 2), C2f(64, 64))
            self.p5 = nn.Sequential(ConvBnSiLU(64, 64, 3, 2), C2f(64, 64), ConvBnSiLU(64, 32))
            self.pool = nn.MaxPool2d(5, 1, 2)
            self.sppf = ConvBnSiLU(128, 64)
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.n4, self.n3 = C2f(128, 64), C2f(96, 32)
            self.d3, self.o4 = ConvBnSiLU(32, 32, 3, 2), C2f(96, 64)
            self.box = nn.ModuleList(nn.Sequential(ConvBnSiLU(c, 32, 3), nn.Conv2d(32, 4 * reg, 1)) for c in (32, 64))
            self.cls = nn.ModuleList(nn.Sequential(ConvBnSiLU(c, 32, 3), nn.Conv2d(32, classes, 1)) for c in (32, 64))
            self.dfl = nn.Conv2d(reg, 1, 1, bias=False).requires_grad_(False)
            self.dfl.weight.data[:] = torch.arange(reg, dtype=torch.float).view(1, reg, 1, 1)

        def forward(self, x):
            p3 = self.stem(x)
            p4 = self.p4(p3)
            p5 = self.p5(p4)
            a = self.pool(p5)
            b = self.pool(a)
            p5 = self.sppf(torch.cat([p5, a, b, self.pool(b)], 1))
            n4 = self.n4(torch.cat([self.up(p5), p4], 1))
            n3 = self.n3(torch.cat([self.up(n4), p3], 1))
            o4 = self.o4(torch.cat([self.d3(n3), n4], 1))
            outs, anchors, strides = [], [], []
            for i, (f, stride) in enumerate(((n3, 8), (o4, 16))):
                h, w = f.shape[2:]
                outs.append(torch.cat([self.box[i](f), self.cls[i](f)], 1).flatten(2))
                sy, sx = torch.meshgrid(torch.arange(h, dtype=torch.float32) + 0.5, torch.arange(w, dtype=torch.float32) + 0.5,
                                        indexing="ij")
                anchors.append(torch.stack((sx, sy), 0).flatten(1))
                strides.append(torch.full((1, h * w), float(stride)))
            y = torch.cat(outs, 2)
            box, cls = y.split((4 * self.reg, y.shape[1] - 4 * self.reg), 1)
            n = box.shape[2]
            b = box.shape[0]
            dist = self.dfl(box.view(b, 4, self.reg, n).transpose(2, 1).softmax(1)).view(b, 4, n)
            lt, rb = dist.chunk(2, 1)
            anchor, stride = torch.cat(anchors, 1).unsqueeze(0), torch.cat(strides, 1)
            xy = (anchor + (rb - lt) / 2) * stride
            wh = (lt + rb) * stride
            return torch.cat((xy, wh, cls.sigmoid()), 1)

    class SamLikeDecoder(nn.Module):
        """SAM's mask decoder in small: prompt tokens and image embeddings through two-way attention (tokens to
        image, image to tokens), then the embeddings upscaled by transposed convolutions with a channel
        LayerNorm and GELU, and masks as a product of per-token MLP outputs with the upscaled map."""

        def __init__(self, d=64, tokens=4):
            super().__init__()
            self.t2i = nn.MultiheadAttention(d, 4, batch_first=True)
            self.i2t = nn.MultiheadAttention(d, 4, batch_first=True)
            self.norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(3))
            self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, d))
            self.up1 = nn.ConvTranspose2d(d, d // 4, 2, 2)
            self.ln = nn.GroupNorm(1, d // 4)  # one group: a LayerNorm over channels and positions
            self.up2 = nn.ConvTranspose2d(d // 4, d // 8, 2, 2)
            self.hyper = nn.ModuleList(nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d // 8)) for _ in range(tokens))

        def forward(self, tokens, image):
            b, c, h, w = image.shape
            src = image.flatten(2).transpose(1, 2)
            q = self.norms[0](tokens + self.t2i(tokens, src, src)[0])
            q = self.norms[1](q + self.mlp(q))
            src = self.norms[2](src + self.i2t(src, q, q)[0])
            up = self.up2(nn.functional.gelu(self.ln(self.up1(src.transpose(1, 2).reshape(b, c, h, w)))))
            hyper = torch.stack([m(q[:, i]) for i, m in enumerate(self.hyper)], 1)
            return (hyper @ up.flatten(2)).view(b, -1, 4 * h, 4 * w), q

    class ResBlock(nn.Module):  # a diffusion UNet's: GroupNorm, SiLU, conv, the timestep added per channel
        def __init__(self, cin, cout, temb):
            super().__init__()
            self.n1, self.c1 = nn.GroupNorm(8, cin), nn.Conv2d(cin, cout, 3, padding=1)
            self.t = nn.Linear(temb, cout)
            self.n2, self.c2 = nn.GroupNorm(8, cout), nn.Conv2d(cout, cout, 3, padding=1)
            self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

        def forward(self, x, t):
            h = self.c1(nn.functional.silu(self.n1(x))) + self.t(t)[:, :, None, None]
            return self.skip(x) + self.c2(nn.functional.silu(self.n2(h)))

    class UNetLike(nn.Module):
        """A diffusion UNet in small: the timestep's sinusoidal embedding and MLP, residual blocks with
        GroupNorm and SiLU, a self-attention block over the positions at the bottom, a strided-conv
        downsampling and a nearest upsampling joined to the skip by concatenation."""

        def __init__(self, c=32, temb=64):
            super().__init__()
            self.temb = temb
            self.tmlp = nn.Sequential(nn.Linear(temb, temb), nn.SiLU(), nn.Linear(temb, temb))
            self.inp = nn.Conv2d(4, c, 3, padding=1)
            self.r1, self.down = ResBlock(c, c, temb), nn.Conv2d(c, c, 3, 2, 1)
            self.r2 = ResBlock(c, 2 * c, temb)
            self.norm, self.attn = nn.GroupNorm(8, 2 * c), nn.MultiheadAttention(2 * c, 4, batch_first=True)
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.r3 = ResBlock(3 * c, c, temb)
            self.out = nn.Sequential(nn.GroupNorm(8, c), nn.SiLU(), nn.Conv2d(c, 4, 3, padding=1))

        def forward(self, x, step):
            half = self.temb // 2
            freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
            args = step[:, None].float() * freqs[None]
            t = self.tmlp(torch.cat([torch.cos(args), torch.sin(args)], 1))
            h1 = self.r1(self.inp(x), t)
            h = self.r2(self.down(h1), t)
            b, c, hh, ww = h.shape
            s = self.norm(h).flatten(2).transpose(1, 2)
            h = h + self.attn(s, s, s)[0].transpose(1, 2).reshape(b, c, hh, ww)
            return self.out(self.r3(torch.cat([self.up(h), h1], 1), t))

    class ClipTextLike(nn.Module):
        """CLIP's text tower in small: token and learned position embeddings, a causal mask (triu), pre-norm
        layers with QuickGELU, and the pooled output taken at each row's end-of-text token: the argmax of the
        ids, gathered with advanced indexing (int64 indices), then projected."""

        def __init__(self, vocab=1000, d=64, ctx=16):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(ctx, d) * 0.02)
            layer = nn.TransformerEncoderLayer(d, 4, 4 * d, batch_first=True, norm_first=True, activation=lambda x: x * torch.sigmoid(1.702 * x))
            self.enc = nn.TransformerEncoder(layer, 2)
            self.ln, self.proj = nn.LayerNorm(d), nn.Linear(d, 32, bias=False)
            self.register_buffer("mask", torch.full((ctx, ctx), float("-inf")).triu(1))

        def forward(self, ids):
            x = self.ln(self.enc(self.tok(ids) + self.pos[: ids.shape[1]], mask=self.mask[: ids.shape[1], : ids.shape[1]]))
            return self.proj(x[torch.arange(x.shape[0]), ids.argmax(-1)])

    def clip_tokens():
        ids = torch.randint(1, 998, (3, 16))
        for row, end in enumerate((5, 15, 9)):  # the end-of-text token (the largest id), then padding
            ids[row, end] = 999
            ids[row, end + 1:] = 0
        return (ids,)

    class Wav2VecLike(nn.Module):
        """wav2vec 2.0's front end in small: strided Conv1d feature extraction (GroupNorm with a group per
        channel on the first layer), GELU, a feature projection, the grouped positional Conv1d (its extra
        frame cut), LayerNorm and two encoder layers."""

        def __init__(self, c=64, d=64):
            super().__init__()
            self.conv = nn.ModuleList([nn.Conv1d(1, c, 10, 5, bias=False), nn.Conv1d(c, c, 3, 2, bias=False), nn.Conv1d(c, c, 2, 2, bias=False)])
            self.gn = nn.GroupNorm(c, c)
            self.proj = nn.Sequential(nn.LayerNorm(c), nn.Linear(c, d))
            self.pos = nn.Conv1d(d, d, 16, padding=8, groups=4)
            self.ln = nn.LayerNorm(d)
            self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 2 * d, batch_first=True, activation="gelu"), 2)

        def forward(self, wave):
            x = wave[:, None]
            for i, conv in enumerate(self.conv):
                x = conv(x)
                x = nn.functional.gelu(self.gn(x) if i == 0 else x)
            x = self.proj(x.transpose(1, 2))
            p = nn.functional.gelu(self.pos(x.transpose(1, 2))[:, :, :-1]).transpose(1, 2)
            return self.enc(self.ln(x + p))

    i224 = image(1, 3, 224, 224)
    return {
        "squeezenet1_1": (lambda: M.squeezenet1_1(), i224),
        "shufflenet_v2": (lambda: M.shufflenet_v2_x1_0(), i224),
        "regnet_y_400mf": (lambda: M.regnet_y_400mf(), i224),
        "lraspp": (lambda: S.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None), image(1, 3, 256, 256)),
        # Smaller images than the models were trained on (they take any size): Swin-T's last stage pads its
        # windows; a quarter of the work.
        "swin_t": (lambda: M.swin_t(), image(1, 3, 112, 112)),
        "convnext_tiny": (lambda: M.convnext_tiny(), image(1, 3, 128, 128)),
        # Beyond ctest's (list --all).
        "resnet18": (lambda: M.resnet18(), i224),
        "mobilenet_v2": (lambda: M.mobilenet_v2(), i224),
        "efficientnet_b0": (lambda: M.efficientnet_b0(), i224),
        "efficientnet_v2_s": (lambda: M.efficientnet_v2_s(), i224),
        "densenet121": (lambda: M.densenet121(), i224),
        "googlenet": (lambda: M.googlenet(aux_logits=False, init_weights=True), i224),
        "mnasnet0_5": (lambda: M.mnasnet0_5(), i224),
        "alexnet": (lambda: M.alexnet(), i224),
        "maxvit_t": (lambda: M.maxvit_t(), i224),
        "vit_b_32": (vit_b_32, i224),
        "deeplabv3_mnv3": (lambda: S.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, aux_loss=False),
                           image(1, 3, 256, 256)),
        "r3d_18": (lambda: V.r3d_18(), image(1, 3, 8, 112, 112)),  # Conv3d
        "raft_small": (lambda: F.raft_small(), lambda: (torch.rand(1, 3, 128, 128), torch.rand(1, 3, 128, 128))),
        "yolo_like": (YoloLike, image(1, 3, 160, 160)),
        "clip_text_like": (ClipTextLike, clip_tokens),
        "wav2vec_like": (Wav2VecLike, lambda: (torch.randn(2, 4000),)),
        "unet_like": (UNetLike, lambda: (torch.randn(2, 4, 16, 16), torch.tensor([10, 500]))),
        "sam_like_decoder": (SamLikeDecoder, lambda: (torch.randn(1, 4, 64), torch.randn(1, 64, 16, 16))),
        "nn_transformer": (Encoder, tokens),
        # The same encoder with its layers and their LayerNorms kept as model-local functions (a function
        # calling another), as torch exports them on request.
        "nn_transformer_functions": (Encoder, tokens,
                                     {"export_modules_as_functions": {nn.TransformerEncoderLayer, nn.LayerNorm}}),
    }


def flat(outputs):
    """torch's outputs as a list of tensors: a dict's values, a list's or tuple's items, in order."""
    if isinstance(outputs, dict):
        outputs = list(outputs.values())
    if isinstance(outputs, (list, tuple)):
        return [t for o in outputs for t in flat(o)]
    return [outputs]


def save(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(array), name).SerializeToString())


def to_float16(model):
    """The model in float16: float initializers and Constant values, Casts to float, float graph inputs and
    outputs (intermediate types are left to shape inference). Resize's roi and scales stay float32, as its
    schema asks."""
    g = model.graph
    keep = {name for n in g.node if n.op_type == "Resize" for name in n.input[1:3]}

    def convert(t, name):
        if t.data_type == TensorProto.FLOAT and name not in keep:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
    for t in g.initializer:
        convert(t, t.name)
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                convert(a.t, n.output[0])
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
    for v in list(g.input) + list(g.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
    del g.value_info[:]
    return model


def exporter():
    """Which torch.onnx exporter make uses: None where torch has only one (Debian's 1.13: TorchScript);
    else $ZOO_EXPORTER, 'torchscript' (default, the graphs ctest's were made with) or 'dynamo' (torch.export's,
    the default of torch >= 2.9)."""
    import inspect
    import torch
    if "dynamo" not in inspect.signature(torch.onnx.export).parameters:
        return None
    choice = os.environ.get("ZOO_EXPORTER", "torchscript")
    if choice not in ("torchscript", "dynamo"):
        sys.exit(f"zoo: ZOO_EXPORTER={choice}: expected torchscript or dynamo")
    return choice


def make(out_dir, names, float16):
    import torch
    made = cases()
    order = list(made)
    for name in names:
        folder = os.path.join(out_dir, name + ("_fp16" if float16 else ""))
        data = os.path.join(folder, "test_data_set_0")
        if os.path.exists(os.path.join(folder, "model.onnx")):
            continue  # made before in this folder (delete it to make them again)
        os.makedirs(data, exist_ok=True)
        torch.manual_seed(100 + order.index(name))
        build, example, *extra = made[name]
        module = build().eval()
        inputs = example()
        with torch.no_grad():
            outputs = flat(module(*inputs))
        in_names = [f"in_{k}" for k in range(len(inputs))]
        out_names = [f"out_{k}" for k in range(len(outputs))]
        tmp = os.path.join(folder, "export.onnx")
        options = dict(extra[0]) if extra else {}
        if exporter() is not None:  # torch >= 2.5 has both exporters (and from 2.9 on defaults to dynamo's)
            options["dynamo"] = exporter() == "dynamo"
        opset = max(OPSET, 18) if options.get("dynamo") else OPSET  # dynamo's exporter starts at opset 18
        torch.onnx.export(module, inputs, tmp, opset_version=opset, input_names=in_names, output_names=out_names,
                          **options)
        model = onnx.load(tmp)
        os.remove(tmp)
        for k, (x, n) in enumerate(zip(inputs, in_names)):
            a = x.numpy()
            save(os.path.join(data, f"input_{k}.pb"), a.astype(np.float16) if float16 and a.dtype == np.float32 else a, n)
        for k, (y, n) in enumerate(zip(outputs, out_names)):  # float16: torch's float32 values, rounded
            b = y.numpy()
            save(os.path.join(data, f"output_{k}.pb"), b.astype(np.float16) if float16 and b.dtype == np.float32 else b, n)
        if float16:
            model = to_float16(model)
        onnx.save(model, os.path.join(folder, "model.onnx"))  # last: its presence says the folder is whole
        scale = max(float(y.abs().max()) for y in outputs)
        print(f"zoo: {os.path.basename(folder)}: {len(outputs)} output(s), max|out| {scale:.3g}", flush=True)


def check(out_dir, name, onnxgpu, options):
    folder = os.path.join(out_dir, name)
    data = os.path.join(folder, "test_data_set_0")
    scale = 0.0
    k = 0
    while os.path.exists(os.path.join(data, f"output_{k}.pb")):
        t = TensorProto()
        with open(os.path.join(data, f"output_{k}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        a = numpy_helper.to_array(t)
        scale = max(scale, float(np.abs(a).max()) if a.size else 0.0)
        k += 1
    if not scale > 0:
        sys.exit(f"zoo: {name}'s reference outputs are all zeros: they would check nothing")
    rtol, atol = (1e-2, 1e-3) if name.endswith("_fp16") else (1e-3, 1e-5)
    cmd = [onnxgpu, "run", os.path.join(folder, "model.onnx"), "--data-set", data, "--rtol", str(rtol),
           "--atol", f"{atol * scale:.3g}"] + options
    print(" ".join(cmd), flush=True)
    sys.exit(subprocess.run(cmd).returncode)


def main(argv):
    args = [a for a in argv[1:] if a not in ("--float16", "--all")]
    if args and args[0] == "list":
        print(" ".join(cases() if "--all" in argv else NAMES))
    elif len(args) >= 2 and args[0] == "make":
        make(args[1], args[2:] or NAMES, "--float16" in argv)
    elif len(argv) >= 5 and argv[1] == "check":
        check(argv[2], argv[3], argv[4], argv[5:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
