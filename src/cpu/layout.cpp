// Ops that move elements around: Transpose, Concat, Split, Slice, Expand, Tile, Pad, DepthToSpace,
// SpaceToDepth, CenterCropPad, ReverseSequence. All are type-generic (elements copied as bytes, or as strings).
#include <algorithm>
#include <numeric>

#include "cpu/kernel.h"
#include "cpu/shape_util.h"
#include "ops/broadcast.h"
#include "ops/layout.h"
#include "ops/pad.h"
#include "ops/slice.h"
#include "ops/split.h"

namespace onnxgpu::cpu {

namespace {

int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// x viewed as `view` (same element count), transposed by `perm`.
Tensor transpose_view(const Tensor& x, const Shape& view, const std::vector<int64_t>& perm) {
  std::vector<int64_t> in_strides = shape_strides(view);
  Shape out(perm.size());
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    out[i] = view[size_t(perm[i])];
    strides[i] = in_strides[size_t(perm[i])];
  }
  return strided_copy(x, out, strides, 0);
}

std::vector<Tensor> transpose(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t r = x.rank();
  std::vector<int64_t> perm(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) perm[size_t(i)] = r - 1 - i;
  if (ctx.node.has_attr("perm")) {
    perm = ctx.node.attr_ints("perm");
    if (int64_t(perm.size()) != r)
      ctx.fail("perm " + ints_str(perm) + " has " + std::to_string(perm.size()) + " entries but the input " +
               x.describe() + " has rank " + std::to_string(r));
    std::vector<bool> seen(size_t(r), false);
    for (int64_t& p : perm) {
      if (p < -r || p >= r || seen[size_t(p < 0 ? p + r : p)])
        ctx.fail("perm " + ints_str(ctx.node.attr_ints("perm")) + " is not a permutation of 0.." + std::to_string(r - 1));
      if (p < 0) p += r;
      seen[size_t(p)] = true;
    }
  }
  return {transpose_view(x, x.shape(), perm)};
}

std::vector<Tensor> concat(KernelContext& ctx) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) shapes.push_back(ctx.input(i).shape());
  ops::ConcatShape cs = ops::concat_shape(ctx.node, ctx.opset, shapes, ctx.fail_fn());
  const Tensor& first = ctx.input(0);
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.input(i).dtype() != first.dtype())
      ctx.fail("input " + std::to_string(i) + " is " + ctx.input(i).describe() + " but input 0 is " + first.describe());
  const int64_t axis = cs.axis;
  const Shape& out_shape = cs.out;
  Tensor out(first.dtype(), out_shape);
  int64_t outer = prod(out_shape, 0, size_t(axis));
  int64_t inner = prod(out_shape, size_t(axis) + 1, out_shape.size());
  int64_t out_row = out_shape[size_t(axis)] * inner, offset = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.input(i);
    int64_t row = t.dim(axis) * inner;
    ElementCopier copy(t, out);
    for (int64_t o = 0; o < outer; ++o) copy.run(o * out_row + offset, o * row, row);
    offset += row;
  }
  return {out};
}

std::vector<Tensor> split(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() == 0) ctx.fail("cannot split a scalar");
  int64_t axis = ctx.normalize_axis(ctx.node.attr_int("axis", 0), x.rank());
  int64_t dim = x.dim(axis);
  std::vector<int64_t> sizes = ops::split_sizes(
      ctx.node, ctx.opset, axis, dim, x.describe(), ctx.num_outputs(), ctx.has_input(1),
      [&] { return ctx.input(1).numel() > 0 ? int64_input(ctx, 1, "split") : std::vector<int64_t>{}; },
      [&](const std::string& m) { ctx.fail(m); });
  int64_t outer = prod(x.shape(), 0, size_t(axis));
  int64_t inner = prod(x.shape(), size_t(axis) + 1, x.shape().size());
  std::vector<Tensor> outs;
  int64_t offset = 0;
  for (int64_t s : sizes) {
    Shape os = x.shape();
    os[size_t(axis)] = s;
    Tensor out(x.dtype(), os);
    ElementCopier copy(x, out);
    for (int64_t o = 0; o < outer; ++o) copy.run(o * s * inner, o * dim * inner + offset * inner, s * inner);
    offset += s;
    outs.push_back(out);
  }
  return outs;
}

