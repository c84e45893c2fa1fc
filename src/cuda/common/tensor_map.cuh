// Host side of the Tensor Memory Accelerator: a tensor map (TMA descriptor) for a row-major
// matrix of bytes, read in boxes of 128 bytes x `box_rows` rows into shared memory with the
// 128-byte swizzle that wgmma's K-major operands expect. Reads past the matrix's edges arrive as
// zeros, so kernels need no masking for K's tail or the last rows.
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

// Encodes `map` for matrix [rows, cols] of bytes with stride `row_stride_bytes`; false when the
// driver refuses (the caller reports it): the base address and row stride must be multiples of
// 16 bytes.
inline bool encode_byte_matrix_map(CUtensorMap* map, const void* base, std::int64_t rows,
                                   std::int64_t cols, std::int64_t row_stride_bytes,
                                   std::uint32_t box_rows) {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found;
    const cudaError_t status = cudaGetDriverEntryPointByVersion(
        "cuTensorMapEncodeTiled", &function, 12000, cudaEnableDefault, &found);
    return status == cudaSuccess && found == cudaDriverEntryPointSuccess
               ? reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function)
               : nullptr;
  }();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(row_stride_bytes)};
  const cuuint32_t box[2] = {128, box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  return encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<void*>(base), dims, strides,
                box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace lowbit::cuda
