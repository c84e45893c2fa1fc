"""W8A8 scaled GEMM with dequantizing epilogues (vLLM's Scaled, ScaledBias, ScaledAzp and
ScaledAzpPerToken). Recipe, evaluation order and tolerances: docs/scaled_gemm.md."""

from . import _lowbit
from ._arrays import as_dlpack, dtype_name, empty, is_cuda, stream_for


def scaled_mm(a, b, a_scales, b_scales, *, bias=None, azp_adj=None, azp=None, out_dtype="bf16",
              out=None, workspace=None, stream=None, enable_pdl=False):
    """D [M, N] = s_a * s_b * (A . B^T - azp (x) azp_adj) + bias, one rounding to the output.

    a: [M, K] and b: [N, K] (weights K-major), both fp8_e4m3fn or both int8. a_scales fp32 [1]
    (per-tensor) or [M] (per-token); b_scales fp32 [1] or [N] (per-channel). The epilogue follows
    from the optional tensors given: bias [N] in the output dtype; azp_adj [N] int32 (int8 only:
    z_a * colsum(B) for a per-tensor zero point, or colsum(B) together with azp [M] int32 per-token
    zero points; see scaled_mm_azp_adjustment). Output bf16 or fp16. On CUDA, K must be a
    multiple of 16 and N of 8, with 16-byte aligned rows.
    enable_pdl: launch the decode kernels with programmatic dependent launch (sm_90), so they
    may start while the stream's previous kernel finishes; only b is read before that kernel
    has finished, so it must not write b.
    """
    m, k = a.shape
    n = b.shape[0]
    c = out if out is not None else empty(a, (m, n), out_dtype)
    if workspace is None and is_cuda(a):
        # Arrays of other frameworks reach DLPack only as int8 (fp8 needs a raw-code view).
        size = _lowbit.scaled_mm_workspace_bytes(m, n, k, dtype_name(a) or "int8",
                                                 dtype_name(c) or out_dtype)
        if size > 0:
            workspace = empty(a, (size,), "uint8")
    _lowbit.scaled_mm(as_dlpack(a), as_dlpack(b), a_scales, b_scales,
                      None if bias is None else as_dlpack(bias), azp_adj, azp, as_dlpack(c),
                      workspace, stream_for(a, stream), enable_pdl)
    return c


def scaled_mm_azp_adjustment(b, *, zero_point=1, out=None, stream=None):
    """zero_point * colsum(B) as int32 [N] for int8 weights b [N, K] (zero_point 1: the column
    sums that ScaledAzpPerToken takes; z_a: the azp_adj of a per-tensor zero point)."""
    adj = out if out is not None else empty(b, (b.shape[0],), "int32")
    _lowbit.scaled_mm_azp_adjustment(b, adj, zero_point, stream_for(b, stream))
    return adj
