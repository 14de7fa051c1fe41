#include "ops/qlinear.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/axis.h"
#include "ops/broadcast.h"


namespace onnxgpu::ops {

namespace {

bool quantized_type(DType t) { return t == DType::Int8 || t == DType::UInt8; }

const Operand& at(const std::vector<Operand>& in, size_t i) {
  static const Operand none;
  return i < in.size() ? in[i] : none;
}

}  // namespace

void check_quantized(const std::vector<Operand>& in, const QuantizedInput& q, const std::string& what, const Fail& fail,
                     DType same_as) {
  DType type = same_as;
  if (q.x != QuantizedInput::kNone) {
    const Operand& x = at(in, q.x);
    if (!x.given() || !quantized_type(x.dtype) || (same_as != DType::Undefined && x.dtype != same_as))
      raise(fail, what + " must be " +
                      (same_as != DType::Undefined ? std::string(dtype_name(same_as)) + " (as the other quantized tensors)"
                                                   : std::string("int8 or uint8")) +
                      ", got " + (x.given() ? x.describe() : std::string("nothing")));
    type = x.dtype;
  }
  const Operand& s = at(in, q.scale);
  if (!s.given() || !dtype_is_float(s.dtype) || shape_numel(s.shape) != 1)
    raise(fail, what + "'s scale must be a float scalar, got " + (s.given() ? s.describe() : std::string("nothing")));
  const Operand& z = at(in, q.zero);
  if (z.given() && (z.dtype != type || shape_numel(z.shape) != 1))
    raise(fail, what + "'s zero point must be a scalar of type " + std::string(dtype_name(type)) + ", got " + z.describe());
}

int32_t requantize(float v, int32_t zero_point, DType t) {
  const float lo = t == DType::Int8 ? -128.0f : 0.0f, hi = t == DType::Int8 ? 127.0f : 255.0f;
  return int32_t(std::clamp(std::nearbyint(v) + float(zero_point), lo, hi));
}

QLinearTable qlinear_table(DType x_type, float x_scale, int32_t x_zero, float y_scale, int32_t y_zero, DType y_type,
                           const std::function<float(float)>& f) {
  QLinearTable t{};
  for (int b = 0; b < 256; ++b) {
    const int32_t x = x_type == DType::Int8 ? int32_t(int8_t(uint8_t(b))) : b;
    t[size_t(b)] = requantize(f(x_scale * float(x - x_zero)) / y_scale, y_zero, y_type);
  }
  return t;
}

DType check_qlinear_unary(const std::vector<Operand>& in, const Fail& fail) {
  check_quantized(in, {0, 1, 2}, "X", fail);
  check_quantized(in, {QuantizedInput::kNone, 3, 4}, "Y", fail, in[0].dtype);
  return in[0].dtype;
}

void check_qlinear_average_pool(const ir::Node& node, const std::vector<Operand>& in, const Fail& fail) {
  check_qlinear_unary(in, fail);
  if (node.attr_int("channels_last", 0) != 0) raise(fail, "channels_last 1 (X laid out [N, spatial..., C]) is not supported");
  if (in[0].shape.size() < 3) raise(fail, "input X must be [N, C, D1, ...] (rank >= 3), got " + in[0].describe());
}

std::function<float(float)> qlinear_unary_function(const ir::Node& node) {
  if (node.op_type == "QLinearLeakyRelu") {
    const float alpha = node.attr_float("alpha", 0.01f);
    return [alpha](float v) { return v >= 0.0f ? v : v * alpha; };
  }
  return [](float v) { return 1.0f / (1.0f + std::exp(-v)); };  // QLinearSigmoid
}

DType check_qlinear_binary(const std::vector<Operand>& in, const Fail& fail) {
  if (in.size() < 7) raise(fail, "takes 7 or 8 inputs (A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale[, C_zero_point])");
  check_quantized(in, {0, 1, 2}, "A", fail);
  check_quantized(in, {3, 4, 5}, "B", fail, in[0].dtype);
  const Operand& cs = at(in, 6);
  if (!cs.given() || !dtype_is_float(cs.dtype) || shape_numel(cs.shape) != 1)
    raise(fail, "C_scale must be a float scalar, got " + (cs.given() ? cs.describe() : std::string("nothing")));
  const Operand& cz = at(in, 7);
  if (cz.given() && (cz.dtype != in[0].dtype || shape_numel(cz.shape) != 1))
    raise(fail, "C_zero_point must be a scalar of A's type (" + std::string(dtype_name(in[0].dtype)) + "), got " + cz.describe());
  return in[0].dtype;
}

QLinearPoolGeometry qlinear_global_pool_geometry(const ir::Node& node, const std::vector<Operand>& in, const Fail& fail) {
  check_quantized(in, {0, 1, 2}, "X", fail);
  check_quantized(in, {QuantizedInput::kNone, 3, 4}, "Y", fail, in[0].dtype);
  QLinearPoolGeometry g;
  g.channels_last = node.attr_int("channels_last", 0) != 0;
  const Shape& x = in[0].shape;
  if (x.size() < 3) raise(fail, "X must have a batch, a channel and at least one spatial dim, got " + in[0].describe());
  g.batch = x[0];
  g.channels = g.channels_last ? x.back() : x[1];
  g.spatial = 1;
  for (size_t d = 1; d + 1 < x.size(); ++d) g.spatial *= x[g.channels_last ? d : d + 1];
  g.out = Shape(x.size(), 1);
  g.out[0] = g.batch;
  g.out[g.channels_last ? x.size() - 1 : 1] = g.channels;
  return g;
}

QGemmParams qgemm_params(const ir::Node& node, const std::vector<Operand>& in, const Fail& fail) {
  if (in.size() < 6) raise(fail, "takes 6 to 9 inputs (A, a_scale, a_zero_point, B, b_scale, b_zero_point[, C, y_scale, y_zero_point])");
  QGemmParams p;
  p.trans_a = node.attr_int("transA", 0) != 0;
  p.trans_b = node.attr_int("transB", 0) != 0;
  p.alpha = node.attr_float("alpha", 1.0f);
  const Operand &a = in[0], &b = in[3];
  if (!a.given() || !quantized_type(a.dtype) || a.shape.size() != 2)
    raise(fail, "A must be a 2-D int8 or uint8 tensor, got " + (a.given() ? a.describe() : std::string("nothing")));
  if (!b.given() || !quantized_type(b.dtype) || b.shape.size() != 2)
    raise(fail, "B must be a 2-D int8 or uint8 tensor, got " + (b.given() ? b.describe() : std::string("nothing")));
  p.M = a.shape[p.trans_a ? 1 : 0];
  p.K = a.shape[p.trans_a ? 0 : 1];
  p.N = b.shape[p.trans_b ? 0 : 1];
  if (b.shape[p.trans_b ? 1 : 0] != p.K)
    raise(fail, "A " + a.describe() + " and B " + b.describe() + " do not multiply (transA " + std::to_string(p.trans_a) +
                    ", transB " + std::to_string(p.trans_b) + ")");
  check_quantized(in, {0, 1, 2}, "A", fail);
  auto per_column = [&](size_t i, const char* what, bool scale) {
    const Operand& o = at(in, i);
    if (!o.given()) {
      if (scale) raise(fail, std::string(what) + " is required");
      return;
    }
    const int64_t n = shape_numel(o.shape);
    if ((scale ? !dtype_is_float(o.dtype) : o.dtype != b.dtype) || (n != 1 && n != p.N) || o.shape.size() > 1)
      raise(fail, std::string(what) + " must be a " + (scale ? "float" : std::string(dtype_name(b.dtype))) +
                      " scalar or have one value per column (" + std::to_string(p.N) + "), got " + o.describe());
  };
  per_column(4, "b_scale", true);
  per_column(5, "b_zero_point", false);
  const Operand& c = at(in, 6);
  if (c.given()) {
    bool ok = c.dtype == DType::Int32 && c.shape.size() <= 2;
    if (ok) {
      try {
        ok = broadcast_shapes(c.shape, {p.M, p.N}) == Shape{p.M, p.N};
      } catch (const Error&) {
        ok = false;
      }
    }
    if (!ok) raise(fail, "C must be int32 and broadcast to [M, N] = [" + std::to_string(p.M) + "," + std::to_string(p.N) + "], got " + c.describe());
  }
  const Operand &ys = at(in, 7), &yz = at(in, 8);
  p.quantized = ys.given();
  if (p.quantized) {
    check_quantized(in, {QuantizedInput::kNone, 7, 8}, "Y", fail, yz.given() ? yz.dtype : DType::UInt8);
    if (yz.given() && !quantized_type(yz.dtype)) raise(fail, "y_zero_point must be int8 or uint8, got " + yz.describe());
    p.out = yz.given() ? yz.dtype : DType::UInt8;
  } else if (yz.given()) {
    raise(fail, "y_zero_point is given without y_scale");
  }
  return p;
}

DType check_qlinear_concat(const ir::Node& node, const std::vector<Operand>& in, int64_t& axis, Shape& out, const Fail& fail) {
  if (in.size() < 5 || (in.size() - 2) % 3 != 0)
    raise(fail, "takes Y_scale, Y_zero_point and then (X, X_scale, X_zero_point) per tensor, got " + std::to_string(in.size()) +
                    " inputs");
  const Operand &ys = in[0], &yz = in[1];
  if (!ys.given() || !dtype_is_float(ys.dtype) || shape_numel(ys.shape) != 1)
    raise(fail, "Y_scale must be a float scalar, got " + (ys.given() ? ys.describe() : std::string("nothing")));
  if (!yz.given() || !quantized_type(yz.dtype) || shape_numel(yz.shape) != 1)
    raise(fail, "Y_zero_point must be an int8 or uint8 scalar (it gives Y its type), got " +
                    (yz.given() ? yz.describe() : std::string("nothing")));
  const size_t n = (in.size() - 2) / 3;
  for (size_t k = 0; k < n; ++k) check_quantized(in, {2 + 3 * k, 3 + 3 * k, 4 + 3 * k}, "X" + std::to_string(k), fail, yz.dtype);
  const Shape& first = in[2].shape;
  axis = node.attr_int("axis", 0);
  const int64_t r = int64_t(first.size());
  if (axis < -r || axis >= r) raise(fail, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  if (axis < 0) axis += r;
  out = first;
  out[size_t(axis)] = 0;
  for (size_t k = 0; k < n; ++k) {
    const Shape& s = in[2 + 3 * k].shape;
    bool ok = s.size() == first.size();
    for (size_t d = 0; ok && d < s.size(); ++d) ok = d == size_t(axis) || s[d] == first[d];
    if (!ok)
      raise(fail, "X" + std::to_string(k) + " " + in[2 + 3 * k].describe() + " must match X0 " + in[2].describe() +
                      " except along axis " + std::to_string(axis));
    out[size_t(axis)] += s[size_t(axis)];
  }
  return yz.dtype;
}

QLinearSoftmaxParams qlinear_softmax_params(const ir::Node& node, const std::vector<Operand>& in, float x_scale,
                                            float y_scale, int32_t y_zero, const Fail& fail) {
  QLinearSoftmaxParams p;
  p.type = check_qlinear_unary(in, fail);
  if (!node.has_attr("opset")) raise(fail, "attribute 'opset' (the opset of the Softmax it replaces) is required");
  const int64_t opset = node.attr_int("opset", 13);
  const Shape& x = in[0].shape;
  const int64_t rank = int64_t(x.size());
  if (rank == 0) raise(fail, "input X must have a rank of at least 1, got " + in[0].describe());
  const int64_t axis = normalize_axis(node.attr_int("axis", opset < 13 ? 1 : -1), rank, fail);
  p.outer = 1;
  for (int64_t d = 0; d < axis; ++d) p.outer *= x[size_t(d)];
  p.D = x[size_t(axis)];
  p.inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d) (opset < 13 ? p.D : p.inner) *= x[size_t(d)];
  if (!(x_scale > 0.0f) || !(y_scale > 0.0f))
    raise(fail, "x_scale and y_scale must be positive, got " + std::to_string(x_scale) + " and " + std::to_string(y_scale));
  const double shift =
      p.D > 0 ? std::max(0.0, std::log(double(std::numeric_limits<float>::max() / float(p.D))) - 5.0) / double(x_scale) : 0.0;
  for (int k = 0; k < 256; ++k) p.table[size_t(k)] = float(std::exp((double(k) - 255.0 + shift) * double(x_scale)));
  p.y_factor = std::floor(1.0f / y_scale);
  p.y_zero = y_zero;
  return p;
}

}  // namespace onnxgpu::ops
