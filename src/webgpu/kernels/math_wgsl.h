// WGSL math beyond the shader layer's that several kernel families declare (the elementwise ops' Erf
// and Gelu, the com.microsoft BiasGelu).
#pragma once

namespace onnxgpu::webgpu {

// erf with |error| < 1.5e-7 (Abramowitz and Stegun 7.1.26); NaN in, NaN out.
inline constexpr const char* kErfWgsl = R"(
fn erf_f32(x: f32) -> f32 {
  if (isnan_f32(x)) { return x; }
  let t = 1.0 / (1.0 + 0.3275911 * abs(x));
  let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp_f32(-x * x);
  return select(-y, y, x >= 0.0);
}
)";

}  // namespace onnxgpu::webgpu
