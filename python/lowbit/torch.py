"""lowbit ops registered as torch.library custom ops (namespace `lowbit`), each with a fake
(meta) implementation, so torch.compile(fullgraph=True) traces through them and CUDA graphs
capture them (they run on PyTorch's current stream and never synchronize).

    import lowbit.torch
    q, s = torch.ops.lowbit.per_token_group_quant(x, 128, "fp8_e4m3fn", "row_major", 1e-10, None, False)
"""

from typing import Optional, Tuple

import torch

from . import _block_fp8, _nvfp4, _ops, _scaled_gemm

_TORCH_DTYPES = {"fp8_e4m3fn": torch.float8_e4m3fn, "int8": torch.int8}
_FLOAT_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def _scale_storage(m, k, group, layout):
    groups = k // group
    if layout == "row_major":
        return (m, groups)
    if layout == "column_major":
        return (groups, m)
    return (groups, (m + 3) // 4 * 4)


@torch.library.custom_op("lowbit::per_token_group_quant", mutates_args=())
def per_token_group_quant(x: torch.Tensor, group_size: int, dtype: str, scale_layout: str,
                          eps: float, scale_ub: Optional[float],
                          power_of_two_scale: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    return _ops.per_token_group_quant(x, group_size, dtype=dtype, scale_layout=scale_layout,
                                      eps=eps, scale_ub=scale_ub,
                                      power_of_two_scale=power_of_two_scale)


@per_token_group_quant.register_fake
def _(x, group_size, dtype, scale_layout, eps, scale_ub, power_of_two_scale):
    m, k = x.shape
    return (x.new_empty((m, k), dtype=_TORCH_DTYPES[dtype]),
            x.new_empty(_scale_storage(m, k, group_size, scale_layout), dtype=torch.float32))


@torch.library.custom_op("lowbit::silu_and_mul_quant", mutates_args=())
def silu_and_mul_quant(x: torch.Tensor, group_size: int, dtype: str, scale_layout: str,
                       eps: float, scale_ub: Optional[float], power_of_two_scale: bool,
                       limit: Optional[float]) -> Tuple[torch.Tensor, torch.Tensor]:
    return _ops.silu_and_mul_quant(x, group_size, dtype=dtype, scale_layout=scale_layout,
                                   eps=eps, scale_ub=scale_ub,
                                   power_of_two_scale=power_of_two_scale, limit=limit)


@silu_and_mul_quant.register_fake
def _(x, group_size, dtype, scale_layout, eps, scale_ub, power_of_two_scale, limit):
    t, two_h = x.shape
    h = two_h // 2
    return (x.new_empty((t, h), dtype=_TORCH_DTYPES[dtype]),
            x.new_empty(_scale_storage(t, h, group_size, scale_layout), dtype=torch.float32))


@torch.library.custom_op("lowbit::silu_and_mul", mutates_args=())
def silu_and_mul(x: torch.Tensor, limit: Optional[float]) -> torch.Tensor:
    return _ops.silu_and_mul(x, limit=limit)


@silu_and_mul.register_fake
def _(x, limit):
    return x.new_empty((x.shape[0], x.shape[1] // 2))


@torch.library.custom_op("lowbit::per_token_quant", mutates_args=())
def per_token_quant(x: torch.Tensor, dtype: str, eps: float,
                    scale_ub: Optional[float]) -> Tuple[torch.Tensor, torch.Tensor]:
    return _ops.per_token_quant(x, dtype=dtype, eps=eps, scale_ub=scale_ub)


@per_token_quant.register_fake
def _(x, dtype, eps, scale_ub):
    return (x.new_empty(x.shape, dtype=_TORCH_DTYPES[dtype]),
            x.new_empty((x.shape[0],), dtype=torch.float32))


@torch.library.custom_op("lowbit::per_token_asymmetric_int8_quant", mutates_args=())
def per_token_asymmetric_int8_quant(x: torch.Tensor, eps: float
                                    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _ops.per_token_asymmetric_int8_quant(x, eps=eps)


@per_token_asymmetric_int8_quant.register_fake
def _(x, eps):
    m = x.shape[0]
    return (x.new_empty(x.shape, dtype=torch.int8), x.new_empty((m,), dtype=torch.float32),
            x.new_empty((m,), dtype=torch.int32))


@torch.library.custom_op("lowbit::per_tensor_quant", mutates_args=())
def per_tensor_quant(x: torch.Tensor, scale: torch.Tensor, dtype: str) -> torch.Tensor:
    """Static per-tensor quantization with the given [1] fp32 scale."""
    return _ops.per_tensor_quant(x, scale, dtype=dtype)[0]


@per_tensor_quant.register_fake
def _(x, scale, dtype):
    return x.new_empty(x.shape, dtype=_TORCH_DTYPES[dtype])


@torch.library.custom_op("lowbit::per_tensor_quant_dynamic", mutates_args=())
def per_tensor_quant_dynamic(x: torch.Tensor, dtype: str, eps: float,
                             scale_ub: Optional[float]) -> Tuple[torch.Tensor, torch.Tensor]:
    """Dynamic per-tensor quantization: returns (q, scale [1])."""
    return _ops.per_tensor_quant(x, dtype=dtype, eps=eps, scale_ub=scale_ub)


@per_tensor_quant_dynamic.register_fake
def _(x, dtype, eps, scale_ub):
    return x.new_empty(x.shape, dtype=_TORCH_DTYPES[dtype]), x.new_empty((1,), dtype=torch.float32)


# ---- block FP8 (docs/block_gemm.md) --------------------------------------------------------------

def _blocks(n):
    return (n + 127) // 128


@torch.library.custom_op("lowbit::block_fp8_quantize_weight", mutates_args=())
def block_fp8_quantize_weight(w: torch.Tensor, eps: float) -> Tuple[torch.Tensor, torch.Tensor]:
    return _block_fp8.block_fp8_quantize_weight(w, eps=eps)


@block_fp8_quantize_weight.register_fake
def _(w, eps):
    n, k = w.shape
    return (w.new_empty((n, k), dtype=torch.float8_e4m3fn),
            w.new_empty((_blocks(n), _blocks(k)), dtype=torch.float32))


@torch.library.custom_op("lowbit::block_fp8_dequantize_weight", mutates_args=())
def block_fp8_dequantize_weight(q: torch.Tensor, scales: torch.Tensor, dtype: str) -> torch.Tensor:
    return _block_fp8.block_fp8_dequantize_weight(q, scales, dtype=dtype)


@block_fp8_dequantize_weight.register_fake
def _(q, scales, dtype):
    return q.new_empty(q.shape, dtype=_FLOAT_DTYPES[dtype])


@torch.library.custom_op("lowbit::block_fp8_mm", mutates_args=())
def block_fp8_mm(a: torch.Tensor, a_scales: torch.Tensor, a_scale_layout: str, b: torch.Tensor,
                 b_scales: torch.Tensor, out_dtype: str) -> torch.Tensor:
    return _block_fp8.block_fp8_mm(a, a_scales, b, b_scales, a_scale_layout=a_scale_layout,
                                   out_dtype=out_dtype)


@block_fp8_mm.register_fake
def _(a, a_scales, a_scale_layout, b, b_scales, out_dtype):
    return a.new_empty((a.shape[0], b.shape[0]), dtype=_FLOAT_DTYPES[out_dtype])


# ---- scaled GEMM (docs/scaled_gemm.md) -----------------------------------------------------------

@torch.library.custom_op("lowbit::scaled_mm", mutates_args=())
def scaled_mm(a: torch.Tensor, b: torch.Tensor, a_scales: torch.Tensor, b_scales: torch.Tensor,
              bias: Optional[torch.Tensor], azp_adj: Optional[torch.Tensor],
              azp: Optional[torch.Tensor], out_dtype: str) -> torch.Tensor:
    return _scaled_gemm.scaled_mm(a, b, a_scales, b_scales, bias=bias, azp_adj=azp_adj, azp=azp,
                                  out_dtype=out_dtype)


@scaled_mm.register_fake
def _(a, b, a_scales, b_scales, bias, azp_adj, azp, out_dtype):
    return a.new_empty((a.shape[0], b.shape[0]), dtype=_FLOAT_DTYPES[out_dtype])


@torch.library.custom_op("lowbit::scaled_mm_azp_adjustment", mutates_args=())
def scaled_mm_azp_adjustment(b: torch.Tensor, zero_point: int) -> torch.Tensor:
    return _scaled_gemm.scaled_mm_azp_adjustment(b, zero_point=zero_point)


@scaled_mm_azp_adjustment.register_fake
def _(b, zero_point):
    return b.new_empty((b.shape[0],), dtype=torch.int32)


# ---- NVFP4 (docs/nvfp4.md); weight preparation (sparsify, relayout) stays eager ----------------

@torch.library.custom_op("lowbit::nvfp4_quantize_weight", mutates_args=())
def nvfp4_quantize_weight(w: torch.Tensor, global_scale: Optional[torch.Tensor]
                          ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    packed, scales, g = _nvfp4.nvfp4_quantize_weight(w, global_scale=global_scale)
    return packed, scales, g.clone() if global_scale is not None else g  # outputs never alias


@nvfp4_quantize_weight.register_fake
def _(w, global_scale):
    n, k = w.shape
    return (w.new_empty((n, k // 2), dtype=torch.uint8),
            w.new_empty((n, k // 16), dtype=torch.float8_e4m3fn),
            w.new_empty((1,), dtype=torch.float32))


@torch.library.custom_op("lowbit::nvfp4_dequantize_weight", mutates_args=())
def nvfp4_dequantize_weight(packed: torch.Tensor, block_scales: torch.Tensor,
                            global_scale: torch.Tensor, dtype: str) -> torch.Tensor:
    return _nvfp4.nvfp4_dequantize_weight(packed, block_scales, global_scale, dtype=dtype)


@nvfp4_dequantize_weight.register_fake
def _(packed, block_scales, global_scale, dtype):
    return packed.new_empty((packed.shape[0], 2 * packed.shape[1]), dtype=_FLOAT_DTYPES[dtype])


# torch.library has no optional list of tensors: routing travels as three optional tensors
# (expert_ids, slot_offsets, token_ids), all given or all None.
def _routing(expert_ids, slot_offsets, token_ids):
    return None if expert_ids is None else (expert_ids, slot_offsets, token_ids)


def _gemv_rows(x, token_ids):
    return token_ids.shape[0] if token_ids is not None else x.shape[0]


@torch.library.custom_op("lowbit::nvfp4_gemv", mutates_args=())
def nvfp4_gemv(x: torch.Tensor, packed: torch.Tensor, block_scales: torch.Tensor,
               global_scales: torch.Tensor, expert_ids: Optional[torch.Tensor],
               slot_offsets: Optional[torch.Tensor], token_ids: Optional[torch.Tensor]
               ) -> torch.Tensor:
    return _nvfp4.nvfp4_gemv(x, packed, block_scales, global_scales,
                             routing=_routing(expert_ids, slot_offsets, token_ids))


@nvfp4_gemv.register_fake
def _(x, packed, block_scales, global_scales, expert_ids, slot_offsets, token_ids):
    return x.new_empty((_gemv_rows(x, token_ids), packed.shape[-2]), dtype=torch.bfloat16)


@torch.library.custom_op("lowbit::nvfp4_sparse24_gemv", mutates_args=())
def nvfp4_sparse24_gemv(x: torch.Tensor, values: torch.Tensor, indices: torch.Tensor,
                        block_scales: torch.Tensor, global_scales: torch.Tensor,
                        expert_ids: Optional[torch.Tensor], slot_offsets: Optional[torch.Tensor],
                        token_ids: Optional[torch.Tensor]) -> torch.Tensor:
    return _nvfp4.nvfp4_sparse24_gemv(x, values, indices, block_scales, global_scales,
                                      routing=_routing(expert_ids, slot_offsets, token_ids))


@nvfp4_sparse24_gemv.register_fake
def _(x, values, indices, block_scales, global_scales, expert_ids, slot_offsets, token_ids):
    return x.new_empty((_gemv_rows(x, token_ids), values.shape[-2]), dtype=torch.bfloat16)
