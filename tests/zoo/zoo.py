#!/usr/bin/python3
"""Real architectures as users export them: torchvision's models (Debian's python3-torchvision, their own
random initialisation, no weights downloaded), exported by torch.onnx at opset 17, run by onnxgpu against
torch's own outputs.

Usage:
  /usr/bin/python3 tests/zoo/zoo.py make OUT_DIR [NAME ...]    export, with input and torch's output
  /usr/bin/python3 tests/zoo/zoo.py check OUT_DIR NAME ONNXGPU [onnxgpu run options ...]
  /usr/bin/python3 tests/zoo/zoo.py list

make writes OUT_DIR/<name>/model.onnx and test_data_set_0/{input_0,output_0}.pb (the ONNX backend-test
layout). check runs `ONNXGPU run` on that data set with the options given (e.g. --ep webgpu --capture
--fail-loud --runs 3) and a tolerance scaled to the output: |got - want| <= 1e-3 |want| + 1e-5 max|want|
(random weights leave some models' outputs far from 1; the scale keeps the check as tight for them).

Each model is here for what it brings that the bench's models do not: squeezenet1_1 (Concat of 1x1 and 3x3
branches, ceil-mode MaxPool), shufflenet_v2 (channel shuffle: Reshape, Transpose, Split), regnet_y_400mf
(grouped convolutions, squeeze-and-excitation), lraspp (segmentation: the bilinear Resize back to the image,
HardSigmoid), swin_t (shifted-window attention: Roll as Slice and Concat, masks, a Dropout exported in
training mode with ratio 0), convnext_tiny (depthwise 7x7, LayerNorm over channels through Transposes).
"""

import os
import subprocess
import sys

import numpy as np
from onnx import numpy_helper

OPSET = 17


def builders():
    import torchvision.models as M
    import torchvision.models.segmentation as S
    image = (1, 3, 224, 224)
    return {
        "squeezenet1_1": (lambda: M.squeezenet1_1(), image),
        "shufflenet_v2": (lambda: M.shufflenet_v2_x1_0(), image),
        "regnet_y_400mf": (lambda: M.regnet_y_400mf(), image),
        "lraspp": (lambda: S.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None), (1, 3, 256, 256)),
        # Smaller images (the models take any size): the last stage's windows padded; a quarter of the work.
        "swin_t": (lambda: M.swin_t(), (1, 3, 112, 112)),
        "convnext_tiny": (lambda: M.convnext_tiny(), (1, 3, 128, 128)),
    }


NAMES = ["squeezenet1_1", "shufflenet_v2", "regnet_y_400mf", "lraspp", "swin_t", "convnext_tiny"]


def save(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(array), name).SerializeToString())


def make(out_dir, names):
    import torch
    made = builders()
    for k, name in enumerate(names):
        folder = os.path.join(out_dir, name)
        data = os.path.join(folder, "test_data_set_0")
        if os.path.exists(os.path.join(data, "output_0.pb")):
            continue  # made before in this folder (delete it to make them again)
        os.makedirs(data, exist_ok=True)
        torch.manual_seed(100 + k)
        build, shape = made[name]
        model = build().eval()
        x = torch.randn(*shape)
        with torch.no_grad():
            y = model(x)
        if isinstance(y, dict):  # segmentation models return {"out": ...}
            y = y["out"]
        tmp = os.path.join(folder, "model.onnx.tmp")
        torch.onnx.export(model, x, tmp, opset_version=OPSET, input_names=["image"], output_names=["out"])
        save(os.path.join(data, "input_0.pb"), x.numpy(), "image")
        save(os.path.join(data, "output_0.pb"), y.numpy(), "out")
        os.replace(tmp, os.path.join(folder, "model.onnx"))
        print(f"zoo: {name} {tuple(y.shape)} max|out| {float(y.abs().max()):.3g}", flush=True)


def check(out_dir, name, onnxgpu, options):
    folder = os.path.join(out_dir, name)
    data = os.path.join(folder, "test_data_set_0")
    from onnx import TensorProto
    want = TensorProto()
    with open(os.path.join(data, "output_0.pb"), "rb") as f:
        want.ParseFromString(f.read())
    scale = float(np.abs(numpy_helper.to_array(want)).max())
    if not scale > 0:
        sys.exit(f"zoo: {name}'s reference output is all zeros: it would check nothing")
    cmd = [onnxgpu, "run", os.path.join(folder, "model.onnx"), "--data-set", data, "--rtol", "1e-3",
           "--atol", f"{1e-5 * scale:.3g}"] + options
    print(" ".join(cmd), flush=True)
    sys.exit(subprocess.run(cmd).returncode)


def main(argv):
    if len(argv) >= 2 and argv[1] == "list":
        print(" ".join(NAMES))
    elif len(argv) >= 3 and argv[1] == "make":
        make(argv[2], argv[3:] or NAMES)
    elif len(argv) >= 5 and argv[1] == "check":
        check(argv[2], argv[3], argv[4], argv[5:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
