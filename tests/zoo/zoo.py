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
    outputs (intermediate types are left to shape inference)."""
    def convert(t):
        if t.data_type == TensorProto.FLOAT:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
    g = model.graph
    for t in g.initializer:
        convert(t)
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                convert(a.t)
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
    for v in list(g.input) + list(g.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
    del g.value_info[:]
    return model


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
        torch.onnx.export(module, inputs, tmp, opset_version=OPSET, input_names=in_names, output_names=out_names,
                          **(extra[0] if extra else {}))
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
