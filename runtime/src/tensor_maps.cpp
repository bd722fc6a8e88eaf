#include "tensor_maps.h"

namespace etc::rt {

std::vector<CUtensorMap> encodeTensorMaps(const CudaDriver& cu, const Descriptor& d, const SymState& st) {
  std::vector<CUtensorMap> maps;
  if (d.tmaps.empty()) return maps;
  maps.assign(d.tensors.size(), CUtensorMap{});
  for (uint32_t t : d.tmaps) {
    const Binding& b = st.binding(t);
    if (!b.bound || b.shape.size() != 2 || b.ptr % 16 != 0) return {};
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(b.shape[1]), static_cast<cuuint64_t>(b.shape[0])};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(b.shape[1]) * 2};
    const cuuint32_t box[2] = {64, 64}, elem_strides[2] = {1, 1};
    const CUtensorMapDataType type =
        d.tensors[t].dtype == ETC_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    if (cu.cuTensorMapEncodeTiled(&maps[t], type, 2, reinterpret_cast<void*>(b.ptr), dims, strides, box, elem_strides,
                                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
      return {};
  }
  return maps;
}

}  // namespace etc::rt
