#!/bin/bash
# On the device machine: every model of tests/zoo (or $NAMES) exported there by its torch, then checked on the
# real GPU against torch's outputs, captured, fail-loud, recorded and replayed (docs/models.md, "On a GPU").
#
#   bench/compare --make-bundle --size full          # here: bench/.carry (the onnxgpu build and its libraries)
#   run, carry bench/.carry:  bash bench/zoo_device.sh
#   ZOO_EXPORTER=dynamo bash bench/zoo_device.sh     # torch.export's exporter (opset 18) instead of TorchScript's
#   NAMES="swin_t vit_b_32" FP16=--float16 ...       # some models; float16 conversions
#
# One line per model: ZOO <name> rc=<onnxgpu run's exit status> <seconds> s: <the end of its report>.
cd "$(dirname "$0")" || exit 1
PY=${PY:-python3}
OG=$($PY -c "import compare; print(compare.unpack_bundle('.carry')[0])") || exit 1
eval "$($PY -c "import shlex, compare; e = compare.vulkan_env(compare.unpack_bundle('.carry')[2]); print(' '.join('export %s=%s' % (k, shlex.quote(v)) for k, v in e.items() if k.startswith(('VK_', 'LD_', 'XDG_'))))")"
Z=/tmp/zoo-${ZOO_EXPORTER:-torchscript}
NAMES=${NAMES:-$($PY ../tests/zoo/zoo.py list --all)}
$PY -c "import torch, torchvision, onnx; print('torch', torch.__version__, 'torchvision', torchvision.__version__, 'onnx', onnx.__version__)"
for n in $NAMES; do
  start=$SECONDS
  if ! timeout 120 $PY ../tests/zoo/zoo.py make $Z $n $FP16 > $Z.make.log 2>&1; then
    echo "ZOO $n$FP16 export failed: $(grep -v Warning $Z.make.log | tail -3 | tr '\n' ' ' | cut -c1-400)"
    continue
  fi
  m=$n; [ -n "$FP16" ] && m=${n}_fp16
  out=$(timeout 120 $PY ../tests/zoo/zoo.py check $Z $m $OG --ep webgpu --capture --fail-loud --runs 3 2>&1); rc=$?
  echo "ZOO $m rc=$rc $((SECONDS - start)) s: $(echo "$out" | grep -v '^/' | tail -4 | tr '\n' ' ' | cut -c1-500)"
done
