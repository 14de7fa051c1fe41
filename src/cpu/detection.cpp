// NonMaxSuppression. For every batch and class, boxes scoring above score_threshold are visited by
// descending score (ties: lower box index first); a box is selected unless its IoU with an already
// selected box of that batch and class exceeds iou_threshold, until max_output_boxes_per_class are
// selected. Output rows [batch, class, box] come batch by batch, class by class, in selection order.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "cpu/kernel.h"

namespace onnxgpu::cpu {
namespace {

const char* const kNmsInputs[] = {"boxes", "scores", "max_output_boxes_per_class", "iou_threshold",
                                  "score_threshold"};

std::string label(const KernelContext& ctx, size_t i) {
  return "input " + std::to_string(i) + " '" + kNmsInputs[i] + "' ('" + ctx.input_name(i) + "')";
}

struct Corners {
  float x_min, y_min, x_max, y_max;
};

Corners corners(const float* b, bool center_point) {
  if (center_point) {  // [x_center, y_center, width, height]
    const float hw = b[2] / 2, hh = b[3] / 2;
    return {b[0] - hw, b[1] - hh, b[0] + hw, b[1] + hh};
  }
  // [y1, x1, y2, x2], any diagonal pair of corners.
  return {std::min(b[1], b[3]), std::min(b[0], b[2]), std::max(b[1], b[3]), std::max(b[0], b[2])};
}

// True when the IoU of a and b exceeds the threshold (degenerate or disjoint boxes never suppress).
bool suppresses(const Corners& a, const Corners& b, float iou_threshold) {
  const float ix_min = std::max(a.x_min, b.x_min), ix_max = std::min(a.x_max, b.x_max);
  if (ix_max <= ix_min) return false;
  const float iy_min = std::max(a.y_min, b.y_min), iy_max = std::min(a.y_max, b.y_max);
  if (iy_max <= iy_min) return false;
  const float inter = (ix_max - ix_min) * (iy_max - iy_min);
  if (inter <= 0.0f) return false;
  const float area_a = (a.x_max - a.x_min) * (a.y_max - a.y_min);
  const float area_b = (b.x_max - b.x_min) * (b.y_max - b.y_min);
  const float uni = area_a + area_b - inter;
  if (area_a <= 0.0f || area_b <= 0.0f || uni <= 0.0f) return false;
  return inter / uni > iou_threshold;
}

// A scalar or one-element input of type `want`.
const Tensor* scalar_input(const KernelContext& ctx, size_t i, DType want) {
  if (!ctx.has_input(i)) return nullptr;
  const Tensor& t = ctx.input(i);
  if (t.dtype() != want)
    ctx.fail(label(ctx, i) + " has type " + std::string(dtype_name(t.dtype())) + ", expected " +
             std::string(dtype_name(want)));
  if (t.numel() != 1 || t.rank() > 1)
    ctx.fail(label(ctx, i) + " has shape " + shape_str(t.shape()) + ", expected a scalar");
  return &t;
}

std::vector<Tensor> non_max_suppression(KernelContext& ctx) {
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  for (size_t i : {size_t(0), size_t(1)})
    if (ctx.input(i).dtype() != DType::Float32)
      ctx.fail(label(ctx, i) + " has type " + std::string(dtype_name(ctx.input(i).dtype())) + ", expected float32");
  if (boxes.rank() != 3 || boxes.dim(2) != 4)
    ctx.fail(label(ctx, 0) + " has shape " + shape_str(boxes.shape()) +
             ", expected [num_batches, spatial_dimension, 4]");
  const int64_t B = boxes.dim(0), S = boxes.dim(1);
  if (scores.rank() != 3 || scores.dim(0) != B || scores.dim(2) != S)
    ctx.fail(label(ctx, 1) + " has shape " + shape_str(scores.shape()) + ", expected [" + std::to_string(B) +
             ", num_classes, " + std::to_string(S) + "] to match 'boxes' " + shape_str(boxes.shape()));
  const int64_t C = scores.dim(1);
  const int64_t cpb = ctx.node.attr_int("center_point_box", 0);
  if (cpb != 0 && cpb != 1) ctx.fail("attribute 'center_point_box' is " + std::to_string(cpb) + ", expected 0 or 1");

  const Tensor* t_max = scalar_input(ctx, 2, DType::Int64);
  const Tensor* t_iou = scalar_input(ctx, 3, DType::Float32);
  const Tensor* t_score = scalar_input(ctx, 4, DType::Float32);
  const int64_t max_out = t_max ? std::max<int64_t>(t_max->data<int64_t>()[0], 0) : 0;
  const float iou_threshold = t_iou ? t_iou->data<float>()[0] : 0.0f;
  if (!(iou_threshold >= 0.0f && iou_threshold <= 1.0f))
    ctx.fail(label(ctx, 3) + " is " + std::to_string(iou_threshold) + ", expected a value in [0, 1]");
  const bool use_score = t_score != nullptr;
  const float score_threshold = use_score ? t_score->data<float>()[0] : 0.0f;

  const float* bp = boxes.data<float>();
  const float* sp = scores.data<float>();
  std::vector<int64_t> rows;  // flattened [batch, class, box] triples
  std::vector<int64_t> order, selected;
  for (int64_t b = 0; b < B && max_out > 0; ++b) {
    std::vector<Corners> bc(static_cast<size_t>(S));
    for (int64_t i = 0; i < S; ++i) bc[size_t(i)] = corners(bp + (b * S + i) * 4, cpb == 1);
    for (int64_t c = 0; c < C; ++c) {
      const float* sc = sp + (b * C + c) * S;
      order.clear();
      for (int64_t i = 0; i < S; ++i)
        if (!use_score || sc[i] > score_threshold) order.push_back(i);
      // NaN scores (only kept without a score threshold) sort last, so the ordering stays strict-weak.
      auto key = [&](int64_t i) { return std::isnan(sc[i]) ? -std::numeric_limits<float>::infinity() : sc[i]; };
      std::stable_sort(order.begin(), order.end(), [&](int64_t l, int64_t r) { return key(l) > key(r); });
      selected.clear();
      for (int64_t i : order) {
        if (int64_t(selected.size()) >= max_out) break;
        bool keep = true;
        for (int64_t s : selected)
          if (suppresses(bc[size_t(s)], bc[size_t(i)], iou_threshold)) {
            keep = false;
            break;
          }
        if (!keep) continue;
        selected.push_back(i);
        rows.insert(rows.end(), {b, c, i});
      }
    }
  }
  const int64_t n = int64_t(rows.size() / 3);
  return {Tensor::from_vector<int64_t>({n, 3}, rows)};
}

}  // namespace

void register_detection(KernelRegistry& r) { r.add("NonMaxSuppression", non_max_suppression); }

}  // namespace onnxgpu::cpu
