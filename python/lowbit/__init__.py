"""lowbit: low-precision kernels for LLM inference on NVIDIA Hopper.

Every op takes and returns DLPack arrays (numpy on the CPU runs lowbit's CPU reference; CUDA
arrays run the sm_90a kernels on the caller's stream). `import lowbit.torch` registers the ops
as torch.library custom ops.
"""

from ._ops import (per_tensor_quant, per_token_asymmetric_int8_quant, per_token_group_quant,
                   per_token_quant, scale_storage_shape, silu_and_mul, silu_and_mul_quant)

__all__ = ["per_token_group_quant", "silu_and_mul", "silu_and_mul_quant", "per_token_quant",
           "per_token_asymmetric_int8_quant", "per_tensor_quant", "scale_storage_shape"]