std::vector<Tensor> slice(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  auto fail = [&](const std::string& m) { ctx.fail(m); };
  ops::SliceParams p = ops::slice_params(
      ctx.node, ctx.opset, [&](size_t i) { return ctx.has_input(i); },
      [&](size_t i, const char* what) { return int64_input(ctx, i, what); }, fail);
  Shape out = x.shape();
  std::vector<int64_t> in_strides = shape_strides(x.shape());
  std::vector<int64_t> strides = in_strides;
  int64_t base = 0;
  for (const ops::SlicedAxis& s : ops::plan_slice(x.shape(), p, fail)) {
    out[s.axis] = s.count;
    if (s.count > 0) {
      base += s.start * in_strides[s.axis];
      strides[s.axis] = in_strides[s.axis] * (s.count > 1 ? s.step : 1);  // step only matters when count > 1
    }
  }
  return {strided_copy(x, out, strides, base)};
}

std::vector<Tensor> expand(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Shape out = ops::expand_shape(x.shape(), int64_input(ctx, 1, "shape"), ctx.fail_fn());
  return {strided_copy(x, out, ops::broadcast_strides(x.shape(), out), 0)};
}

std::vector<Tensor> tile(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t r = x.rank();
  std::vector<int64_t> repeats;
  if (ctx.opset < 6) {
    int64_t tiles = int64_scalar_input(ctx, 1, "tiles");
    int64_t axis = ctx.normalize_axis(int64_scalar_input(ctx, 2, "axis"), r);
    repeats.assign(size_t(r), 1);
    repeats[size_t(axis)] = tiles;
  } else {
    repeats = int64_input(ctx, 1, "repeats");
  }
  Shape out = ops::tile_shape(x.shape(), repeats, [&](const std::string& m) { ctx.fail(m); });
  std::vector<int64_t> in_strides = shape_strides(x.shape());
  Tensor y(x.dtype(), out);
  ElementCopier copy(x, y);
  int64_t i = 0;
  for_each_coord(out, [&](const std::vector<int64_t>& c) {
    int64_t src = 0;
    for (size_t d = 0; d < c.size(); ++d) src += (c[d] % x.shape()[d]) * in_strides[d];
    copy(i++, src);
  });
  return {y};
}

std::vector<Tensor> pad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t r = x.rank();
  std::string mode = ctx.node.attr_string("mode", "constant");
  std::vector<int64_t> pads, axes;
  Tensor value(x.dtype(), {});  // the constant, zero (or "") by default
  if (ctx.opset < 11) {
    const char* name = ctx.opset < 2 ? "paddings" : "pads";
    if (!ctx.node.has_attr(name)) ctx.fail(std::string("attribute '") + name + "' is required before opset 11");
    pads = ctx.node.attr_ints(name);
    float v = ctx.node.attr_float("value", 0.0f);
    if (x.dtype() != DType::String) value = Tensor::scalar<float>(v).cast(x.dtype());
  } else {
    pads = int64_input(ctx, 1, "pads");
    if (ctx.has_input(2) && ctx.input(2).numel() > 0) {
      const Tensor& cv = ctx.input(2);
      if (cv.dtype() != x.dtype())
        ctx.fail("constant_value " + cv.describe() + " must have the type of input 'data' " + x.describe());
      if (cv.numel() != 1) ctx.fail("constant_value must be a single value, got " + cv.describe());
      value = cv.reshaped({});
    }
    if (ctx.opset >= 18 && ctx.has_input(3)) axes = normalize_axes(ctx, int64_input(ctx, 3, "axes"), r);
  }
  ops::PadGeometry geo = ops::pad_geometry(x.shape(), mode, pads, axes, ctx.opset >= 18 && ctx.has_input(3),
                                           [&](const std::string& m) { ctx.fail(m); });
  const std::vector<int64_t>& begin = geo.begin;
  const Shape& out = geo.out;
  std::vector<int64_t> in_strides = shape_strides(x.shape());
  Tensor y(x.dtype(), out);
  ElementCopier copy(x, y), fill(value, y);
  int64_t i = 0;
  for_each_coord(out, [&](const std::vector<int64_t>& c) {
    int64_t src = 0;
    bool inside = true;
    for (size_t d = 0; d < c.size(); ++d) {
      int64_t n = x.shape()[d], p = c[d] - begin[d];
      if (p < 0 || p >= n) {
        if (mode == "constant") {
          inside = false;
          break;
        } else if (mode == "edge") {
          p = p < 0 ? 0 : n - 1;
        } else if (mode == "wrap") {
          p = ((p % n) + n) % n;
        } else if (n == 1) {
          p = 0;
        } else {  // reflect, repeating for pads larger than the axis (as numpy does)
          int64_t period = 2 * (n - 1);
          p = ((p % period) + period) % period;
          if (p >= n) p = period - p;
        }
      }
      src += p * in_strides[d];
    }
    if (inside) copy(i, src);
    else fill(i, 0);
    ++i;
  });
  return {y};
}

