"""lowbit ops on any DLPack array (numpy and torch get allocated outputs; other frameworks pass
their own). Recipes, layouts and NaN/Inf behaviour: docs/quant.md and docs/activation.md."""

from . import _lowbit
from ._arrays import as_dlpack, empty, is_cuda, stream_for

_LAYOUTS = ("row_major", "column_major", "column_major_tma_aligned")


def scale_storage_shape(scale_layout, m, k, group_size):
    """Shape of the fp32 scale array of a [m, k] input quantized in 1 x group_size groups."""
    return tuple(_lowbit.scale_storage_shape(scale_layout, m, k, group_size))


def per_token_group_quant(x, group_size=128, *, dtype="fp8_e4m3fn", scale_layout="row_major",
                          eps=1e-10, scale_ub=None, power_of_two_scale=False, out=None,
                          scales=None, stream=None, enable_pdl=False):
    """Quantize x [M, K] (bf16/fp16/fp32, rows may be padded) in 1 x group_size groups.

    Returns (q, scales): q [M, K] of `dtype` (fp8_e4m3fn or int8); scales fp32 with the storage
    shape of `scale_layout` (row_major [M, K/g], column_major [K/g, M],
    column_major_tma_aligned [K/g, round_up(M, 4)]). Per group:
    s = max(min(amax, scale_ub), eps) / qmax, rounded up to a power of two if
    power_of_two_scale; q = saturate(round_half_even(x / s)). `enable_pdl`: programmatic
    dependent launch (docs/pdl.md); a GEMM launched with PDL behind it may start either way.
    """
    m, k = x.shape
    q = out if out is not None else empty(x, (m, k), dtype)
    s = scales if scales is not None else empty(x, scale_storage_shape(scale_layout, m, k, group_size), "fp32")
    xi, x_dtype = as_dlpack(x)
    qi, q_dtype = as_dlpack(q)
    _lowbit.per_token_group_quant(xi, qi, s, group_size, scale_layout, eps, scale_ub,
                                  power_of_two_scale, stream_for(x, stream), x_dtype, q_dtype or dtype,
                                  enable_pdl)
    return q, s


def silu_and_mul(x, *, limit=None, out=None, stream=None, enable_pdl=False):
    """silu(gate) * up for x [T, 2H] = [gate | up] (bf16/fp16); returns [T, H] of x's dtype.
    `limit` applies the SwiGLU clamp (gate <= limit, |up| <= limit) first. `enable_pdl`:
    programmatic dependent launch (docs/pdl.md)."""
    t, two_h = x.shape
    xi, x_dtype = as_dlpack(x)
    y = out if out is not None else empty(x, (t, two_h // 2), x_dtype or _dtype_of(x))
    yi, y_dtype = as_dlpack(y)
    _lowbit.silu_and_mul(xi, yi, limit, stream_for(x, stream), x_dtype, y_dtype, enable_pdl)
    return y


def silu_and_mul_quant(x, group_size=128, *, dtype="fp8_e4m3fn", scale_layout="row_major",
                       eps=1e-10, scale_ub=None, power_of_two_scale=False, limit=None, out=None,
                       scales=None, stream=None, enable_pdl=False):
    """per_token_group_quant(silu(gate) * up) for x [T, 2H], with the product kept in float32.
    Returns (q [T, H], scales in the storage shape of scale_layout for [T, H]). `enable_pdl` as
    for per_token_group_quant."""
    t, two_h = x.shape
    h = two_h // 2
    q = out if out is not None else empty(x, (t, h), dtype)
    s = scales if scales is not None else empty(x, scale_storage_shape(scale_layout, t, h, group_size), "fp32")
    xi, x_dtype = as_dlpack(x)
    qi, q_dtype = as_dlpack(q)
    _lowbit.silu_and_mul_quant(xi, qi, s, group_size, scale_layout, eps, scale_ub,
                               power_of_two_scale, limit, stream_for(x, stream), x_dtype,
                               q_dtype or dtype, enable_pdl)
    return q, s


def per_token_quant(x, *, dtype="fp8_e4m3fn", eps=1e-10, scale_ub=None, out=None, scales=None,
                    stream=None, enable_pdl=False):
    """One scale per row: returns (q [M, K] of dtype, scales [M] fp32). `enable_pdl` as for
    per_token_group_quant."""
    m, k = x.shape
    q = out if out is not None else empty(x, (m, k), dtype)
    s = scales if scales is not None else empty(x, (m,), "fp32")
    xi, x_dtype = as_dlpack(x)
    qi, q_dtype = as_dlpack(q)
    _lowbit.per_token_quant(xi, qi, s, eps, scale_ub, stream_for(x, stream), x_dtype, q_dtype or dtype,
                            enable_pdl)
    return q, s


def per_token_asymmetric_int8_quant(x, *, eps=1e-10, out=None, scales=None, zero_points=None,
                                    stream=None, enable_pdl=False):
    """Asymmetric int8 per row: returns (q [M, K] int8, scales [M] fp32, zero_points [M] int32),
    with x ~= (q - zero_point) * scale and the range widened to include 0. `enable_pdl` as for
    per_token_group_quant."""
    m, k = x.shape
    q = out if out is not None else empty(x, (m, k), "int8")
    s = scales if scales is not None else empty(x, (m,), "fp32")
    zp = zero_points if zero_points is not None else empty(x, (m,), "int32")
    xi, x_dtype = as_dlpack(x)
    _lowbit.per_token_asymmetric_int8_quant(xi, q, s, zp, eps, stream_for(x, stream), x_dtype,
                                            enable_pdl)
    return q, s, zp


def per_tensor_quant(x, scale=None, *, dtype="fp8_e4m3fn", eps=1e-10, scale_ub=None, out=None,
                     workspace=None, stream=None, enable_pdl=False):
    """One scale for the tensor. With `scale` (a [1] fp32 array) the scale is static; without it
    it is computed on the device from the amax (no host sync) and returned. Returns (q, scale).
    `enable_pdl` as for per_token_group_quant."""
    m, k = x.shape
    dynamic = scale is None
    q = out if out is not None else empty(x, (m, k), dtype)
    s = scale if scale is not None else empty(x, (1,), "fp32")
    if dynamic and workspace is None and is_cuda(x):
        workspace = empty(x, (_lowbit.per_tensor_quant_workspace_bytes(),), "uint8")
    xi, x_dtype = as_dlpack(x)
    qi, q_dtype = as_dlpack(q)
    _lowbit.per_tensor_quant(xi, qi, s, dynamic, eps, scale_ub, workspace, stream_for(x, stream),
                             x_dtype, q_dtype or dtype, enable_pdl)
    return q, s


def _dtype_of(x):
    from ._arrays import dtype_name
    return dtype_name(x)


