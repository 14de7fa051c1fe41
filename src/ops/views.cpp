#include "ops/views.h"

#include <string>

#include "ops/axis.h"

namespace onnxgpu::ops {

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, const Fail& fail) {
  std::vector<int64_t> r;
  std::vector<bool> seen(size_t(rank), false);
  for (int64_t a : axes) {
    int64_t n = normalize_axis(a, rank, fail);
    if (rank == 0) raise(fail, "axis " + std::to_string(a) + " given for a rank-0 tensor");
    if (seen[size_t(n)]) raise(fail, "axis " + std::to_string(a) + " is repeated");
    seen[size_t(n)] = true;
    r.push_back(n);
  }
  return r;
}

Shape reshape_output(const ir::Node& node, int64_t opset, const Shape& in, const IntsInput& shape_input,
                     const Fail& fail) {
  std::vector<int64_t> req;
  if (opset < 5) {
    if (!node.has_attr("shape")) raise(fail, "attribute 'shape' is required before opset 5");
    req = node.attr_ints("shape");
  } else {
    req = shape_input();
  }
  const bool allowzero = opset >= 14 && node.attr_int("allowzero", 0) != 0;
  const int64_t n = shape_numel(in);
  Shape out(req.size());
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < req.size(); ++i) {
    int64_t d = req[i];
    if (d == 0 && !allowzero) {
      if (i >= in.size())
        raise(fail, "shape " + shape_str(req) + " copies dimension " + std::to_string(i) + " (a 0) but the input " +
                        shape_str(in) + " has rank " + std::to_string(in.size()));
      d = in[i];
    } else if (d == -1) {
      if (infer >= 0) raise(fail, "shape " + shape_str(req) + " has more than one -1");
      infer = int64_t(i);
      continue;
    } else if (d < -1) {
      raise(fail, "shape " + shape_str(req) + " has a negative dimension " + std::to_string(d));
    }
    out[i] = d;
    known *= d;
  }
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      raise(fail, "cannot infer the -1 of shape " + shape_str(req) + " for input " + shape_str(in));
    out[size_t(infer)] = n / known;
  }
  if (shape_numel(out) != n)
    raise(fail, "cannot reshape input " + shape_str(in) + " to " + shape_str(out) + " (shape input " + shape_str(req) +
                    "): element counts differ");
  return out;
}

Shape flatten_output(const ir::Node& node, const Shape& in, const Fail& fail) {
  const int64_t r = int64_t(in.size());
  int64_t axis = node.attr_int("axis", 1);
  if (axis < -r || axis > r)
    raise(fail, "axis " + std::to_string(axis) + " is out of range [" + std::to_string(-r) + ", " + std::to_string(r) +
                    "] for input " + shape_str(in));
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? outer : inner) *= in[size_t(i)];
  return {outer, inner};
}

Shape squeeze_output(const ir::Node& node, int64_t opset, const Shape& in, bool has_axes_input,
                     const IntsInput& axes_input, const Fail& fail) {
  std::vector<int64_t> axes;
  if (opset < 13) axes = node.attr_ints("axes");
  else if (has_axes_input) axes = axes_input();
  const int64_t r = int64_t(in.size());
  std::vector<bool> drop(size_t(r), false);
  if (!axes.empty()) {
    for (int64_t a : normalize_axes(axes, r, fail)) {
      if (in[size_t(a)] != 1)
        raise(fail, "cannot squeeze axis " + std::to_string(a) + " of input " + shape_str(in) + ": its size is not 1");
      drop[size_t(a)] = true;
    }
  } else {
    for (int64_t i = 0; i < r; ++i) drop[size_t(i)] = in[size_t(i)] == 1;
  }
  Shape out;
  for (int64_t i = 0; i < r; ++i)
    if (!drop[size_t(i)]) out.push_back(in[size_t(i)]);
  return out;
}

Shape unsqueeze_output(const ir::Node& node, int64_t opset, const Shape& in, const IntsInput& axes_input,
                       const Fail& fail) {
  std::vector<int64_t> axes;
  if (opset < 13) {
    if (!node.has_attr("axes")) raise(fail, "attribute 'axes' is required before opset 13");
    axes = node.attr_ints("axes");
  } else {
    axes = axes_input();
  }
  const int64_t out_rank = int64_t(in.size() + axes.size());
  std::vector<bool> inserted(size_t(out_rank), false);
  for (int64_t a : normalize_axes(axes, out_rank, fail)) inserted[size_t(a)] = true;
  Shape out;
  size_t j = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.push_back(inserted[size_t(i)] ? 1 : in[j++]);
  return out;
}

DropoutMode dropout_mode(const ir::Node& node, int64_t opset, bool has_ratio, bool has_training,
                         const ScalarInput& scalar_input, const Fail& fail) {
  DropoutMode m;
  if (opset < 7) {
    m.training = node.attr_int("is_test", 0) == 0;
    m.ratio = node.attr_float("ratio", 0.5f);
  } else if (opset < 12) {
    m.ratio = node.attr_float("ratio", 0.5f);
  } else {
    if (has_training) {
      const Tensor& t = scalar_input(2, "training_mode");
      if (t.numel() != 1 || t.dtype() != DType::Bool)
        raise(fail, "input 'training_mode' must be a bool scalar, got " + t.describe());
      m.training = t.data<bool>()[0];
    }
    if (has_ratio && m.training) {
      const Tensor& r = scalar_input(1, "ratio");
      if (r.numel() != 1 || !dtype_is_float(r.dtype())) raise(fail, "input 'ratio' must be a float scalar, got " + r.describe());
      m.ratio = r.double_at(0);
    }
  }
  if (m.training && (m.ratio < 0 || m.ratio >= 1)) raise(fail, "ratio must be in [0, 1), got " + std::to_string(m.ratio));
  return m;
}

}  // namespace onnxgpu::ops
