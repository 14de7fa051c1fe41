#include "ops/indexing.h"

#include <string>

namespace onnxgpu::ops {

static int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

NDLayout nd_layout(const Shape& data, const Shape& indices, int64_t batch_dims, const std::string& describe_data,
                   const std::string& describe_indices, const Fail& fail) {
  const int64_t r = int64_t(data.size()), q = int64_t(indices.size()), b = batch_dims;
  if (q < 1) raise(fail, "indices must have rank >= 1, got " + describe_indices);
  if (b < 0 || b >= q || b > r) raise(fail, "batch_dims " + std::to_string(b) + " is out of range");
  NDLayout l;
  l.b = b;
  l.k = indices[size_t(q - 1)];
  if (l.k > r - b)
    raise(fail, "indices " + describe_indices + " address " + std::to_string(l.k) + " dimensions but data " +
                    describe_data + " has only " + std::to_string(r - b) + " after the batch dimensions");
  for (int64_t d = 0; d < b; ++d)
    if (indices[size_t(d)] != data[size_t(d)])
      raise(fail, "batch dimension " + std::to_string(d) + " of indices " + describe_indices + " and data " +
                      describe_data + " differ");
  l.tuple_shape = Shape(indices.begin(), indices.end() - 1);
  l.tuples = shape_numel(l.tuple_shape);
  l.slice = prod(data, size_t(b + l.k), size_t(r));
  l.batches = prod(data, 0, size_t(b));
  l.per_batch = prod(indices, size_t(b), size_t(q - 1));
  l.batch_block = prod(data, size_t(b), size_t(r));
  return l;
}

TensorScatterParams tensor_scatter_params(const ir::Node& node, const Operand& past, const Operand& update,
                                          const Operand& indices, const Fail& fail) {
  TensorScatterParams p;
  const int64_t r = int64_t(past.shape.size());
  std::string mode = node.attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular") raise(fail, "attribute 'mode' must be linear or circular, got \"" + mode + "\"");
  p.circular = mode == "circular";
  int64_t axis = node.attr_int("axis", -2);
  if (axis < 0) axis += r;
  if (r < 2 || axis < 1 || axis >= r)
    raise(fail, "attribute 'axis' (" + std::to_string(node.attr_int("axis", -2)) + ") must name a non-batch axis of input 'past_cache' " +
                    past.describe());
  p.axis = axis;
  if (update.dtype != past.dtype || update.shape.size() != past.shape.size())
    raise(fail, "input 'update' " + update.describe() + " must have the type and rank of input 'past_cache' " + past.describe());
  for (int64_t d = 0; d < r; ++d)
    if (d != axis && update.shape[size_t(d)] != past.shape[size_t(d)])
      raise(fail, "input 'update' " + update.describe() + " must match input 'past_cache' " + past.describe() +
                      " but along axis " + std::to_string(axis));
  p.max_seq = past.shape[size_t(axis)];
  p.seq = update.shape[size_t(axis)];
  if (p.seq > p.max_seq)
    raise(fail, "input 'update' " + update.describe() + " is longer than input 'past_cache' " + past.describe() + " along axis " +
                    std::to_string(axis));
  if (indices.given() && (indices.dtype != DType::Int64 || indices.shape.size() != 1 || indices.shape[0] != past.shape[0]))
    raise(fail, "input 'write_indices' must be int64 [" + std::to_string(past.shape[0]) + "], got " + indices.describe());
  return p;
}

std::vector<int64_t> compress_keep(const Tensor& condition, int64_t n, const std::string& where, const Fail& fail) {
  if (condition.dtype() != DType::Bool || condition.rank() != 1)
    raise(fail, "condition must be a 1-D bool tensor, got " + condition.describe());
  const bool* c = condition.data<bool>();
  std::vector<int64_t> keep;
  for (int64_t j = 0; j < condition.numel(); ++j) {
    if (!c[j]) continue;
    if (j >= n) raise(fail, "condition " + condition.describe() + " selects index " + std::to_string(j) + " beyond " + where);
    keep.push_back(j);
  }
  return keep;
}

}  // namespace onnxgpu::ops
