"""lowbit from PyTorch on the GPU machine: every op against PyTorch references written from
docs/quant.md, docs/activation.md, docs/block_gemm.md and docs/nvfp4.md (never lowbit's own CPU reference), CUDA-graph capture
and replay with new inputs, and torch.compile(fullgraph=True) through the custom ops.
Run by scripts/gpu-check.sh; needs torch with CUDA."""

import pytest
import torch

import lowbit
import lowbit.torch  # noqa: F401  (registers torch.ops.lowbit.*)

DEVICE = "cuda"
F32 = torch.float32


def activations(m, k, seed, dtype=torch.bfloat16):
    g = torch.Generator(device=DEVICE).manual_seed(seed)
    magnitude = 10.0 ** (torch.rand((m, (k + 31) // 32), generator=g, device=DEVICE) * 6 - 3)
    x = torch.randn((m, k), generator=g, device=DEVICE) * magnitude.repeat_interleave(32, 1)[:, :k]
    return x.to(dtype)


def true_div(a, divisor):
    """IEEE division by a constant: PyTorch turns `tensor / python_float` into a multiply by the
    reciprocal (off by one ulp), so divide by a tensor of the constant instead."""
    return a / torch.full_like(a, divisor)


def ref_group_quant(x, group, dtype, eps=1e-10, scale_ub=None, pow2=False):
    """docs/quant.md in float32 torch ops: amax (NaN excluded), s = max(min(amax, ub), eps)/qmax,
    s -> 2^ceil(log2 s) if pow2, q = saturate(round_half_even(x / s))."""
    m, k = x.shape
    xg = x.float().view(m, k // group, group)
    amax = torch.nan_to_num(xg.abs(), nan=0.0).amax(dim=-1)
    if scale_ub is not None:
        amax = torch.clamp(amax, max=scale_ub)
    qmax = 448.0 if dtype == "fp8_e4m3fn" else 127.0
    s = true_div(torch.clamp(amax, min=eps), qmax)
    if pow2:
        mantissa, exponent = torch.frexp(s)
        s = torch.where(mantissa == 0.5, s, torch.ldexp(torch.ones_like(s), exponent))
    q = xg / s[..., None]
    if dtype == "fp8_e4m3fn":
        q = torch.clamp(q, -448, 448).to(torch.float8_e4m3fn)
    else:
        q = torch.clamp(torch.round(torch.nan_to_num(q, nan=0.0)), -128, 127).to(torch.int8)
    return q.view(m, k), s


def same_bytes(a, b):
    a, b = a.view(torch.uint8), b.view(torch.uint8)
    mismatches = (a != b).sum().item()
    assert mismatches == 0, f"{mismatches} bytes differ"


@pytest.mark.parametrize("dtype", ["fp8_e4m3fn", "int8"])
@pytest.mark.parametrize("layout", ["row_major", "column_major", "column_major_tma_aligned"])
@pytest.mark.parametrize("m,k", [(1, 7168), (129, 2048), (4096, 7168)])
def test_per_token_group_quant_against_torch(dtype, layout, m, k):
    x = activations(m, k, seed=m + k)
    q, s = lowbit.per_token_group_quant(x, 128, dtype=dtype, scale_layout=layout,
                                        power_of_two_scale=layout != "row_major")
    want_q, want_s = ref_group_quant(x, 128, dtype, pow2=layout != "row_major")
    same_bytes(q, want_q)
    if layout == "row_major":
        assert torch.equal(s, want_s)
    else:
        assert torch.equal(s[:, :m], want_s.t())


def test_silu_and_mul_quant_and_silu_and_mul_against_torch():
    x = activations(512, 2 * 7168, seed=7)
    gate, up = x[:, :7168].float(), x[:, 7168:].float()
    gate = gate.clamp(min=-80.0)  # docs/activation.md: gates below -80 count as -80
    exact = (gate.double() * torch.sigmoid(gate.double()) * up.double())
    y = lowbit.silu_and_mul(x)
    assert torch.all((y.double() - exact).abs() <= exact.abs() * 2 ** -7 + 1e-30)
    q, s = lowbit.silu_and_mul_quant(x, 128)
    deq = q.double() * s.double().repeat_interleave(128, 1)
    step = s.double().repeat_interleave(128, 1) * 2.0 ** -9
    assert torch.all((deq - exact).abs() <= exact.abs() / 16 + step + 1e-30)


def test_per_token_and_per_tensor_against_torch():
    x = activations(1000, 4096, seed=11, dtype=torch.float16)
    q, s = lowbit.per_token_quant(x, scale_ub=100.0)
    want_q, want_s = ref_group_quant(x, 4096, "fp8_e4m3fn", scale_ub=100.0)
    same_bytes(q, want_q)
    assert torch.equal(s, want_s[:, 0])
    q, s = lowbit.per_tensor_quant(x)
    amax = x.float().abs().amax()
    want_s = true_div(torch.clamp(amax, min=1e-10), 448.0)
    assert torch.equal(s[0], want_s)
    same_bytes(q, torch.clamp(x.float() / want_s, -448, 448).to(torch.float8_e4m3fn))


def test_asymmetric_int8_against_torch():
    x = activations(300, 2048, seed=13, dtype=torch.float32) + 2.0
    q, s, zp = lowbit.per_token_asymmetric_int8_quant(x)
    lo = torch.clamp(x.amin(dim=1), max=0.0)
    hi = torch.clamp(x.amax(dim=1), min=0.0)
    want_s = torch.clamp(true_div(hi - lo, 255.0), min=1e-10)
    want_zp = torch.round(-128.0 - lo / want_s).to(torch.int32)
    want_q = torch.clamp(torch.round(x / want_s[:, None]) + want_zp[:, None], -128, 127).to(torch.int8)
    assert torch.equal(s, want_s)
    assert torch.equal(zp, want_zp)
    assert torch.equal(q, want_q)


def test_cuda_graph_capture_and_replay_with_new_inputs():
    static_x = activations(256, 2 * 4096, seed=1)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up outside capture
        lowbit.silu_and_mul_quant(static_x, 128)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        q, s = lowbit.silu_and_mul_quant(static_x, 128)
        q2, s2 = lowbit.per_token_group_quant(q.float().to(torch.bfloat16), 128)
    for seed in (2, 3):
        new_x = activations(256, 2 * 4096, seed=seed)
        static_x.copy_(new_x)
        graph.replay()
        torch.cuda.synchronize()
        want_q, want_s = lowbit.silu_and_mul_quant(new_x, 128)
        same_bytes(q, want_q)
        assert torch.equal(s, want_s)
        want_q2, want_s2 = lowbit.per_token_group_quant(want_q.float().to(torch.bfloat16), 128)
        same_bytes(q2, want_q2)


def test_torch_compile_fullgraph_traces_the_custom_ops():
    def layer(x):
        q, s = torch.ops.lowbit.silu_and_mul_quant(x, 128, "fp8_e4m3fn", "column_major_tma_aligned",
                                                   1e-10, None, True, None)
        y = torch.ops.lowbit.silu_and_mul(x, None)
        q2, s2 = torch.ops.lowbit.per_token_quant(y, "int8", 1e-10, None)
        return q.view(torch.uint8), s, y, q2, s2

    x = activations(64, 2 * 2048, seed=5)
    compiled = torch.compile(layer, fullgraph=True)
    for got, want in zip(compiled(x), layer(x)):
        assert torch.equal(got, want)


def test_errors_surface_as_value_error():
    x = activations(4, 256, seed=9)
    with pytest.raises(ValueError, match="argument 'group_size'"):
        lowbit.per_token_group_quant(x, 96)


def test_cupy_arrays_with_an_explicit_stream():
    cp = pytest.importorskip("cupy")
    import numpy as np
    host = (np.random.default_rng(3).standard_normal((64, 1024)) * 3).astype(np.float32)
    x = cp.asarray(host)
    q = cp.full((64, 1024), 0x7F, dtype=cp.uint8)  # raw fp8 codes: cupy has no fp8 dtype
    s = cp.empty((8, 64), dtype=cp.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    lowbit.per_token_group_quant(x, 128, scale_layout="column_major", out=q, scales=s,
                                 stream=stream)
    stream.synchronize()
    want_q, want_s = lowbit.per_token_group_quant(host, 128, scale_layout="column_major")
    assert np.array_equal(cp.asnumpy(q), want_q.view(np.uint8))
    assert np.array_equal(cp.asnumpy(s), want_s)


def test_jax_input_with_cupy_outputs():
    import os
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jax = pytest.importorskip("jax")
    cp = pytest.importorskip("cupy")
    import numpy as np
    host = (np.random.default_rng(4).standard_normal((32, 512)) * 5).astype(np.float32)
    x = jax.device_put(host, jax.devices("gpu")[0]).block_until_ready()  # immutable input
    q = cp.empty((32, 512), dtype=cp.uint8)
    s = cp.empty((32, 4), dtype=cp.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    lowbit.per_token_group_quant(x, 128, out=q, scales=s, stream=stream)
    stream.synchronize()
    want_q, want_s = lowbit.per_token_group_quant(host, 128)
    assert np.array_equal(cp.asnumpy(q), want_q.view(np.uint8))
    assert np.array_equal(cp.asnumpy(s), want_s)


# ---- block FP8 and NVFP4 (docs/block_gemm.md, docs/nvfp4.md) -------------------------------------

def test_block_fp8_weight_and_mm_against_torch():
    n, k, m = 576, 7168, 129
    w = activations(n, k, seed=21) * 1e-2
    q, s = lowbit.block_fp8_quantize_weight(w)
    blocks = torch.nn.functional.pad(w.float(), (0, 0, 0, 640 - n)).view(5, 128, 56, 128)
    want_s = true_div(torch.clamp(blocks.abs().amax(dim=(1, 3)), min=1e-10), 448.0)
    assert torch.equal(s, want_s)
    expanded = want_s.repeat_interleave(128, 0)[:n].repeat_interleave(128, 1)[:, :k]
    same_bytes(q, torch.clamp(w.float() / expanded, -448, 448).to(torch.float8_e4m3fn))
    assert torch.equal(lowbit.block_fp8_dequantize_weight(q, s, dtype="fp32"),
                       q.float() * expanded)
    x = activations(m, k, seed=22)
    qa, sa = lowbit.per_token_group_quant(x, 128, scale_layout="column_major_tma_aligned")
    c = lowbit.block_fp8_mm(qa, sa, q, s, a_scale_layout="column_major_tma_aligned")
    want = (qa.double() * sa[:, :m].t().double().repeat_interleave(128, 1)) @ \
        (q.double() * expanded.double()).t()
    assert c.dtype == torch.bfloat16 and c.shape == (m, n)
    assert torch.linalg.norm(c.double() - want) <= 2.0 ** -8 * torch.linalg.norm(want)


def test_nvfp4_quantize_and_moe_gemv_against_torch():
    e, n, k, t = 4, 256, 2048, 3
    w = activations(e * n, k, seed=31) * 1e-2
    packed, scales, g, dequantized = [], [], [], []
    for i in range(e):
        p, s, gi = lowbit.nvfp4_quantize_weight(w[i * n:(i + 1) * n])
        amax = w[i * n:(i + 1) * n].float().abs().amax()
        assert gi.item() == true_div(amax.reshape(1), 2688.0).item()
        dequantized.append(lowbit.nvfp4_dequantize_weight(p, s, gi, dtype="fp32").double())
        gp, gs = lowbit.nvfp4_relayout_for_gemv(p.cpu(), s.cpu())
        packed.append(gp), scales.append(gs), g.append(gi)
    packed = torch.stack(packed).to(DEVICE)
    scales = torch.stack(scales).to(DEVICE)
    globals_ = torch.cat(g)
    weights = torch.stack(dequantized)
    x = activations(t, k, seed=32)
    # slot 0: tokens 0, 2 on expert 3; slot 1: token 1 on expert 0
    routing = (torch.tensor([3, 0], dtype=torch.int32, device=DEVICE),
               torch.tensor([0, 2, 3], dtype=torch.int32, device=DEVICE),
               torch.tensor([0, 2, 1], dtype=torch.int32, device=DEVICE))
    y = lowbit.nvfp4_gemv(x, packed, scales, globals_, routing=routing)
    want = torch.stack([x[0].double() @ weights[3].t(), x[2].double() @ weights[3].t(),
                        x[1].double() @ weights[0].t()])
    bound = want.abs() * 2.0 ** -8 + 2.0 ** -12 * torch.stack([
        x[0].double().abs() @ weights[3].abs().t(), x[2].double().abs() @ weights[3].abs().t(),
        x[1].double().abs() @ weights[0].abs().t()])
    assert y.shape == (3, n) and ((y.double() - want).abs() <= bound).all()
    assert torch.equal(torch.ops.lowbit.nvfp4_gemv(x, packed, scales, globals_, *routing), y)


def test_nvfp4_moe_layer_under_pdl_matches_a_settled_layer():
    # gate_up GEMV -> silu_and_mul -> down GEMV, each launched with programmatic dependent launch
    # right behind the one before (silu_and_mul must wait for gate_up's rows, down for silu's):
    # the same bits as the layer run with the stream synchronized between the three.
    e, h, i, t = 4, 2048, 512, 3
    def experts(n, k, seed):
        w = activations(e * n, k, seed=seed) * 1e-2
        packed, scales, g = [], [], []
        for j in range(e):
            p, s, gj = lowbit.nvfp4_quantize_weight(w[j * n:(j + 1) * n])
            gp, gs = lowbit.nvfp4_relayout_for_gemv(p.cpu(), s.cpu())
            packed.append(gp), scales.append(gs), g.append(gj)
        return torch.stack(packed).to(DEVICE), torch.stack(scales).to(DEVICE), torch.cat(g)
    gate_up, down = experts(2 * i, h, 41), experts(h, i, 42)
    x = activations(t, h, seed=43)
    ids = torch.tensor([1, 3, 0], dtype=torch.int32, device=DEVICE)
    offsets = torch.tensor([0, 2, 4, 5], dtype=torch.int32, device=DEVICE)
    token_rows = torch.tensor([0, 2, 1, 2, 0], dtype=torch.int32, device=DEVICE)  # top-2 of 3 tokens, one dropped
    pair_rows = torch.arange(5, dtype=torch.int32, device=DEVICE)  # down reads its own row of a

    def layer(pdl, settle, prefetch=True):
        hidden = lowbit.nvfp4_gemv(x, *gate_up, routing=(ids, offsets, token_rows), enable_pdl=pdl,
                                   prefetch_before_wait=prefetch)
        settle()
        a = lowbit.silu_and_mul(hidden, enable_pdl=pdl)
        settle()
        return lowbit.nvfp4_gemv(a, *down, routing=(ids, offsets, pair_rows), enable_pdl=pdl,
                                 prefetch_before_wait=prefetch)

    settled = layer(False, torch.cuda.synchronize)
    torch.cuda.synchronize()
    for prefetch in (True, True, False):
        assert torch.equal(layer(True, lambda: None, prefetch), settled)
    assert settled.shape == (5, h) and torch.isfinite(settled.float()).all()


def test_fp8_ffn_with_every_kernel_under_pdl_matches_a_settled_ffn():
    # A DeepSeek-V3-style FP8 FFN at decode, every kernel launched with programmatic dependent
    # launch right behind the one before: group quant -> block_fp8_mm (gate_up) ->
    # silu_and_mul_quant -> block_fp8_mm (down), and per-token / per-tensor quant -> scaled_mm.
    # Each quantizer must wait for the kernel that wrote its input: the same bits as the chain run
    # with the stream synchronized between its kernels.
    h, i = 7168, 2048
    w_up, s_up = lowbit.block_fp8_quantize_weight(activations(2 * i, h, seed=71) * 1e-2)
    w_down, s_down = lowbit.block_fp8_quantize_weight(activations(h, i, seed=72) * 1e-2)
    qb = torch.clamp(activations(h, h, seed=73).float() * 50, -448, 448).to(torch.float8_e4m3fn)
    sb = torch.tensor([0.003], device=DEVICE)
    layout = "column_major_tma_aligned"

    def ffn(x, pdl, settle):
        qa, sa = lowbit.per_token_group_quant(x, 128, scale_layout=layout, enable_pdl=pdl)
        settle()
        hidden = lowbit.block_fp8_mm(qa, sa, w_up, s_up, enable_pdl=pdl, a_scale_layout=layout)
        settle()
        qh, sh = lowbit.silu_and_mul_quant(hidden, 128, scale_layout=layout, enable_pdl=pdl)
        settle()
        y = lowbit.block_fp8_mm(qh, sh, w_down, s_down, enable_pdl=pdl, a_scale_layout=layout)
        settle()
        qt, st = lowbit.per_token_quant(y, enable_pdl=pdl)
        settle()
        z = lowbit.scaled_mm(qt, qb, st, sb, enable_pdl=pdl)
        settle()
        qz, sz = lowbit.per_tensor_quant(z, enable_pdl=pdl)
        return y, z, qz, sz

    for m in (1, 4, 16):
        x = activations(m, h, seed=74 + m)
        settled = ffn(x, True, torch.cuda.synchronize)
        torch.cuda.synchronize()
        for _ in range(3):
            got = ffn(x, True, lambda: None)
            for a, b in zip(got, settled):
                assert torch.equal(a, b)
        assert torch.isfinite(settled[1].float()).all()


def test_torch_compile_traces_the_weight_ops():
    def layer(x, w):
        q, s = torch.ops.lowbit.block_fp8_quantize_weight(w, 1e-10)
        qa, sa = torch.ops.lowbit.per_token_group_quant(x, 128, "fp8_e4m3fn", "row_major", 1e-10,
                                                        None, False)
        return torch.ops.lowbit.block_fp8_mm(qa, sa, "row_major", q, s, "bf16")

    x = activations(16, 1024, seed=41)
    w = activations(256, 1024, seed=42) * 1e-2
    compiled = torch.compile(layer, fullgraph=True)
    assert torch.equal(compiled(x, w), layer(x, w))


# ---- scaled GEMM (docs/scaled_gemm.md) -----------------------------------------------------------

def test_scaled_mm_against_torch():
    m, n, k = 77, 512, 4096
    # int8 with per-token zero points: bit-exact against the recipe in torch int64/float32 ops.
    g = torch.Generator(device=DEVICE).manual_seed(51)
    a = torch.randint(-128, 128, (m, k), generator=g, device=DEVICE, dtype=torch.int8)
    b = torch.randint(-128, 128, (n, k), generator=g, device=DEVICE, dtype=torch.int8)
    s_a = torch.rand(m, generator=g, device=DEVICE) * 0.01 + 1e-3
    s_b = torch.rand(n, generator=g, device=DEVICE) * 0.01 + 1e-3
    azp = torch.randint(-20, 20, (m,), generator=g, device=DEVICE, dtype=torch.int32)
    bias = torch.randn(n, generator=g, device=DEVICE).to(torch.bfloat16)
    colsum = lowbit.scaled_mm_azp_adjustment(b)
    assert torch.equal(colsum, b.long().sum(dim=1).int())
    got = torch.ops.lowbit.scaled_mm(a, b, s_a, s_b, bias, colsum, azp, "bf16")
    acc = (a.double() @ b.double().t()).long() - azp.long()[:, None] * colsum.long()[None, :]
    y = s_b[None, :] * acc.float()
    want = (s_a[:, None].double() * y.double() + bias.double()[None, :]).float()  # one fma rounding
    assert torch.equal(got, want.to(torch.bfloat16))
    # fp8 per-tensor (fast accumulation): against float64 of the same operands.
    x = activations(m, k, seed=52) * 1e-2
    qa, sa = lowbit.per_tensor_quant(x)
    qb = torch.clamp(activations(n, k, seed=53).float() * 50, -448, 448).to(torch.float8_e4m3fn)
    sb = torch.tensor([0.003], device=DEVICE)
    c = lowbit.scaled_mm(qa, qb, sa, sb)
    want = (qa.double() @ qb.double().t()) * sa.double() * sb.double()
    assert c.dtype == torch.bfloat16 and c.shape == (m, n)
    assert torch.linalg.norm(c.double() - want) <= 2.0 ** -7 * torch.linalg.norm(want)
    compiled = torch.compile(lambda *t: torch.ops.lowbit.scaled_mm(*t, None, None, None, "bf16"),
                             fullgraph=True)
    assert torch.equal(compiled(qa, qb, sa, sb), c)


def test_enable_pdl_behind_the_quantizer_matches_a_launch_on_settled_inputs():
    # The decode GEMMs launched with programmatic dependent launch right behind the kernel that
    # quantizes their activations: the same bits as the same launch once its inputs have settled.
    # (Not as a plain launch: under PDL scaled_mm picks gemv_tma at 9-16 tokens on small fp8
    # weights, where a plain launch runs a swapped CUTLASS tile; docs/pdl.md.)
    n, k = 4096, 7168
    qb = torch.clamp(activations(n, k, seed=61).float() * 50, -448, 448).to(torch.float8_e4m3fn)
    sb = torch.tensor([0.003], device=DEVICE)
    w, ws = lowbit.block_fp8_quantize_weight(activations(n, k, seed=62) * 1e-2)
    for m in (1, 16, 64):
        x = activations(m, k, seed=63 + m)
        qa, sa = lowbit.per_token_quant(x)
        torch.cuda.synchronize()
        settled = lowbit.scaled_mm(qa, qb, sa, sb, enable_pdl=True)
        torch.cuda.synchronize()
        qa2, sa2 = lowbit.per_token_quant(x)
        assert torch.equal(lowbit.scaled_mm(qa2, qb, sa2, sb, enable_pdl=True), settled)
        ga, gs = lowbit.per_token_group_quant(x, 128, scale_layout="column_major_tma_aligned")
        torch.cuda.synchronize()
        settled = lowbit.block_fp8_mm(ga, gs, w, ws, enable_pdl=True,
                                      a_scale_layout="column_major_tma_aligned")
        torch.cuda.synchronize()
        ga2, gs2 = lowbit.per_token_group_quant(x, 128, scale_layout="column_major_tma_aligned")
        assert torch.equal(lowbit.block_fp8_mm(ga2, gs2, w, ws, enable_pdl=True,
                                               a_scale_layout="column_major_tma_aligned"), settled)
