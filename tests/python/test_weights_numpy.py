"""Block FP8 and NVFP4 weight ops from Python on CPU arrays, against references written from
docs/block_gemm.md and docs/nvfp4.md with numpy and ml_dtypes (not lowbit's CPU reference).
ml_dtypes' float8_e4m3fn and float4_e2m1fn casts do not saturate, so the references clip to
the largest finite value first, as the docs' recipes do."""

import ml_dtypes
import numpy as np
import pytest

import lowbit

RNG = np.random.default_rng(7)
F32 = np.float32
E4M3 = ml_dtypes.float8_e4m3fn
E2M1 = ml_dtypes.float4_e2m1fn


def weight(n, k, dtype=ml_dtypes.bfloat16, spread=2.0):
    magnitude = 10.0 ** RNG.uniform(-spread, spread, size=(n, 1))
    return (RNG.standard_normal((n, k)) * magnitude * 0.02).astype(dtype)


def e4m3(x):
    return np.clip(x, -448, 448).astype(E4M3)


# ---- block FP8 -----------------------------------------------------------------------------------

def ref_block_fp8_quantize(w, eps=F32(1e-10)):
    w = w.astype(F32)
    n, k = w.shape
    nb, kb = -(-n // 128), -(-k // 128)
    scales = np.empty((nb, kb), F32)
    q = np.empty((n, k), E4M3)
    for i in range(nb):
        for j in range(kb):
            block = w[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128]
            s = np.maximum(np.abs(block).max(), eps) / F32(448)
            scales[i, j] = s
            q[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128] = e4m3(block / s)
    return q, scales


@pytest.mark.parametrize("shape", [(256, 384), (200, 136), (576, 128)])
@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16, np.float32])
def test_block_fp8_quantize_matches_recipe(shape, dtype):
    w = weight(*shape, dtype=dtype)
    q, s = lowbit.block_fp8_quantize_weight(w)
    want_q, want_s = ref_block_fp8_quantize(w)
    assert q.dtype == E4M3 and s.shape == want_s.shape
    assert np.array_equal(s, want_s)
    assert np.array_equal(q.view(np.uint8), want_q.view(np.uint8))
    back = lowbit.block_fp8_dequantize_weight(q, s, dtype="fp32")
    want_back = want_q.astype(F32) * np.repeat(np.repeat(want_s, 128, 0), 128, 1)[:shape[0], :shape[1]]
    assert np.array_equal(back, want_back)


def test_block_fp8_mm_against_float64_of_dequantized_operands():
    m, n, k = 37, 200, 384
    a = weight(m, k, np.float32)
    q_a, s_a = lowbit.per_token_group_quant(a, 128)
    w = weight(n, k, np.float32)
    q_b, s_b = lowbit.block_fp8_quantize_weight(w)
    c = lowbit.block_fp8_mm(q_a, s_a, q_b, s_b, out_dtype="fp32")
    deq_a = q_a.astype(np.float64) * np.repeat(s_a, 128, 1)
    deq_b = q_b.astype(np.float64) * np.repeat(np.repeat(s_b, 128, 0), 128, 1)[:n, :k]
    want = deq_a @ deq_b.T
    assert c.shape == (m, n) and c.dtype == np.float32
    assert np.linalg.norm(c - want) <= 1e-6 * np.linalg.norm(want)
    c16 = lowbit.block_fp8_mm(q_a, s_a, q_b, s_b)  # bf16 output: one rounding of the same sums
    assert c16.dtype == ml_dtypes.bfloat16
    assert np.all(np.abs(c16.astype(np.float64) - want) <= np.abs(want) * 2.0 ** -8 + 1e-30)


def test_block_fp8_errors_name_the_argument():
    q = np.zeros((128, 128), E4M3)
    with pytest.raises(ValueError, match="b_scales"):
        lowbit.block_fp8_mm(q, np.ones((128, 1), F32), q, np.ones((2, 2), F32))


# ---- NVFP4 ---------------------------------------------------------------------------------------

