// The recurrent ops' activation functions (RNN, GRU, LSTM), as src/ops/rnn parses them from the
// 'activations' attribute, evaluated on the CPU.
#pragma once
#include <algorithm>
#include <cmath>

#include "ops/rnn.h"

namespace onnxgpu::cpu::rnn {

using ActKind = ops::RnnActKind;

// The activation applied to x (float or double).
template <class A>
A apply(const ops::RnnActivation& act, A x) {
  const A a = A(act.alpha), b = A(act.beta);
  switch (act.kind) {
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

}  // namespace onnxgpu::cpu::rnn
