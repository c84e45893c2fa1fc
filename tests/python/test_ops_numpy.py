"""lowbit from Python on CPU arrays (numpy + ml_dtypes), against independent references written
from the docs (tests/python/reference.py). Quantized bytes must match exactly, NaN codes by
NaN-ness (ml_dtypes keeps the NaN sign, lowbit and CUDA do not)."""

import ml_dtypes
import numpy as np
import pytest

import lowbit
import reference as ref

RNG = np.random.default_rng(20261121)
F32 = np.float32


def activations(m, k, dtype=ml_dtypes.bfloat16):
    """Random values with a magnitude that varies per 32 columns, some outliers, never all zero."""
    magnitude = np.repeat(10.0 ** RNG.uniform(-3, 3, size=(m, (k + 31) // 32)), 32, axis=1)[:, :k]
    x = RNG.standard_normal((m, k)) * magnitude
    x[RNG.random((m, k)) < 0.001] *= 50
    return x.astype(dtype)


def same_codes(got, want, fp8):
    got = np.asarray(got).view(np.uint8)
    want = np.asarray(want).view(np.uint8)
    if fp8:  # 0x7F / 0xFF are the two NaN codes
        got_nan = (got & 0x7F) == 0x7F
        want_nan = (want & 0x7F) == 0x7F
        assert np.array_equal(got_nan, want_nan)
        got, want = got[~got_nan], want[~want_nan]
    mismatches = np.flatnonzero(got != want)
    assert mismatches.size == 0, f"{mismatches.size} codes differ, first at {mismatches[:5]}"


@pytest.mark.parametrize("dtype", ["fp8_e4m3fn", "int8"])
@pytest.mark.parametrize("group", [32, 64, 128])
@pytest.mark.parametrize("input_dtype", [ml_dtypes.bfloat16, np.float16, np.float32])
def test_per_token_group_quant_matches_reference(dtype, group, input_dtype):
    x = activations(33, 7 * group, input_dtype)
    q, s = lowbit.per_token_group_quant(x, group, dtype=dtype)
    want_q, want_s = ref.group_quant(x.astype(F32), group, dtype)
    same_codes(q, want_q, dtype == "fp8_e4m3fn")
    assert np.array_equal(s, want_s)


@pytest.mark.parametrize("layout", ["row_major", "column_major", "column_major_tma_aligned"])
def test_per_token_group_quant_options_and_layouts(layout):
    x = activations(37, 1024)
    q, s = lowbit.per_token_group_quant(x, 128, scale_layout=layout, scale_ub=2.5,
                                        power_of_two_scale=True)
    want_q, want_s = ref.group_quant(x.astype(F32), 128, "fp8_e4m3fn", scale_ub=2.5,
                                     power_of_two=True)
    same_codes(q, want_q, True)
    if layout == "row_major":
        assert np.array_equal(s, want_s)
    else:
        assert s.shape == lowbit.scale_storage_shape(layout, 37, 1024, 128)
        assert np.array_equal(s[:, :37], want_s.T)


def test_per_token_group_quant_strided_rows_and_specials():
    wide = activations(8, 384).astype(F32)
    wide[0, 3] = np.nan
    wide[1, 130] = np.inf
    wide[2, :128] = 0.0
    x = wide[:, :256]  # rows 384 apart
    q, s = lowbit.per_token_group_quant(x, 128)
    want_q, want_s = ref.group_quant(np.ascontiguousarray(x), 128, "fp8_e4m3fn")
    same_codes(q, want_q, True)
    assert np.array_equal(s, want_s)
    assert s[1, 1] == np.inf and s[2, 0] == F32(1e-10) / F32(448)


def test_per_token_quant_and_per_tensor_quant():
    x = activations(19, 512, np.float32)
    q, s = lowbit.per_token_quant(x, scale_ub=50.0)
    want_q, want_s = ref.group_quant(x, 512, "fp8_e4m3fn", scale_ub=50.0)
    same_codes(q, want_q, True)
    assert np.array_equal(s, want_s[:, 0])

    q, s = lowbit.per_tensor_quant(x, dtype="int8")  # dynamic
    amax = ref.nan_amax(x.reshape(-1), axis=0)
    want_s = F32(max(amax, F32(1e-10)) / F32(127))
    assert s[0] == want_s
    same_codes(q, ref.encode((x / want_s).astype(F32), "int8"), False)

    static = np.array([0.25], dtype=F32)
    q, _ = lowbit.per_tensor_quant(x, static)
    same_codes(q, ref.encode((x / F32(0.25)).astype(F32), "fp8_e4m3fn"), True)


def test_per_token_asymmetric_int8_quant():
    x = activations(23, 256, np.float32) + 3.0  # mostly positive rows
    x[0, :] = 2.0  # constant row
    x[1, 5] = np.nan
    q, s, zp = lowbit.per_token_asymmetric_int8_quant(x)
    want_q, want_s, want_zp = ref.asymmetric_int8(x)
    assert np.array_equal(s, want_s)
    assert np.array_equal(zp, want_zp)
    assert np.array_equal(q, want_q)
    assert q[0, 0] == 127 and zp[0] == -128  # the constant row is exact


@pytest.mark.parametrize("limit", [None, 7.0])
def test_silu_and_mul_within_one_bf16_ulp(limit):
    x = activations(16, 2 * 512)
    y = lowbit.silu_and_mul(x, limit=limit)
    exact = ref.silu_mul(x[:, :512].astype(F32), x[:, 512:].astype(F32), limit)
    got = y.astype(np.float64)
    ulp = np.abs(exact.astype(ml_dtypes.bfloat16).astype(np.float64)) * 2.0 ** -7
    assert np.all(np.abs(got - exact) <= ulp + 1e-30)


def test_silu_and_mul_quant_dequantizes_close_to_silu():
    x = activations(16, 2 * 1024)
    q, s = lowbit.silu_and_mul_quant(x, 128)
    exact = ref.silu_mul(x[:, :1024].astype(F32), x[:, 1024:].astype(F32))
    deq = q.astype(np.float64) * np.repeat(s, 128, axis=1)
    # fp8 e4m3 keeps 3 mantissa bits: half a step is 1/16 of the value, plus subnormal steps.
    assert np.all(np.abs(deq - exact) <= np.abs(exact) / 16 + np.repeat(s, 128, axis=1) * 2.0 ** -9 + 1e-30)
    amax = np.abs(exact).reshape(16, 8, 128).max(axis=2)
    assert np.allclose(s, np.maximum(amax, 1e-10) / 448, rtol=1e-5)


def test_errors_name_the_argument():
    x = activations(4, 256)
    with pytest.raises(ValueError, match="argument 'group_size'"):
        lowbit.per_token_group_quant(x, 48)
    with pytest.raises(ValueError, match="argument 'output'"):
        lowbit.per_token_group_quant(x, 128, out=np.empty((4, 128), dtype=np.int8))
    with pytest.raises(ValueError, match="argument 'scale_layout'"):
        lowbit.per_token_group_quant(x, 128, scale_layout="diagonal")
    with pytest.raises(ValueError, match="argument 'input'"):
        lowbit.silu_and_mul(activations(4, 255, np.float32))
    with pytest.raises(ValueError, match="argument 'scale'"):
        lowbit.per_tensor_quant(x, np.array([0.0], dtype=F32))


def test_out_variants_write_into_caller_arrays():
    x = activations(8, 256)
    q = np.full((8, 256), 0x7F, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn)
    s = np.full((8, 2), np.nan, dtype=F32)
    q2, s2 = lowbit.per_token_group_quant(x, 128, out=q, scales=s)
    assert q2 is q and s2 is s
    want_q, want_s = ref.group_quant(x.astype(F32), 128, "fp8_e4m3fn")
    same_codes(q, want_q, True)
    assert np.array_equal(s, want_s)
