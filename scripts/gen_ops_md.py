#!/usr/bin/python3
"""Writes docs/ops.md, the op coverage table, from conformance results.

    scripts/gen_ops_md.py build/conformance/*.json build/conformance-1.23/*.json -o docs/ops.md
    scripts/gen_ops_md.py build/conformance/*.json > docs/ops.md

Each input is the JSON of `onnxgpu conformance ... --json`, as saved by the ctest conformance tests
(tests/conformance/check_conformance.py), which adds "config" (cpu, webgpu_capture, ...) and "suite"
(node, simple, ...). Without those fields they come from the file name: <config>_<suite>.json.

A test counts for the op it is named after: among the ops in its model, the one whose name (without
case and underscores) is the longest prefix of the test name (test_reduce_sum_keepdims -> ReduceSum;
pytorch-operator's test_operator_ prefix is dropped). Function-expanded tests (*_expanded) count for
the function op they are named after. A test named after no op (test_basic_conv_..., most of the
pytorch-converted suite) counts for every op in its model.

The suite "contrib" (tests/data/contrib: ONNX Runtime's contrib ops against ONNX Runtime's outputs)
has a section of its own; the per-op table is the ONNX backend tests'.
"""
import argparse
import glob
import json
import os
import re
import sys
from collections import OrderedDict, defaultdict

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def norm(s):
    return re.sub(r"[^a-z0-9]", "", s.lower())


def all_onnx_ops():
    """Every ONNX op name (for *_expanded tests, whose model holds the function body, not the op)."""
    try:
        import onnx.defs
        return {s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain in ("", "ai.onnx")}
    except Exception:  # no onnx in this python: fall back to the ops seen in the results
        return set()


# Test-name abbreviations of the ONNX backend tests (normalized prefix -> op).
ALIASES = {
    "basicconv": "Conv", "batchnorm": "BatchNormalization", "instancenorm": "InstanceNormalization",
    "constantpad": "Pad", "edgepad": "Pad", "reflectpad": "Pad", "greaterequal": "GreaterOrEqual",
    "lessequal": "LessOrEqual", "mvn": "MeanVarianceNormalization", "nllloss": "NegativeLogLikelihoodLoss",
    "sce": "SoftmaxCrossEntropyLoss", "simplernn": "RNN", "strnormalizer": "StringNormalizer",
    "trainingdropout": "Dropout", "tril": "Trilu", "triu": "Trilu", "nesterovmomentum": "ai.onnx.preview.training.Momentum",
}


def named_op(test_name, ops, known_ops):
    """The op `test_name` is named after, or None. Only ops in the model count, except for
    *_expanded tests, whose model holds the function body instead of the op."""
    base = test_name[len("test_"):] if test_name.startswith("test_") else test_name
    if base.startswith("operator_"):
        base = base[len("operator_"):]
    key = norm(base)
    allowed = set(ops) | (known_ops if test_name.endswith("_expanded") else set())
    candidates = [(norm(op.split(".")[-1]), op) for op in allowed]
    candidates += [(k, op) for k, op in ALIASES.items() if op in allowed]
    best = None
    for k, op in candidates:
        if k and key.startswith(k) and (best is None or len(k) > len(best[0])):
            best = (k, op)
    return best[1] if best else None


CONTRIB_SUITE = "contrib"
ORT_SUITES = (CONTRIB_SUITE, "ml")  # one-node models with ONNX Runtime's outputs (tests/data/contrib, tests/data/ml)
SUITE_1_23 = "node-1.23"  # ONNX 1.23's node tests: per-op columns of their own


def column(config, suite):
    """The per-op table's column of a (configuration, suite): ONNX 1.23's suite apart from Debian's."""
    return f"{config} (1.23)" if suite == SUITE_1_23 else config