std::vector<Tensor> depth_to_space(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ops::BlockTranspose t = ops::depth_to_space(ctx.node, ctx.opset, x.shape(), ctx.fail_fn());
  return {transpose_view(x, t.view, t.perm).reshaped(t.out)};
}

std::vector<Tensor> space_to_depth(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ops::BlockTranspose t = ops::space_to_depth(ctx.node, x.shape(), ctx.fail_fn());
  return {transpose_view(x, t.view, t.perm).reshaped(t.out)};
}

// CenterCropPad: y[c] = x[c - begin] per axis, 0 outside x (ops::center_crop_pad).
std::vector<Tensor> center_crop_pad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ops::CropPad cp = ops::center_crop_pad(ctx.node, x.shape(), int64_input(ctx, 1, "shape"), ctx.fail_fn());
  Tensor y(x.dtype(), cp.out);  // zeros ("" for strings)
  ElementCopier copy(x, y);
  std::vector<int64_t> in_strides = shape_strides(x.shape());
  int64_t i = 0;
  for_each_coord(cp.out, [&](const std::vector<int64_t>& c) {
    int64_t src = 0;
    bool inside = true;
    for (size_t d = 0; d < c.size(); ++d) {
      int64_t p = c[d] - cp.begin[d];
      if (p < 0 || p >= x.shape()[d]) inside = false;
      src += p * in_strides[d];
    }
    if (inside) copy(i, src);
    ++i;
  });
  return {y};
}

// ReverseSequence: element t < sequence_lens[b] of batch element b's sequence is element len - 1 - t.
std::vector<Tensor> reverse_sequence(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& lens = ctx.input(1);
  if (lens.dtype() != DType::Int64) ctx.fail("input 'sequence_lens' must be int64, got " + lens.describe());
  ops::ReverseSequenceAxes a = ops::reverse_sequence_axes(ctx.node, x.shape(), lens.shape(), ctx.fail_fn());
  const int64_t T = x.dim(a.time_axis);
  for (int64_t b = 0; b < lens.numel(); ++b)
    if (lens.data<int64_t>()[b] < 0 || lens.data<int64_t>()[b] > T)
      ctx.fail("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(lens.data<int64_t>()[b]) +
               " is outside [0, " + std::to_string(T) + "]");
  std::vector<int64_t> st = shape_strides(x.shape());
  Tensor y(x.dtype(), x.shape());
  ElementCopier copy(x, y);
  int64_t i = 0;
  for_each_coord(x.shape(), [&](const std::vector<int64_t>& c) {
    int64_t t = c[size_t(a.time_axis)], len = lens.data<int64_t>()[c[size_t(a.batch_axis)]];
    copy(i, t < len ? i + (len - 1 - 2 * t) * st[size_t(a.time_axis)] : i);
    ++i;
  });
  return {y};
}

}  // namespace

void register_layout(KernelRegistry& r) {
  r.add("CenterCropPad", center_crop_pad);
  r.add("ReverseSequence", reverse_sequence);
  r.add("Transpose", transpose);
  r.add("Concat", concat);
  r.add("Split", split);
  r.add("Slice", slice);
  r.add("Expand", expand);
  r.add("Tile", tile);
  r.add("Pad", pad);
  r.add("DepthToSpace", depth_to_space);
  r.add("SpaceToDepth", space_to_depth);
}

}  // namespace onnxgpu::cpu
