"""The ops release the GIL while they run, so a checkpoint loader can quantize, prune and
relayout experts on a Python thread pool, and other Python threads keep running meanwhile."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import lowbit


def test_other_python_threads_run_during_an_op():
    # ~0.3 s of CPU quantization on one thread; the main thread counts how long it is kept from
    # running. Holding the GIL would stall it for the op's whole length.
    w = np.random.default_rng(3).standard_normal((2048, 8192), dtype=np.float32)
    op_seconds = []

    def quantize():
        start = time.perf_counter()
        lowbit.nvfp4_quantize_weight(w)
        op_seconds.append(time.perf_counter() - start)

    worker = threading.Thread(target=quantize)
    worker.start()
    longest_stall, last = 0.0, time.perf_counter()
    while worker.is_alive():
        now = time.perf_counter()
        longest_stall, last = max(longest_stall, now - last), now
    worker.join()
    assert op_seconds[0] > 0.05, "the op ran too briefly to tell"
    assert longest_stall < op_seconds[0] / 2, (
        f"the main thread stalled {longest_stall:.3f} s of the op's {op_seconds[0]:.3f} s")


def test_experts_prepared_on_a_thread_pool_match_one_thread():
    rng = np.random.default_rng(4)
    experts = [rng.standard_normal((256, 512), dtype=np.float32) for _ in range(6)]

    def prepare(w):
        packed, scales, g = lowbit.nvfp4_quantize_weight(w)
        values, indices, _ = lowbit.nvfp4_sparsify_24(packed, scales, g[0])
        return (*lowbit.nvfp4_relayout_for_gemv(packed, scales),
                *lowbit.nvfp4_sparse24_relayout_for_gemv(values, indices, scales))

    serial = [prepare(w) for w in experts]
    with ThreadPoolExecutor(max_workers=3) as pool:
        threaded = list(pool.map(prepare, experts))
    for one, other in zip(serial, threaded):
        for a, b in zip(one, other):
            np.testing.assert_array_equal(np.asarray(a).view(np.uint8), np.asarray(b).view(np.uint8))
