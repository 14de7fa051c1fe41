// The row kernels of the normalizations: one workgroup per row of len() elements (element i = row * len + j
// as the program's xv and y_store see it; MeanVarianceNormalization maps it to a non-contiguous element),
// whose sums are reduced in workgroup memory, then the row normalized and scaled. normalization.cpp's
// kernels (LayerNormalization, the transformer normalizations, Instance/Group/MeanVarianceNormalization)
// and the product's post-normalization (matmul.cpp: a normalization that reads a product's result,
// computed in the product's summing pass) share them, so that a row is normalized by one rule.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "webgpu/kernels/kernel.h"

namespace onnxgpu::webgpu::row_norm {

// Values of a row each invocation keeps in registers, v0 ... v3: rows up to kCached x the workgroup are read
// once.
inline constexpr uint32_t kCached = 4;

// Workgroup size of a row kernel for rows of `len` elements: the fewest invocations, a power of two from 32
// to 256 within the device's limits, that keep a row in their registers (kCached values each), so that a
// short row (a ConvNeXt's LayerNormalization over 96 channels) does not leave most of 256 idle at every
// barrier; len 0 (unknown): the largest. $ONNXGPU_ROW_WG=N fixes it (reduce_util::forced_row_invocations).
uint32_t workgroup(const Limits& l, uint64_t len = 0);

// The WGSL shared by the row kernels: `row_sum(lid, v)` sums v over the workgroup in two barriers (every
// invocation must call it, in uniform control flow, once per dispatch).
std::string sum_decl(uint32_t wgs);

// What a row kernel does besides normalizing: its program declares `fn xv(i: u32) -> f32` (element i's
// value before it is normalized) and the uniforms rows(), len() and eps(); y is the output.
struct RowSpec {
  std::string scale, shift;  // WGSL expressions of the element index `i`, its place in the row `j`
                             // and the row `row` (empty: none)
  std::string sum;           // a statement storing `v` as element `i` of an output (empty: none)
  std::string stats;         // statements after the row's `mean` and `inv` are known
  bool centered = true;      // false: RMS normalization (the mean is 0, the variance the mean square)
  bool eps_on_std = false;   // true: divide by sqrt(variance) + eps (MeanVarianceNormalization's rule), not
                             // by sqrt(variance + eps)
  // Statements that set v0 ... v3 (declared `var`, 0.0), the values of the row's elements j0 ... j3 =
  // lid + c * WG (those below n; the others are not read), all at once: a kernel whose values each take
  // many loads (a product's partial sums) issues them together rather than one element's after another's.
  // Empty: each is xv's.
  std::string cached;
};

// The body of a row kernel (one workgroup per row, y the output). xv is called once per element before
// the row's statistics are known (but for those RowSpec::cached sets), and again after them for elements
// past the invocations' registers (rows longer than kCached x the workgroup); y is written only after the
// statistics, each element by the invocation that read it, so y may hold the values xv reads.
std::string body(const RowSpec& r);

// One workgroup per row.
void dispatch(GpuKernelContext& ctx, const shader::Program& p, std::vector<ValueRef> binds, uint64_t rows);

}  // namespace onnxgpu::webgpu::row_norm
