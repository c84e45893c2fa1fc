"""lowbit: low-precision kernels for LLM inference on NVIDIA Hopper.

Every op takes and returns DLPack arrays (numpy on the CPU runs lowbit's CPU reference; CUDA
arrays run the sm_90a kernels on the caller's stream). `import lowbit.torch` registers the ops
as torch.library custom ops.
"""

from ._ops import (per_tensor_quant, per_token_asymmetric_int8_quant, per_token_group_quant,
                   per_token_quant, scale_storage_shape, silu_and_mul, silu_and_mul_quant)

from ._block_fp8 import block_fp8_dequantize_weight, block_fp8_mm, block_fp8_quantize_weight
from ._scaled_gemm import scaled_mm, scaled_mm_azp_adjustment
from ._nvfp4 import (nvfp4_dequantize_weight, nvfp4_gemv, nvfp4_quantize_weight,
                     nvfp4_relayout_for_gemv, nvfp4_sparse24_gemv, nvfp4_sparse24_relayout_for_gemv,
                     nvfp4_sparse24_to_dense, nvfp4_sparsify_24)

__all__ = ["per_token_group_quant", "silu_and_mul", "silu_and_mul_quant", "per_token_quant",
           "per_token_asymmetric_int8_quant", "per_tensor_quant", "scale_storage_shape",
           "block_fp8_quantize_weight", "block_fp8_dequantize_weight", "block_fp8_mm",
           "scaled_mm", "scaled_mm_azp_adjustment",
           "nvfp4_quantize_weight", "nvfp4_dequantize_weight", "nvfp4_sparsify_24",
           "nvfp4_sparse24_to_dense", "nvfp4_relayout_for_gemv", "nvfp4_sparse24_relayout_for_gemv",
           "nvfp4_gemv", "nvfp4_sparse24_gemv"]
