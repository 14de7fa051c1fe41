#!/usr/bin/python3
"""Runs `onnxgpu conformance ... --json` (or reads a saved result) and checks it.

    check_conformance.py --onnxgpu build/onnxgpu --config cpu --suite node \\
        --min-passed 840 --expected-failures tests/conformance/expected_failures_cpu.txt \\
        --json-out build/conformance/cpu_node.json -- /usr/share/libonnx-testdata/data/node --ep cpu

Everything after `--` is passed to `onnxgpu conformance` (test folders, then engine flags).
Without --onnxgpu, the JSON file given by --json-out is checked as it is (no run).

The check fails when
  (a) a test has status "failed" and is not listed in the expected-failures file (unless
      --failures-are-coverage: for a suite whose failures are the coverage still to build), or
  (b) fewer than --min-passed tests passed, or the report counts other than --total tests.
"unsupported" tests (ops or dtypes outside the engine's scope) are neither. A listed test that now
passes is printed as a note, so that the list can be trimmed; it does not fail the check.

Expected-failures file: one test per line, `test_name  # reason`; blank lines and lines starting
with `#` are ignored. One file per configuration, shared by the suites of that configuration.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time


def read_expected_failures(path):
    """Returns {test_name: reason}. A missing file is an empty list."""
    expected = {}
    if not path or not os.path.exists(path):
        return expected
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            name, _, reason = text.partition("#")
            name = name.strip()
            if not name or len(name.split()) != 1:
                sys.exit(f"{path}:{lineno}: expected `test_name  # reason`, got: {text}")
            if name in expected:
                print(f"warning: {path}:{lineno}: {name} is listed twice")
            expected[name] = reason.strip()
    return expected


def run_conformance(args, runner_args):
    cmd = [args.onnxgpu, "conformance"] + runner_args + ["--json"]
    print("running:", " ".join(shlex.quote(c) for c in cmd), flush=True)
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        sys.exit(f"FAIL: onnxgpu conformance exited with {proc.returncode} after {seconds:.0f} s")
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        sys.stderr.write(proc.stdout[-2000:] + proc.stderr[-2000:])
        sys.exit(f"FAIL: onnxgpu conformance did not print valid JSON: {e}")
    # Provenance for scripts/gen_ops_md.py.
    result["config"] = args.config
    result["suite"] = args.suite
    result["command"] = ["onnxgpu", "conformance"] + runner_args + ["--json"]
    result["wall_seconds"] = round(seconds, 1)
    os.makedirs(os.path.dirname(os.path.abspath(args.json_out)), exist_ok=True)
    tmp = args.json_out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, args.json_out)
    print(f"wrote {args.json_out} ({seconds:.0f} s)")
    return result


def check(result, expected, min_passed, expected_path, gpu_only=False, failures_are_coverage=False, total=0):
    tests = result.get("tests", [])
    by_status = {}
    for t in tests:
        by_status.setdefault(t["status"], []).append(t)
    passed = len(by_status.get("passed", []))
    failed = by_status.get("failed", [])
    unsupported = by_status.get("unsupported", [])
    # Under --fail-loud a node without a GPU kernel is an error by design ("fail_loud: ..."): those
    # failures count against the minimum, not as unexpected.
    no_gpu = [t for t in failed if gpu_only and t.get("detail", "").startswith("fail_loud:")]
    failed = [t for t in failed if t not in no_gpu]
    unexpected = [] if failures_are_coverage else [t for t in failed if t["name"] not in expected]
    known = [t for t in failed if t["name"] in expected]
    fixed = [t for t in by_status.get("passed", []) if t["name"] in expected]

    label = f"{result.get('config', '?')}/{result.get('suite', '?')}"
    print(f"{label}: {len(tests)} tests: {passed} passed, {len(failed)} failed "
          f"({len(known)} expected), {len(no_gpu)} need a CPU fallback (fail-loud), {len(unsupported)} unsupported; "
          f"minimum passed {min_passed}")

    for t in fixed:
        print(f"note: {t['name']} passes now: remove it from {expected_path}")
    problems = []
    if unexpected:
        print(f"\n{len(unexpected)} unexpected failure(s) (not in {expected_path}):")
        for t in unexpected:
            print(f"  {t['name']}: {t.get('detail', '')}")
        problems.append(f"{len(unexpected)} unexpected failure(s)")
    if passed < min_passed:
        problems.append(f"{passed} tests passed, fewer than the minimum {min_passed}")
    if total and len(tests) != total:
        problems.append(f"the report counts {len(tests)} tests, the suite has {total}")
    if problems:
        print("\nFAIL: " + "; ".join(problems))
        return 1
    print("OK")
    return 0


def main():
    argv = sys.argv[1:]
    runner_args = []
    if "--" in argv:
        i = argv.index("--")
        argv, runner_args = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--onnxgpu", help="the onnxgpu binary; omit to check --json-out without running")
    p.add_argument("--config", default="?", help="configuration name (cpu, webgpu_capture, ...)")
    p.add_argument("--suite", default="?", help="suite name (node, simple, ...)")
    p.add_argument("--min-passed", type=int, default=0)
    p.add_argument("--expected-failures", default="")
    p.add_argument("--json-out", required=True, help="where the runner's JSON is saved (or read from)")
    p.add_argument("--failures-are-coverage", action="store_true",
                   help="failed tests are not checked against a list (a suite of ops still being built)")
    p.add_argument("--total", type=int, default=0, help="the number of tests the report must count")
    args = p.parse_args(argv)

    expected = read_expected_failures(args.expected_failures)
    if args.onnxgpu:
        if not runner_args:
            p.error("give the test folders and engine flags after `--`")
        result = run_conformance(args, runner_args)
    else:
        with open(args.json_out, encoding="utf-8") as f:
            result = json.load(f)
    return check(result, expected, args.min_passed, args.expected_failures or "the expected-failures file",
                 gpu_only="--fail-loud" in runner_args, failures_are_coverage=args.failures_are_coverage,
                 total=args.total)


if __name__ == "__main__":
    sys.exit(main())
