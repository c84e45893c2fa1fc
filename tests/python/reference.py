"""Independent references written from docs/quant.md and docs/activation.md with numpy float32
arithmetic (IEEE, round to nearest even) and ml_dtypes casts. They never call lowbit."""

import ml_dtypes
import numpy as np

F32 = np.float32
QMAX = {"fp8_e4m3fn": F32(448.0), "int8": F32(127.0)}


def nan_amax(x, axis):
    """max |x| over axis, NaN excluded, 0 for an all-NaN slice."""
    a = np.abs(x)
    a = np.where(np.isnan(a), F32(0), a)
    return a.max(axis=axis, initial=F32(0))


def power_of_two_up(s):
    """2^ceil(log2 s) exactly (s > 0, normal)."""
    mantissa, exponent = np.frexp(s)  # s = mantissa * 2^exponent, mantissa in [0.5, 1)
    return np.where(mantissa == 0.5, s, np.ldexp(F32(1), exponent)).astype(F32)


def encode(q, dtype):
    """Saturating cast of float32 quotients: fp8 e4m3fn bytes (ml_dtypes after clamping to
    +-448, since ml_dtypes turns overflow into NaN) or int8 (round half even, NaN -> 0)."""
    if dtype == "fp8_e4m3fn":
        return np.clip(q, -448, 448).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    r = np.rint(np.where(np.isnan(q), F32(0), q))
    return np.clip(r, -128, 127).astype(np.int8).view(np.uint8)


def group_quant(x, group, dtype, eps=1e-10, scale_ub=None, power_of_two=False):
    """(q bytes [M, K], row-major scales [M, K/g]) for float32 x [M, K]."""
    m, k = x.shape
    xg = x.reshape(m, k // group, group)
    amax = nan_amax(xg, axis=2)
    if scale_ub is not None:
        amax = np.minimum(amax, F32(scale_ub))
    s = (np.maximum(amax, F32(eps)) / QMAX[dtype]).astype(F32)
    if power_of_two:
        s = power_of_two_up(s)
    with np.errstate(invalid="ignore"):  # Inf / Inf in a group with an Inf: NaN, as documented
        q = (xg / s[:, :, None]).astype(F32)
    return encode(q, dtype).reshape(m, k), s


def asymmetric_int8(x, eps=1e-10):
    masked_lo = np.where(np.isnan(x), F32(np.inf), x).min(axis=1)
    masked_hi = np.where(np.isnan(x), F32(-np.inf), x).max(axis=1)
    lo = np.minimum(masked_lo, F32(0))
    hi = np.maximum(masked_hi, F32(0))
    spread = ((hi - lo).astype(F32) / F32(255)).astype(F32)
    s = np.where(spread > F32(eps), spread, F32(eps)).astype(F32)
    zp = np.rint((F32(-128) - (lo / s).astype(F32)).astype(F32)).astype(np.int64)
    r = np.rint(np.where(np.isnan(x), F32(0), (x / s[:, None]).astype(F32))).astype(np.int64)
    q = np.clip(r + zp[:, None], -128, 127).astype(np.int8)
    return q, s, zp.astype(np.int32)


def silu_mul(gate, up, limit=None):
    """float64 silu(gate) * up (the exact function lowbit's float32 recipe approximates)."""
    g = gate.astype(np.float64)
    u = up.astype(np.float64)
    if limit is not None:
        g = np.where(g > limit, limit, g)
        u = np.where(u > limit, limit, np.where(u < -limit, -limit, u))
    g = np.where(g < -80.0, -80.0, g)  # docs/activation.md: gates below -80 count as -80
    with np.errstate(over="ignore"):
        return g / (1.0 + np.exp(-g)) * u
