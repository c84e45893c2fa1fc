"""NVFP4 weights (e2m1 values, e4m3 scales per 16 elements, fp32 global scale), 2:4 sparsity, and
the batched MoE-decode GEMVs. Recipes, packing and layouts: docs/nvfp4.md."""

from . import _lowbit
from ._arrays import as_dlpack, empty, is_cuda, stream_for


def nvfp4_quantize_weight(weight, *, global_scale=None, out=None, block_scales=None,
                          stream=None):
    """Quantize weight [N, K] (bf16/fp16/fp32, K % 16 == 0) with the ModelOpt recipe.

    Returns (packed [N, K/2] uint8, element 0 of a pair in the low nibble;
    block_scales [N, K/16] fp8_e4m3fn; global_scale [1] fp32). global = amax / (6 * 448) unless
    `global_scale` ([1] fp32) is given; block scale = e4m3(block_amax / (6 * global)), 1 for an
    all-zero block; w ~= e2m1 * block_scale * global.
    """
    n, k = weight.shape
    packed = out if out is not None else empty(weight, (n, k // 2), "uint8")
    scales = block_scales if block_scales is not None else empty(weight, (n, k // 16), "fp8_e4m3fn")
    given = global_scale is not None
    g = global_scale if given else empty(weight, (1,), "fp32")
    workspace = None
    if not given and is_cuda(weight):
        workspace = empty(weight, (_lowbit.nvfp4_quantize_weight_workspace_bytes(),), "uint8")
    _lowbit.nvfp4_quantize_weight(as_dlpack(weight), packed, as_dlpack(scales), g, given,
                                  workspace, stream_for(weight, stream))
    return packed, scales, g


def nvfp4_dequantize_weight(packed, block_scales, global_scale, *, dtype="bf16", out=None,
                            stream=None):
    """e2m1 * block_scale * global -> [N, K] of `dtype` (bf16, fp16 or fp32)."""
    n, half_k = packed.shape
    w = out if out is not None else empty(packed, (n, 2 * half_k), dtype)
    _lowbit.nvfp4_dequantize_weight(packed, as_dlpack(block_scales), global_scale, as_dlpack(w),
                                    stream_for(packed, stream))
    return w


def nvfp4_sparsify_24(packed, block_scales, global_scale=1.0):
    """Magnitude 2:4 pruning of dense codes [N, K/2] (host arrays) into (values [N, K/4] uint8,
    indices [N, K/8] uint8, report dict: groups, groups_losing_nonzeros,
    relative_frobenius_error, max_abs_error on the dequantized weight)."""
    n, half_k = packed.shape
    values = empty(packed, (n, half_k // 2), "uint8")
    indices = empty(packed, (n, half_k // 4), "uint8")
    report = _lowbit.nvfp4_sparsify_24(packed, as_dlpack(block_scales), float(global_scale),
                                       values, indices)
    return values, indices, report


def nvfp4_sparse24_to_dense(values, indices):
    """The dense codes [N, K/2] of a 2:4 compressed weight (zeros where values were pruned)."""
    n, quarter_k = values.shape
    packed = empty(values, (n, 2 * quarter_k), "uint8")
    _lowbit.nvfp4_sparse24_to_dense(values, indices, packed)
    return packed


def nvfp4_relayout_for_gemv(packed, block_scales):
    """Host arrays [N, K/2] / [N, K/16] (or [E, N, ...]) -> the GEMV kernels' coalesced layout
    (same shapes; N % 16 == 0, K % 64 == 0)."""
    gemv_packed = empty(packed, tuple(packed.shape), "uint8")
    gemv_scales = empty(packed, tuple(block_scales.shape), "fp8_e4m3fn")
    _lowbit.nvfp4_relayout_for_gemv(packed, as_dlpack(block_scales), gemv_packed,
                                    as_dlpack(gemv_scales))
    return gemv_packed, gemv_scales


def nvfp4_sparse24_relayout_for_gemv(values, indices, block_scales):
    """The sparse counterpart of nvfp4_relayout_for_gemv: (values, indices, block_scales)."""
    out = (empty(values, tuple(values.shape), "uint8"), empty(values, tuple(indices.shape), "uint8"),
           empty(values, tuple(block_scales.shape), "fp8_e4m3fn"))
    _lowbit.nvfp4_sparse24_relayout_for_gemv(values, indices, as_dlpack(block_scales), out[0],
                                             out[1], as_dlpack(out[2]))
    return out


def _gemv_output(x, weights, routing, out):
    if out is not None:
        return out
    rows = routing[2].shape[0] if routing is not None else x.shape[0]
    return empty(x, (rows, weights.shape[-2]), "bf16")


def nvfp4_gemv(x, packed, block_scales, global_scales, *, routing=None, out=None, stream=None,
               enable_pdl=False, prefetch_before_wait=True):
    """out[p, n] = bf16(global[e] * sum_k x[t, k] * e2m1[e, n, k] * s[e, n, k/16]).

    x [T, K] bf16; weights in GEMV layout, [E, N, K/2] / [E, N, K/16] (or [N, ...] with E = 1);
    global_scales [E] fp32. routing = (expert_ids [S], slot_offsets [S+1], token_ids [P]) int32
    device arrays: slot s multiplies rows token_ids[slot_offsets[s]:slot_offsets[s+1]] by expert
    expert_ids[s] into the same output rows, all slots in one launch. Without routing E must be
    1 and output row m is x row m.
    enable_pdl: launch the decode kernels with programmatic dependent launch (sm_90), so they
    may start while the stream's previous kernel finishes; nothing is read before that kernel
    has finished. prefetch_before_wait (under enable_pdl): each warp's first weights are asked of
    L2 before the wait, aimed by the routing as it is then; pass False when the kernel right
    before writes the routing (a router), whose old contents would aim it wrong (docs/pdl.md).
    """
    y = _gemv_output(x, packed, routing, out)
    _lowbit.nvfp4_gemv(as_dlpack(x), packed, as_dlpack(block_scales), global_scales,
                       as_dlpack(y), list(routing) if routing is not None else None,
                       stream_for(x, stream), enable_pdl, prefetch_before_wait)
    return y


def nvfp4_sparse24_gemv(x, values, indices, block_scales, global_scales, *, routing=None,
                        out=None, stream=None, enable_pdl=False, prefetch_before_wait=True):
    """nvfp4_gemv with 2:4 compressed weights in GEMV layout: values [E, N, K/4], indices
    [E, N, K/8], block_scales [E, N, K/16]."""
    y = _gemv_output(x, values, routing, out)
    _lowbit.nvfp4_sparse24_gemv(as_dlpack(x), values, indices, as_dlpack(block_scales),
                                global_scales, as_dlpack(y),
                                list(routing) if routing is not None else None,
                                stream_for(x, stream), enable_pdl, prefetch_before_wait)
    return y
