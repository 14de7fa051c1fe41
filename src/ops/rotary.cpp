#include "ops/rotary.h"

#include <string>

namespace onnxgpu::ops {

namespace {

const DTypeSet kRotaryTypes{DType::Float16, DType::Float32, DType::Float64, DType::BFloat16};

std::string name_of(const char* what, const Operand& o) { return std::string(what) + " " + o.describe(); }

}  // namespace

RotaryParams rotary_params(const ir::Node& node, int64_t opset, const std::vector<Operand>& in, const Fail& fail) {
  const bool ms = node.domain == ir::kMsDomain;
  if (!ms && opset < 23)
    raise(fail, "RotaryEmbedding is an ONNX op from opset 23 on; the model imports opset " + std::to_string(opset) +
                    " (ONNX Runtime's is in domain com.microsoft)");
  RotaryParams p;
  p.cos_input = ms ? 2 : 1;
  p.sin_input = ms ? 3 : 2;
  p.position_input = ms ? 1 : 3;
  const char* x_name = ms ? "input" : "X";
  const size_t max_inputs = 4;
  if (in.size() < (ms ? 4u : 3u) || in.size() > max_inputs)
    raise(fail, std::string("takes ") + (ms ? "4 inputs (input, position_ids, cos_cache, sin_cache)"
                                            : "3 or 4 inputs (X, cos_cache, sin_cache, position_ids)") +
                    ", got " + std::to_string(in.size()));
  if (node.outputs.size() != 1) raise(fail, "has one output, the node has " + std::to_string(node.outputs.size()));
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i].given() && (ms || i < 3))
      raise(fail, "input " + std::to_string(i) + " is required");
  const Operand& x = in[0];
  const Operand& cos = in[p.cos_input];
  const Operand& sin = in[p.sin_input];
  const bool has_positions = in.size() > p.position_input && in[p.position_input].given();
  if (!kRotaryTypes.has(x.dtype)) raise(fail, name_of(x_name, x) + " must be of a float type");
  for (const Operand* c : {&cos, &sin})
    if (c->dtype != x.dtype)
      raise(fail, name_of(c == &cos ? "cos_cache" : "sin_cache", *c) + " must be of " + x_name + "'s type (" +
                      std::string(dtype_name(x.dtype)) + ")");
  if (cos.shape != sin.shape)
    raise(fail, "cos_cache " + shape_str(cos.shape) + " and sin_cache " + shape_str(sin.shape) + " must have one shape");
  if (x.shape.size() != 3 && x.shape.size() != 4)
    raise(fail, name_of(x_name, x) + " must be [batch, sequence, hidden] or [batch, heads, sequence, head_size]");

  const int64_t num_heads = node.attr_int("num_heads", 0), rotary_attr = node.attr_int("rotary_embedding_dim", 0);
  if (num_heads < 0) raise(fail, "num_heads " + std::to_string(num_heads) + " must be >= 0");
  if (rotary_attr < 0) raise(fail, "rotary_embedding_dim " + std::to_string(rotary_attr) + " must be >= 0");
  if (ms && rotary_attr > 0 && num_heads == 0) raise(fail, "num_heads must be given with rotary_embedding_dim");
  p.interleaved = node.attr_int("interleaved", 0) != 0;
  p.heads_first = x.shape.size() == 4;
  p.batch = x.shape[0];
  if (p.heads_first) {
    p.heads = x.shape[1];
    p.seq = x.shape[2];
    p.head_size = x.shape[3];
    if (num_heads > 0 && num_heads != p.heads)
      raise(fail, "num_heads " + std::to_string(num_heads) + " differs from the heads of " + name_of(x_name, x) +
                      " ([batch, heads, sequence, head_size])");
  } else {
    p.seq = x.shape[1];
    const int64_t hidden = x.shape[2];
    if (num_heads > 0) {
      p.heads = num_heads;
      p.head_size = hidden / num_heads;
    } else if (ms && cos.shape.size() == 2) {  // ONNX Runtime: the head size from the caches
      p.head_size = 2 * cos.shape[1];
      p.heads = p.head_size ? hidden / p.head_size : 0;
    } else {
      raise(fail, std::string("num_heads is required for a 3-D ") + x_name + " " + x.describe());
    }
    if (p.heads * p.head_size != hidden || p.head_size == 0)
      raise(fail, name_of(x_name, x) + ": hidden size " + std::to_string(hidden) + " is not " +
                      std::to_string(p.heads) + " heads of " + std::to_string(p.head_size));
  }
  p.rotary_dim = rotary_attr > 0 ? rotary_attr : p.head_size;
  if (p.rotary_dim > p.head_size || p.rotary_dim % 2 != 0)
    raise(fail, "rotary_embedding_dim " + std::to_string(p.rotary_dim) + " must be even and at most the head size " +
                    std::to_string(p.head_size));
  const int64_t half = p.rotary_dim / 2;

  if (has_positions) {
    const Operand& pos = in[p.position_input];
    if (pos.dtype != DType::Int64) raise(fail, name_of("position_ids", pos) + " must be int64");
    if (ms && shape_numel(pos.shape) == 1 && pos.shape.size() <= 1) {
      p.rows = RotaryParams::Rows::Offset;
    } else if (pos.shape == Shape{p.batch, p.seq}) {
      p.rows = RotaryParams::Rows::PerToken;
    } else {
      raise(fail, name_of("position_ids", pos) + " must be [batch, sequence] = " + shape_str(Shape{p.batch, p.seq}) +
                      (ms ? " or hold one value (the first token's position)" : ""));
    }
    if (cos.shape.size() != 2 || cos.shape[1] != half)
      raise(fail, name_of("cos_cache", cos) + " must be [max_position, " + std::to_string(half) +
                      "] (half the rotary dim " + std::to_string(p.rotary_dim) + ")");
    p.cache_rows = cos.shape[0];
    if (ms && p.seq > p.cache_rows && node.attr_int("is_packed_batching", 0) == 0)
      raise(fail, "the sequence length " + std::to_string(p.seq) + " exceeds the caches' " + std::to_string(p.cache_rows) +
                      " positions (ONNX Runtime does not extend the caches)");
  } else {
    p.rows = RotaryParams::Rows::Direct;
    const Shape want{p.batch, p.seq, half};
    if (cos.shape != want)
      raise(fail, name_of("cos_cache", cos) + " must be [batch, sequence, half the rotary dim] = " + shape_str(want) +
                      " without position_ids");
    p.cache_rows = p.batch * p.seq;
  }
  return p;
}

}  // namespace onnxgpu::ops
