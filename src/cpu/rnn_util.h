// Shared pieces of the recurrent ops (RNN, GRU, LSTM): their activation functions, as named by the
// 'activations' attribute, and how 'activation_alpha'/'activation_beta' are handed out to them.
#pragma once
#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "cpu/kernel.h"

namespace onnxgpu::cpu::rnn {

enum class ActKind { Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus };

struct Activation {
  ActKind kind = ActKind::Tanh;
  float alpha = 0, beta = 0;

  template <class A>
  A operator()(A x) const {
    const A a = A(alpha), b = A(beta);
    switch (kind) {
      case ActKind::Relu: return x > A(0) ? x : A(0);
      case ActKind::Tanh: return std::tanh(x);
      case ActKind::Sigmoid: return A(1) / (A(1) + std::exp(-x));
      case ActKind::Affine: return a * x + b;
      case ActKind::LeakyRelu: return x >= A(0) ? x : a * x;
      case ActKind::ThresholdedRelu: return x > a ? x : A(0);
      case ActKind::ScaledTanh: return a * std::tanh(b * x);
      case ActKind::HardSigmoid: return std::clamp(a * x + b, A(0), A(1));
      case ActKind::Elu: return x >= A(0) ? x : a * (std::exp(x) - A(1));
      case ActKind::Softsign: return x / (A(1) + std::abs(x));
      case ActKind::Softplus: return x > A(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    }
    return x;
  }
};

// Parses the 'activations' attribute (names are case-insensitive) for `num_directions` directions of
// `per_direction` functions each. Absent: `defaults` for every direction. A bidirectional node given
// only one direction's list uses it for both. alpha/beta values are consumed in order by the functions
// that take them; a function left without one gets its op's default (LeakyRelu 0.01, ThresholdedRelu 1,
// HardSigmoid 0.2/0.5, Elu 1, Affine 1/0, ScaledTanh 1/1).
inline std::vector<Activation> parse_activations(const KernelContext& ctx, const std::vector<std::string>& defaults,
                                                 int64_t num_directions) {
  const size_t per_dir = defaults.size();
  std::vector<std::string> names = ctx.node.has_attr("activations") ? ctx.node.attr_strings("activations")
                                                                    : std::vector<std::string>{};
  if (names.empty()) {
    for (int64_t d = 0; d < num_directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (names.size() == per_dir && num_directions == 2) {
    std::vector<std::string> twice = names;
    twice.insert(twice.end(), names.begin(), names.end());
    names = twice;
  }
  if (names.size() != per_dir * size_t(num_directions))
    ctx.fail("attribute 'activations' has " + std::to_string(names.size()) + " entries, expected " +
             std::to_string(per_dir * size_t(num_directions)) + " (" + std::to_string(per_dir) +
             " per direction)");
  std::vector<float> alphas = ctx.node.attr_floats("activation_alpha");
  std::vector<float> betas = ctx.node.attr_floats("activation_beta");
  size_t ai = 0, bi = 0;
  auto next = [](const std::vector<float>& v, size_t& i, float def) { return i < v.size() ? v[i++] : def; };
  std::vector<Activation> acts;
  for (const std::string& name : names) {
    std::string n = name;
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    Activation a;
    if (n == "relu") a.kind = ActKind::Relu;
    else if (n == "tanh") a.kind = ActKind::Tanh;
    else if (n == "sigmoid") a.kind = ActKind::Sigmoid;
    else if (n == "softsign") a.kind = ActKind::Softsign;
    else if (n == "softplus") a.kind = ActKind::Softplus;
    else if (n == "affine") {
      a.kind = ActKind::Affine;
      a.alpha = next(alphas, ai, 1.0f);
      a.beta = next(betas, bi, 0.0f);
    } else if (n == "leakyrelu") {
      a.kind = ActKind::LeakyRelu;
      a.alpha = next(alphas, ai, 0.01f);
    } else if (n == "thresholdedrelu") {
      a.kind = ActKind::ThresholdedRelu;
      a.alpha = next(alphas, ai, 1.0f);
    } else if (n == "scaledtanh") {
      a.kind = ActKind::ScaledTanh;
      a.alpha = next(alphas, ai, 1.0f);
      a.beta = next(betas, bi, 1.0f);
    } else if (n == "hardsigmoid") {
      a.kind = ActKind::HardSigmoid;
      a.alpha = next(alphas, ai, 0.2f);
      a.beta = next(betas, bi, 0.5f);
    } else if (n == "elu") {
      a.kind = ActKind::Elu;
      a.alpha = next(alphas, ai, 1.0f);
    } else {
      ctx.fail("attribute 'activations' names an unknown activation function '" + name + "'");
    }
    acts.push_back(a);
  }
  return acts;
}

}  // namespace onnxgpu::cpu::rnn