def ref_nvfp4_quantize(w):
    w = w.astype(F32)
    n, k = w.shape
    amax = np.abs(w).max()
    g = F32(amax / F32(2688)) if amax > 0 else F32(1)
    blocks = w.reshape(n, k // 16, 16)
    block_amax = np.abs(blocks).max(axis=2)
    s = e4m3(block_amax / (F32(6) * g))
    s = np.where(block_amax == 0, E4M3(1.0), s)
    s = np.where((block_amax > 0) & (s.astype(F32) == 0), E4M3(2.0 ** -9), s).astype(E4M3)
    denominator = (s.astype(F32) * g)[:, :, None]
    codes = np.clip(blocks / denominator, -6, 6).astype(E2M1).view(np.uint8).reshape(n, k) & 0xF
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    return packed, s, g


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float32])
def test_nvfp4_quantize_matches_the_modelopt_recipe(dtype):
    w = weight(64, 256, dtype, spread=1.0)
    w[3, 16:32] = 0  # an all-zero block gets scale 1
    packed, s, g = lowbit.nvfp4_quantize_weight(w)
    want_packed, want_s, want_g = ref_nvfp4_quantize(w)
    assert g[0] == want_g
    assert np.array_equal(s.view(np.uint8), want_s.view(np.uint8))
    assert np.array_equal(packed, want_packed)
    back = lowbit.nvfp4_dequantize_weight(packed, s, g, dtype="fp32")
    lo, hi = packed & 0xF, packed >> 4
    codes = np.stack([lo, hi], axis=2).reshape(64, 256).astype(np.uint8)
    values = codes.view(E2M1).astype(F32)
    want = (values * np.repeat(want_s.astype(F32), 16, 1)) * want_g
    assert np.array_equal(back, want)


def test_nvfp4_sparsify_keeps_the_two_largest_of_every_four():
    w = weight(32, 128, np.float32, spread=0.5)
    packed, s, g = lowbit.nvfp4_quantize_weight(w)
    values, indices, report = lowbit.nvfp4_sparsify_24(packed, s, g[0])
    assert values.shape == (32, 32) and indices.shape == (32, 16)
    assert report["groups"] == 32 * 32
    dense = lowbit.nvfp4_sparse24_to_dense(values, indices)
    codes = np.stack([packed & 0xF, packed >> 4], axis=2).reshape(32, 32, 4)
    pruned = np.stack([dense & 0xF, dense >> 4], axis=2).reshape(32, 32, 4)
    magnitude = (codes & 7).astype(np.int32)
    # Keep the 2 largest magnitudes, the lower position among equals (stable sort).
    keep = np.argsort(-magnitude, axis=2, kind="stable")[:, :, :2]
    want = np.zeros_like(codes)
    np.put_along_axis(want, keep, np.take_along_axis(codes, keep, axis=2), axis=2)
    assert np.array_equal(pruned & 7, want & 7)
    assert report["relative_frobenius_error"] > 0


def test_nvfp4_gemv_on_the_cpu_against_dequantize_then_matmul():
    n, k, t = 64, 256, 3
    w = weight(n, k, np.float32, spread=0.5)
    packed, s, g = lowbit.nvfp4_quantize_weight(w)
    gemv_packed, gemv_s = lowbit.nvfp4_relayout_for_gemv(packed, s)
    x = weight(t, k, ml_dtypes.bfloat16, spread=0.5)
    y = lowbit.nvfp4_gemv(x, gemv_packed, gemv_s, g)
    deq = lowbit.nvfp4_dequantize_weight(packed, s, g, dtype="fp32").astype(np.float64)
    want = x.astype(np.float64) @ deq.T
    bound = np.abs(want) * 2.0 ** -8 + 2.0 ** -12 * (np.abs(x.astype(np.float64)) @ np.abs(deq).T)
    assert y.shape == (t, n) and np.all(np.abs(y.astype(np.float64) - want) <= bound)
    values, indices, _ = lowbit.nvfp4_sparsify_24(packed, s, g[0])
    sv, si, ss = lowbit.nvfp4_sparse24_relayout_for_gemv(values, indices, s)
    dense_pruned = lowbit.nvfp4_sparse24_to_dense(values, indices)
    dp, ds = lowbit.nvfp4_relayout_for_gemv(dense_pruned, s)
    assert np.array_equal(lowbit.nvfp4_sparse24_gemv(x, sv, si, ss, g).view(np.uint16),
                          lowbit.nvfp4_gemv(x, dp, ds, g).view(np.uint16))


