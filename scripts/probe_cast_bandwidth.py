"""Peer baselines for memory-bound quantization on the GPU machine (PyTorch ships there):
a bf16 -> fp8 cast (3 bytes/element, same traffic shape as per_token_group_quant), a bf16 copy,
and torch.compile's per-token-group quant written from docs/quant.md. Prints GB/s per kernel.
usage: python3 scripts/probe_cast_bandwidth.py [M K]"""
import sys

import torch


def bench(fn, bytes_moved, reps=30):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    ms = times[len(times) // 2]
    return ms, bytes_moved / (ms * 1e-3) / 1e9


def group_quant(x, group=128, eps=1e-10):
    """docs/quant.md recipe: s = max(amax, eps) / 448, q = sat(rne(x / s))."""
    m, k = x.shape
    xg = x.float().view(m, k // group, group)
    amax = xg.abs().amax(dim=-1, keepdim=True)
    s = torch.clamp(amax, min=eps) / 448.0
    q = torch.clamp(xg / s, -448.0, 448.0).to(torch.float8_e4m3fn)
    return q.view(m, k), s.view(m, k // group)


def main():
    m, k = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (16384, 18432)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    copy_dst = torch.empty_like(x)
    n = m * k
    print(f"device {torch.cuda.get_device_name()} M={m} K={k}")
    ms, gbps = bench(lambda: copy_dst.copy_(x), 4 * n)
    print(f"torch bf16 copy           {ms * 1e3:9.1f} us {gbps:8.1f} GB/s")
    ms, gbps = bench(lambda: x.to(torch.float8_e4m3fn), 3 * n)
    print(f"torch cast bf16->fp8      {ms * 1e3:9.1f} us {gbps:8.1f} GB/s")
    compiled = torch.compile(group_quant)
    ms, gbps = bench(lambda: compiled(x), 3 * n + 4 * n // 128)
    print(f"torch.compile group quant {ms * 1e3:9.1f} us {gbps:8.1f} GB/s")


if __name__ == "__main__":
    main()
