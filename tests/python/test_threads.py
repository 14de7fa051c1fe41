"""Sessions used from several threads give the single-threaded results (the GIL is released during
run; WebGPU sessions serialize on the process-wide device lock)."""
import threading

import numpy as np
import pytest

import onnxgpu

RUNS_PER_THREAD = 3


def _run_threads(jobs):
    """jobs: [(session, feed)] one per thread; every thread runs its job RUNS_PER_THREAD times."""
    results = [[] for _ in jobs]
    errors = []
    start = threading.Barrier(len(jobs))

    def work(i, sess, feed):
        try:
            start.wait()
            for _ in range(RUNS_PER_THREAD):
                results[i].append(sess.run(None, feed)[0])
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i, s, f)) for i, (s, f) in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors
    return results


@pytest.mark.parametrize("provider", ["WebGpuExecutionProvider", "CPUExecutionProvider"])
def test_same_session_two_threads(gpt2_path, gpt2_sets, provider):
    sess = onnxgpu.InferenceSession(gpt2_path, providers=[provider])
    feeds = [dict(gpt2_sets[0][0]), dict(gpt2_sets[1][0])]  # two shapes: two plans in one session
    single = [sess.run(None, f)[0] for f in feeds]
    results = _run_threads([(sess, feeds[0]), (sess, feeds[1])])
    for i, rs in enumerate(results):
        for r in rs:
            np.testing.assert_array_equal(r, single[i])


@pytest.mark.parametrize("provider", ["WebGpuExecutionProvider", "CPUExecutionProvider"])
def test_two_sessions_two_threads(gpt2_path, gpt2_sets, provider):
    a = onnxgpu.InferenceSession(gpt2_path, providers=[provider])
    b = onnxgpu.InferenceSession(gpt2_path, providers=[provider])
    feeds = [dict(gpt2_sets[0][0]), dict(gpt2_sets[1][0])]
    single = [a.run(None, feeds[0])[0], b.run(None, feeds[1])[0]]
    results = _run_threads([(a, feeds[0]), (b, feeds[1])])
    for i, rs in enumerate(results):
        for r in rs:
            np.testing.assert_array_equal(r, single[i])


def test_close_while_other_thread_runs(gpt2_path, gpt2_sets):
    """Dropping a session another thread is running finishes that run first."""
    sess = onnxgpu.InferenceSession(gpt2_path, providers=["WebGpuExecutionProvider"])
    feed = dict(gpt2_sets[1][0])
    want = sess.run(None, feed)[0]
    out, errors = [], []

    def work():
        try:
            out.append(sess.run(None, feed)[0])
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    t = threading.Thread(target=work)
    t.start()
    sess._close()
    t.join(timeout=600)
    # Either the run got the session before the close, or it saw a closed session.
    if errors:
        assert isinstance(errors[0], onnxgpu.InvalidArgument) and "closed" in str(errors[0])
    else:
        np.testing.assert_array_equal(out[0], want)


def test_sessions_created_and_dropped_in_threads(gpt2_path, gpt2_sets):
    """Three threads create, run and drop WebGPU sessions on the one shared device (without the
    binding's process-wide lock this fails: Dawn reports the shared staging buffer in use)."""
    feeds = [dict(gpt2_sets[0][0]), dict(gpt2_sets[1][0])]
    ref = onnxgpu.InferenceSession(gpt2_path, providers=["WebGpuExecutionProvider"])
    want = [ref.run(None, f)[0] for f in feeds]
    errors, mismatches = [], []

    def work(i):
        try:
            for r in range(2):
                s = onnxgpu.InferenceSession(gpt2_path, providers=["WebGpuExecutionProvider"]) if r == 0 else ref
                for k in range(2):
                    y = s.run(None, feeds[(i + k) % 2])[0]
                    if not np.array_equal(y, want[(i + k) % 2]):
                        mismatches.append((i, r, k))
                del s
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors
    assert not mismatches, mismatches
