// Host side of the Tensor Memory Accelerator: tensor maps (TMA descriptors) for row-major
// matrices, moved in boxes of 128 bytes x `box_rows` rows with the 128-byte swizzle that wgmma's
// K-major operands expect. Reads past the matrix's edges arrive as zeros, so kernels need no
// masking for K's tail or the last rows; stores past them are dropped.
//
// cuTensorMapEncodeTiled is a driver function; it is fetched through the runtime's entry-point
// query, so lowbit does not link libcuda. Encoding is host work only (no device call), safe
// during CUDA-graph capture.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace lowbit::cuda {

// cuTensorMapEncodeTiled, or nullptr when the driver does not provide it.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found;
    const cudaError_t status = cudaGetDriverEntryPointByVersion(
        "cuTensorMapEncodeTiled", &function, 12000, cudaEnableDefault, &found);
    return status == cudaSuccess && found == cudaDriverEntryPointSuccess
               ? reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function)
               : nullptr;
  }();
  return encode;
}

// A row-major matrix [rows, cols] of `type` with stride `row_stride_bytes`, in boxes of
// `box_cols` x `box_rows` elements with `swizzle`, L2 widening each copy's DRAM fetches to
// `promotion`; false when the driver refuses (the caller reports it): the base address and row
// stride must be multiples of 16 bytes, and so must a box row, which the 128-byte swizzle needs
// to be 128 bytes.
inline bool encode_matrix_map(
    CUtensorMap* map, CUtensorMapDataType type, const void* base, std::int64_t rows,
    std::int64_t cols, std::int64_t row_stride_bytes, std::uint32_t box_cols,
    std::uint32_t box_rows, CUtensorMapSwizzle swizzle,
    CUtensorMapL2promotion promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(row_stride_bytes)};
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  return encode(map, type, 2, const_cast<void*>(base), dims, strides, box, element_strides,
                CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, promotion,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The same in boxes of 128 bytes x `box_rows` rows with the 128-byte swizzle.
inline bool encode_swizzled_matrix_map(
    CUtensorMap* map, CUtensorMapDataType type, int element_bytes, const void* base,
    std::int64_t rows, std::int64_t cols, std::int64_t row_stride_bytes, std::uint32_t box_rows,
    CUtensorMapL2promotion promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B) {
  return encode_matrix_map(map, type, base, rows, cols, row_stride_bytes,
                           static_cast<std::uint32_t>(128 / element_bytes), box_rows,
                           CU_TENSOR_MAP_SWIZZLE_128B, promotion);
}

// Matrix [rows, cols] of bytes (fp8 operands), boxes of 128 x `box_rows`.
inline bool encode_byte_matrix_map(
    CUtensorMap* map, const void* base, std::int64_t rows, std::int64_t cols,
    std::int64_t row_stride_bytes, std::uint32_t box_rows,
    CUtensorMapL2promotion promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B) {
  return encode_swizzled_matrix_map(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, base, rows, cols,
                                    row_stride_bytes, box_rows, promotion);
}

// Matrix [rows, cols] of bf16 (an output written by TMA stores), boxes of `box_cols` x
// `box_rows`, with the 128-byte swizzle (64-column boxes) or unswizzled. Stores clip at the
// matrix's edges.
inline bool encode_bf16_matrix_map(CUtensorMap* map, const void* base, std::int64_t rows,
                                   std::int64_t cols, std::int64_t row_stride_bytes,
                                   std::uint32_t box_rows, std::uint32_t box_cols = 64,
                                   bool swizzled = true) {
  return encode_matrix_map(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, base, rows, cols,
                           row_stride_bytes, box_cols, box_rows,
                           swizzled ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE);
}

}  // namespace lowbit::cuda
