// GatherND and ScatterND, the part both kernel sets share: how index tuples address the data.
// indices [b batch dims..., tuple dims..., k]: each k-tuple addresses a slice of the data's dims
// after the b batch dims (which indices and data share) and the k indexed ones.
#pragma once
#include <cstdint>

#include <string>
#include <vector>

#include "ir/graph.h"
#include "onnxgpu/tensor.h"
#include "ops/fail.h"
#include "ops/operand.h"

namespace onnxgpu::ops {

struct NDLayout {
  int64_t b = 0, k = 0;     // batch dims, index tuple length
  Shape tuple_shape;        // indices.shape[:-1]
  int64_t tuples = 0;       // index tuples
  int64_t slice = 1;        // elements per addressed slice
  int64_t batches = 1;      // product of the batch dims
  int64_t per_batch = 0;    // tuples per batch
  int64_t batch_block = 0;  // data elements per batch
};
// `data`, `indices`: the shapes; `describe_data` / `describe_indices` name them in messages.
NDLayout nd_layout(const Shape& data, const Shape& indices, int64_t batch_dims, const std::string& describe_data,
                   const std::string& describe_indices, const Fail& fail);

// TensorScatter (opset 24): past_cache [B, ..., max_seq (axis), ...] and update [B, ..., seq, ...] of one
// type and equal but for `axis` (attribute, default -2, never the batch axis); write_indices [B] int64
// (optional: zeros). Output: past_cache with update[b, .., s, ..] written at position write_indices[b] + s
// along the axis (mode linear: the positions must fit, checked by the kernels; circular: modulo max_seq).
struct TensorScatterParams {
  int64_t axis = 0;
  int64_t max_seq = 0, seq = 0;
  bool circular = false;
};
TensorScatterParams tensor_scatter_params(const ir::Node& node, const Operand& past, const Operand& update,
                                          const Operand& indices, const Fail& fail);

// Compress: the indices along the axis (of `n`) whose condition is true; a true condition at index n or
// beyond is an error (`where` names the axis in the message).
std::vector<int64_t> compress_keep(const Tensor& condition, int64_t n, const std::string& where, const Fail& fail);

}  // namespace onnxgpu::ops
