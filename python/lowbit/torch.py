"""lowbit ops registered as torch.library custom ops (namespace `lowbit`), each with a fake
(meta) implementation, so torch.compile(fullgraph=True) traces through them and CUDA graphs
capture them (they run on PyTorch's current stream and never synchronize).

    import lowbit.torch
    q, s = torch.ops.lowbit.per_token_group_quant(x, 128, "fp8_e4m3fn", "row_major", 1e-10, None, False)
"""

from typing import Optional, Tuple

import torch

from . import _ops

_TORCH_DTYPES = {"fp8_e4m3fn": torch.float8_e4m3fn, "int8": torch.int8}


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
