"""DeepSeek-V3 block FP8: 128 x 128 weight-block quantization and the block-scaled GEMM.
Recipes, layouts and accuracy: docs/block_gemm.md."""

from . import _lowbit
from ._arrays import as_dlpack, empty, is_cuda, stream_for

BLOCK = 128


def _blocks(n):
    return (n + BLOCK - 1) // BLOCK


def block_fp8_quantize_weight(weight, *, eps=1e-10, out=None, scales=None, stream=None):
    """Quantize weight [N, K] (bf16/fp16/fp32) in 128 x 128 blocks.

    Returns (q [N, K] fp8_e4m3fn, scales [ceil(N/128), ceil(K/128)] fp32) with, per block,
    s = max(amax, eps) / 448 (edge blocks: over the elements present) and q = e4m3(w / s);
    dequantization is q * s (a checkpoint's `weight_scale_inv`).
    """
    n, k = weight.shape
    q = out if out is not None else empty(weight, (n, k), "fp8_e4m3fn")
    s = scales if scales is not None else empty(weight, (_blocks(n), _blocks(k)), "fp32")
    _lowbit.block_fp8_quantize_weight(as_dlpack(weight), as_dlpack(q), s, eps,
                                      stream_for(weight, stream))
    return q, s


def block_fp8_dequantize_weight(q, scales, *, dtype="bf16", out=None, stream=None):
    """q [N, K] fp8_e4m3fn * its block scales -> [N, K] of `dtype` (bf16, fp16 or fp32)."""
    w = out if out is not None else empty(q, tuple(q.shape), dtype)
    _lowbit.block_fp8_dequantize_weight(as_dlpack(q), scales, as_dlpack(w), stream_for(q, stream))
    return w


def block_fp8_mm(a, a_scales, b, b_scales, *, a_scale_layout="row_major", out_dtype="bf16",
                 out=None, workspace=None, stream=None, enable_pdl=False):
    """C [M, N] = sum over 128-deep k-blocks of As[m, kb] * Bs[n/128, kb] * (A . B) on that block.

    a: [M, K] fp8_e4m3fn with a_scales fp32 in `a_scale_layout` (row_major [M, K/128],
    column_major [K/128, M], column_major_tma_aligned [K/128, round_up(M, 4)]), as
    per_token_group_quant(group_size=128) writes them. b: [N, K] fp8_e4m3fn with b_scales
    [ceil(N/128), ceil(K/128)] fp32. K must be a multiple of 16. Output bf16 or fp32.
    enable_pdl: launch the decode kernels with programmatic dependent launch (sm_90), so they
    may start while the stream's previous kernel finishes; only b is read before that kernel
    has finished, so it must not write b.
    """
    m, k = a.shape
    n = b.shape[0]
    c = out if out is not None else empty(a, (m, n), out_dtype)
    c_dtype = as_dlpack(c)[1] or out_dtype
    if workspace is None and is_cuda(a):
        size = _lowbit.block_fp8_mm_workspace_bytes(m, n, k, a_scale_layout, c_dtype)
        if size > 0:
            workspace = empty(a, (size,), "uint8")
    _lowbit.block_fp8_mm(as_dlpack(a), a_scales, a_scale_layout, as_dlpack(b), b_scales,
                         as_dlpack(c), workspace, stream_for(a, stream), enable_pdl)
    return c
