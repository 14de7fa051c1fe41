// RNN, GRU and LSTM, the part both kernel sets share (the CPU reference src/cpu/rnn.cpp, the GPU kernel
// src/webgpu/kernels/rnn.cpp): the attributes (direction, layout, clip, linear_before_reset,
// input_forget, the activation functions with their alpha / beta), and the inputs' types and shapes,
// read and checked once.
//   inputs   X [S, N, I] (layout 1: [N, S, I]), W [nd, G*H, I], R [nd, G*H, H], B [nd, 2*G*H] (optional),
//            sequence_lens [N] int32 (optional, values in [0, S]), initial_h [nd, N, H] (layout 1:
//            [N, nd, H]), LSTM's initial_c likewise and P [nd, 3*H] (peepholes i, o, f). G gates: 1 (RNN),
//            3 (GRU: z, r, h), 4 (LSTM: i, o, f, c).
//   outputs  Y [S, nd, N, H] (layout 1: [N, S, nd, H]), zero past a row's length; Y_h (and LSTM's Y_c)
//            with initial_h's shape.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/fail.h"
#include "ops/operand.h"

namespace onnxgpu::ops {

enum class RnnCell { Rnn, Gru, Lstm };

enum class RnnActKind { Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus };

struct RnnActivation {
  RnnActKind kind = RnnActKind::Tanh;
  float alpha = 0, beta = 0;
};

struct RnnConfig {
  RnnCell cell = RnnCell::Rnn;
  int64_t gates = 1;   // G
  int64_t nd = 1;      // directions
  bool fwd_only = true, rev_only = false;
  int64_t layout = 0;  // 0: [S, N, ...]; 1: [N, S, ...] (opset 14)
  bool has_clip = false;
  float clip = 0;
  bool linear_before_reset = false;  // GRU
  bool input_forget = false;         // LSTM
  size_t nacts = 1;                  // activations per direction
  std::vector<RnnActivation> acts;   // nd * nacts

  bool reverse(int64_t d) const { return rev_only || (!fwd_only && d == 1); }
};

// The node's attributes, checked. The 'activations' names are case-insensitive; absent, the op's
// defaults; a bidirectional node given one direction's list uses it for both; alpha / beta values are
// consumed in order by the functions that take them (defaults: LeakyRelu 0.01, ThresholdedRelu 1,
// HardSigmoid 0.2 / 0.5, Elu 1, Affine 1 / 0, ScaledTanh 1 / 1).
RnnConfig rnn_config(const ir::Node& node, int64_t opset, RnnCell cell, const Fail& fail);

struct RnnDims {
  int64_t S = 0, N = 0, I = 0, H = 0;
  Shape state_shape;  // of initial_h, Y_h, Y_c
  Shape y_shape;
};

// Input slots shared by the three ops.
enum : size_t { kRnnX = 0, kRnnW = 1, kRnnR = 2, kRnnB = 3, kRnnSeqLens = 4, kRnnInitH = 5, kRnnInitC = 6, kRnnP = 7 };

// The inputs' types and shapes against each other and the attributes (not sequence_lens' values).
// `names`: the node's input names, for messages.
RnnDims rnn_dims(const ir::Node& node, const RnnConfig& c, const std::vector<Operand>& inputs, const Fail& fail);

}  // namespace onnxgpu::ops