# ---- scaled GEMM (docs/scaled_gemm.md) -----------------------------------------------------------

def ref_scaled_mm(a, b, s_a, s_b, bias=None, azp_adj=None, azp=None):
    """docs/scaled_gemm.md: exact integer/float64 sums, then in float32 t = acc - azp * azp_adj,
    y = s_b * t, d = fma(s_a, y, bias) (float64 product then one float32 rounding is that fma)."""
    acc = a.astype(np.float64) @ b.astype(np.float64).T
    if azp_adj is not None:
        zp = np.ones((a.shape[0], 1), np.int64) if azp is None else azp.astype(np.int64)[:, None]
        acc = acc - (zp * azp_adj.astype(np.int64)[None, :]).astype(np.float64)
    t = acc.astype(F32)
    y = (s_b.reshape(1, -1).astype(F32) * t).astype(F32)
    c = np.zeros_like(y, dtype=np.float64) if bias is None else bias.astype(np.float64)[None, :]
    return (s_a.reshape(-1, 1).astype(np.float64) * y.astype(np.float64) + c).astype(F32)


def test_scaled_mm_int8_every_epilogue_bit_exact():
    m, n, k = 19, 48, 96
    a = RNG.integers(-128, 128, size=(m, k)).astype(np.int8)
    b = RNG.integers(-128, 128, size=(n, k)).astype(np.int8)
    s_a = RNG.uniform(0.01, 0.1, size=m).astype(F32)
    s_b = RNG.uniform(0.001, 0.01, size=n).astype(F32)
    bias = RNG.standard_normal(n).astype(ml_dtypes.bfloat16)
    colsum = lowbit.scaled_mm_azp_adjustment(b)
    assert np.array_equal(colsum, b.astype(np.int32).sum(axis=1))
    azp = RNG.integers(-20, 20, size=m).astype(np.int32)
    adj = lowbit.scaled_mm_azp_adjustment(b, zero_point=7)
    cases = [({}, {}), ({"bias": bias}, {"bias": bias}),
             ({"azp_adj": adj, "bias": bias}, {"azp_adj": adj, "bias": bias}),
             ({"azp_adj": colsum, "azp": azp}, {"azp_adj": colsum, "azp": azp})]
    for given, ref_args in cases:
        got = lowbit.scaled_mm(a, b, s_a, s_b, **given)
        want = ref_scaled_mm(a, b, s_a, s_b, **{key: value for key, value in ref_args.items()})
        assert got.dtype == ml_dtypes.bfloat16 and got.shape == (m, n)
        assert np.array_equal(got.view(np.uint16), want.astype(ml_dtypes.bfloat16).view(np.uint16))


def test_scaled_mm_fp8_per_tensor_and_fp16_output():
    m, n, k = 5, 40, 256
    a = e4m3(RNG.standard_normal((m, k)) * 8)
    b = e4m3(RNG.standard_normal((n, k)) * 8)
    s_a, s_b = np.array([0.02], F32), np.array([0.005], F32)
    got = lowbit.scaled_mm(a, b, s_a, s_b, out_dtype="fp16")
    want = ref_scaled_mm(a.astype(F32), b.astype(F32), s_a, s_b)
    assert got.dtype == np.float16
    assert np.array_equal(got, want.astype(np.float16))


def test_scaled_mm_errors_name_the_argument():
    a = np.zeros((4, 32), np.int8)
    with pytest.raises(ValueError, match="b_scales"):
        lowbit.scaled_mm(a, a, np.ones(1, F32), np.ones(3, F32))
    with pytest.raises(ValueError, match="azp"):
        lowbit.scaled_mm(e4m3(np.zeros((4, 32))), e4m3(np.zeros((4, 32))), np.ones(1, F32),
                         np.ones(1, F32), azp_adj=np.zeros(4, np.int32))