def load(paths):
    """Returns {config: {suite: result}} in the order the files were given."""
    configs = OrderedDict()
    for path in paths:
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
        stem = os.path.splitext(os.path.basename(path))[0]
        default_config, _, default_suite = stem.partition("_")
        config = result.get("config") or default_config
        suite = result.get("suite") or default_suite or stem
        configs.setdefault(config, OrderedDict())[suite] = result
    for config, suites in configs.items():  # the ONNX Runtime suites after the ONNX suites
        configs[config] = OrderedDict(sorted(suites.items(), key=lambda kv: kv[0] in ORT_SUITES))
    return configs


def md_escape(s, limit=240):
    s = " ".join(str(s).split())
    if len(s) > limit:
        s = s[:limit - 3] + "..."
    return s.replace("|", "\\|").replace("`", "'")


def display_path(p):
    a = os.path.abspath(p)
    for base in (os.getcwd(), REPO):
        if a.startswith(base + os.sep):
            return os.path.relpath(a, base)
    return p


def generate(paths, argv_display):
    configs = load(paths)
    known_ops = all_onnx_ops()
    for suites in configs.values():
        for r in suites.values():
            for t in r.get("tests", []):
                known_ops.update(o for o in t.get("ops", []) if "." not in o)

    # cells[op][config] = [passed, failed, unsupported]; attributed by name or by membership.
    cells = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    contrib_cells = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))  # the contrib suite's
    not_passing = OrderedDict()  # config -> [(suite, test, op, status, detail)]
    index = {"passed": 0, "failed": 1, "unsupported": 2}
    for config, suites in configs.items():
        rows = not_passing.setdefault(config, [])
        for suite, r in suites.items():
            for t in r.get("tests", []):
                ops = t.get("ops", [])
                op = named_op(t["name"], ops, known_ops)
                targets = [op] if op else ops
                for o in targets:
                    (contrib_cells if suite in ORT_SUITES else cells)[o][column(config, suite)][index.get(t["status"], 1)] += 1
                if t["status"] != "passed":
                    rows.append((suite, t["name"], op or ", ".join(ops), t["status"],
                                 t.get("detail", "").replace(REPO + os.sep, "")))  # paths as in the repo

    out = []
    w = out.append
    w("# ONNX op coverage")
    w("")
    w("<!-- Generated file: do not edit. -->")
    w("Generated by `" + argv_display + "` from the results of the ctest conformance tests "
      "(`ctest -L conformance` in build/, which runs `onnxgpu conformance` over the ONNX backend tests of "
      "Debian's libonnx-testdata 1.12, opsets up to 17, and over tests/data/contrib, and saves "
      "build/conformance/<config>_<suite>.json; the sweeps of ONNX 1.23's node tests, opsets up to 28, save "
      "build/conformance-1.23/<config>_node-1.23.json, shown in columns of their own).")
    w("")
    w("A test counts for the op it is named after (`test_reduce_sum_keepdims_random` for ReduceSum, "
      "`*_expanded` tests for the function they expand); a test named after no op counts for every op in its "
      "model. *unsupported*: the model uses an op or dtype outside the engine's scope (see "
      "`in_scope_ops()` in src/runtime/conformance.cpp).")
    w("")

    w("## Summary")
    w("")
    w("| configuration | suite | flags | passed | failed | unsupported | total |")
    w("|---|---|---|---:|---:|---:|---:|")
    for config, suites in configs.items():
        for suite, r in suites.items():
            tests = r.get("tests", [])
            count = lambda s: sum(1 for t in tests if t["status"] == s)
            cmd = [a for a in (r.get("command") or []) if a != "--json"]
            first_flag = next((i for i, a in enumerate(cmd) if a.startswith("-")), len(cmd))
            flags = " ".join(cmd[first_flag:]) or "--ep " + str(r.get("ep", "?"))
            w(f"| {config} | {suite} | `{flags}` | {count('passed')} | {count('failed')} | "
              f"{count('unsupported')} | {len(tests)} |")
    w("")

    w("## Per op")
    w("")
    w("passed/total per configuration; *(n unsupported)* when some of the op's tests are out of scope.")
    w("")
    names = list(configs) + [column(c, SUITE_1_23) for c, suites in configs.items() if SUITE_1_23 in suites]

    def cell(op_cells, op, config):
        p, f, u = op_cells[op][config] if config in op_cells[op] else (0, 0, 0)
        total = p + f + u
        if total == 0:
            return ""
        if u == total:
            return "unsupported"
        return f"{p}/{total}" + (f" ({u} unsupported)" if u else "")

    w("| op | " + " | ".join(names) + " |")
    w("|---|" + "---|" * len(names))
    for op in sorted(cells, key=lambda o: (o.lower(), o)):
        w(f"| {op} | " + " | ".join(cell(cells, op, c) for c in names) + " |")
    w("")

    if contrib_cells:
        w("## ONNX Runtime contrib ops")
        w("")
        w("Suite `contrib`: tests/data/contrib, one-node models with ONNX Runtime 1.30's outputs (its CPU EP; "
          "its WebGPU EP for BiasAdd, which it has on GPU EPs only), written by tests/data/contrib/make_cases.py. "
          "ONNX Runtime's com.microsoft ops; SimplifiedLayerNormalization, which ONNX Runtime declares in the ONNX "
          "domain; and the ONNX opset-23 ops that share their kernels (RMSNormalization, RotaryEmbedding: ONNX 1.23's "
          "node tests cover them too, build/conformance-1.23). Suite `ml`: tests/data/ml, written by the same script, "
          "ai.onnx.ml's numeric ops (tree ensembles, LinearRegressor, Scaler, Normalizer, Binarizer, "
          "ArrayFeatureExtractor), which have CPU kernels only: in a WebGPU session each node falls back alone, so "
          "they have no fail-loud column. passed/total per configuration.")
        w("")
        configs_only = list(configs)
        w("| domain | op | " + " | ".join(configs_only) + " |")
        w("|---|---|" + "---|" * len(configs_only))
        for op in sorted(contrib_cells, key=lambda o: ("." not in o, o.lower())):
            domain, _, name = op.rpartition(".")
            w(f"| {domain or 'ai.onnx'} | {name} | " + " | ".join(cell(contrib_cells, op, c) for c in configs_only) + " |")
        w("")

    w("## Tests that do not pass")
    for config, rows in not_passing.items():
        w("")
        failed = [r for r in rows if r[3] != "unsupported"]
        unsupported = [r for r in rows if r[3] == "unsupported"]
        w(f"### {config}: {len(failed)} failed")
        w("")
        if failed:
            w("| suite | test | op | reason |")
            w("|---|---|---|---|")
            for suite, name, op, status, detail in failed:
                w(f"| {suite} | {name} | {md_escape(op, 60)} | {md_escape(detail)} |")
        else:
            w("None.")
        w("")
        w(f"### {config}: {len(unsupported)} unsupported")
        w("")
        if unsupported:
            w("| suite | test | reason |")
            w("|---|---|---|")
            for suite, name, op, status, detail in unsupported:
                w(f"| {suite} | {name} | {md_escape(detail)} |")
        else:
            w("None.")
    w("")
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("json", nargs="+", help="conformance results (<config>_<suite>.json); globs are expanded")
    p.add_argument("-o", "--output", help="write here instead of stdout (e.g. docs/ops.md)")
    args = p.parse_args()
    paths = []
    for pattern in args.json:
        matches = sorted(glob.glob(pattern))
        if not matches:
            p.error(f"no file matches {pattern}")
        paths.extend(matches)
    # Show each folder whose every *.json is given as its glob, not the file list.
    shown_paths = []
    for x in paths:
        d = os.path.dirname(x)
        in_dir = [y for y in paths if os.path.dirname(y) == d]
        if len(in_dir) > 1 and sorted(glob.glob(os.path.join(d, "*.json"))) == sorted(in_dir):
            g = os.path.join(os.path.dirname(display_path(x)), "*.json")
            if g not in shown_paths:
                shown_paths.append(g)
        else:
            shown_paths.append(display_path(x))
    shown = ["scripts/gen_ops_md.py"] + shown_paths
    if args.output:
        shown += ["-o", display_path(args.output)]
    text = generate(paths, " ".join(shown))
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
