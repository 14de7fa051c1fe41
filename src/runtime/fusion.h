// Fusion: graph nodes that one GPU kernel computes together, so that the plan records fewer
// dispatches and keeps no intermediate buffer. Eight kinds of group:
//   MatMul      [Transpose ->] MatMul [-> Add(bias) [-> Add(residual)] | -> Add(residual) | -> Transpose]: a Transpose
//               that only the MatMul reads is read in place through strides (deferred to the MatMul);
//               the bias (a constant row) and a residual of the output's shape, computed before the
//               MatMul (after the bias, or alone when the product has none), are added in the product's
//               epilogue; a Transpose that is the product's only
//               reader is done by writing the product through strides; a Split of the product's
//               last axis (attention's q, k, v from one QKV product) is done by writing each column
//               into its part; an elementwise group or lone elementwise node that alone reads the
//               result and otherwise only constant scalars (GELU after the bias, T5's Relu) is applied
//               in the epilogue. Then a normalization that reads that result h over its last axis
//               (float32; B 2-D) joins as the group's post-normalization: a LayerNormalization (ai.onnx, its
//               Mean and InvStdDev unread, scale and B one row each) or an RMS norm in plain ops (below)
//               whose rows are h. Split-K's summing pass normalizes the rows it sums (BERT's norms after
//               each block take no dispatch of their own); an unsplit product is followed by a row pass of
//               its kernel. h is stored too where anything else reads it (a pre-norm block's residual
//               stream): outputs h and the normalized rows. Not a LayerNormalization that is the
//               normalization prologue of the product reading it (below) when the rows are few enough
//               for the one-row kernels ($ONNXGPU_POST_NORM=0: no post-normalizations). Placed at the
//               MatMul; the Adds, the output Transpose, the Split, the group and the normalization are
//               skipped.
//   Siblings    MatMuls that read the same A with constant 2-D Bs of the same K (attention's q, k, v
//               projections), each with its constant bias Add or none: one product with the Bs (and
//               biases) side by side, written into the siblings' outputs as parts. Placed at the
//               first sibling; the concatenated constants are made once per session (`derived`).
//   Attention   MatMul(Q, K) [-> an elementwise expression of the scores (scale, mask)] -> Softmax over
//               the last axis -> MatMul(., V) [-> Transpose]: one kernel, the scores never stored.
//               Placed at the second MatMul; the first, the expression and the Softmax are deferred
//               to it (their own groups, the score product's folded Transposes and the elementwise
//               group, run when the attention kernel cannot).
//   Conv        Conv [-> BatchNormalization] [-> an elementwise expression] [-> MaxPool | AveragePool]: a
//               BatchNormalization in inference mode that alone reads the Conv, over constant weights and
//               statistics, is folded into the weights and bias (made once per session, `derived`); the
//               elementwise group or lone elementwise node that alone reads the result (ReLU, Clip,
//               HardSwish, HardSigmoid, x * Sigmoid(x), a residual Add and the ReLU after it) is applied in
//               the epilogue, its other tensors (the residual) read as inputs when they are known by then
//               and do not widen the output; then a 2-D MaxPool (its Indices unread) or AveragePool that
//               alone reads that result (not a graph output), whose windows of 1, 2 or 4 taps (2 x 2, 1 x 2,
//               2 x 1, 4 x 1, 1 x 4, 1 x 1) tile it without overlap (strides = kernel_shape, dilations 1, no
//               pads, auto_pad NOTSET or VALID, ceil_mode 0), is done by the Conv kernel, which computes the
//               positions the windows cover, applies the epilogue to each and stores only the window's
//               max or mean (a CNN block's pool: the pre-pool tensor never stored, the pool no dispatch).
//               Other pools (3 x 3 windows, overlapping, padded) run alone. Placed at the Conv.
//               ($ONNXGPU_CONV_FUSION=0: no Conv groups; $ONNXGPU_CONV_POOL=0: no pools in them.)
//   NBits pair  two com.microsoft MatMulNBits reading the same A, with the same K, N, bits and block
//               size (no g_idx), whose products only one elementwise expression reads (a group or a
//               lone node, reading otherwise only constant scalars): a decoder MLP's gate and up
//               projections and their SwiGLU, silu(gate) * up. One kernel computes both products and
//               stores the expression's value, the products never stored. Placed at the first product;
//               the second and the expression's nodes are skipped. Where the kernel does not take it
//               (a prompt's rows: only the decode-step kernel computes pairs), they run as unfused.
//   Norm        a row normalization without centering (SimplifiedLayerNormalization, ONNX
//   prologue    RMSNormalization, com.microsoft SkipSimplifiedLayerNormalization) over the last axis of
//               float32 rows, whose normalized output 0 only MatMulNBits read, as their A: one product,
//               or the two of an NBits pair. The product's (or pair's) decode-step kernel normalizes A's
//               rows as it stages them (every workgroup sums the squares of its rows), so the normalized
//               value is never stored; the Skip form's residual sum (output 3), when read, is written by
//               the kernel too (its mean and inv_std_var outputs, never: read, no group). Placed at the
//               normalization, the products (and the pair's expression) skipped: where the kernel does not
//               take it (a prompt's rows), the normalization runs alone and the products as they would
//               unfused (the pair still fused where its own kernel takes it). Likewise a LayerNormalization
//               (ai.onnx, float32 rows, the last axis) whose Y only one MatMul reads as its A, or only
//               the MatMuls of one sibling group, and whose Mean and InvStdDev nothing reads: the
//               product's group (its bias, Split parts, residual, activation, siblings: as above) with A
//               the rows before they are normalized, which the one-row float kernel (gemv.cpp, M <= 4)
//               normalizes as it reads them; more rows: the normalization alone and the product's own
//               group. ($ONNXGPU_NORM_PROLOGUE=0: none of either.)
//   RMS norm    an RMS normalization written in plain ops (T5's and Llama's exports): x -> Pow(x, 2) or
//               Mul(x, x) -> ReduceMean (the last axis only, keepdims) -> Add(a constant scalar eps) ->
//               Sqrt -> Div(x, .), or Sqrt -> Reciprocal or Div(1, .) -> Mul(x, .), or Pow(., -0.5) ->
//               Mul(x, .); then optionally a Mul by a constant 1-D float32 weight (either side), a
//               Cast(to=float) of x before it and Casts to float after; float32 x only, every value
//               but the last read only inside the chain. One kernel: the SimplifiedLayerNormalization
//               kernel (normalization.cpp; axis -1, epsilon eps, the weight or no scale). Placed at
//               the last node, the others deferred to it (run one by one when the kernel cannot).
//               Found before the elementwise groups, which then never take its nodes. It joins the
//               product whose result it normalizes (the MatMul group's post-normalization, above). Not
//               (yet) a normalization prologue of the products that read it: where a prologue kernel refuses
//               (a prompt's rows) the chain would run node by node, a node having one fusion decision;
//               it would take a second decision at the node (prologue, else this group) that refresh
//               replays, plus gemv.cpp's prologue uncentered and with an optional scale.
//   Elementwise a connected set of float elementwise nodes (Add, Mul, Pow, Tanh, Erf, ...) whose
//               values, but the last one, are read only inside the set (GELU's eight nodes, say):
//               one kernel evaluates the whole expression per output element (float32, or float16 or
//               bfloat16 computed in f32 with each step's value rounded to the type, as the node would
//               store it). The group is placed at its last node (the root); the other members are
//               deferred until then.
// Groups are found from the graph's structure; the fused kernels check dtypes and shapes at plan
// time, and when one cannot run, the planner runs the members one by one as usual.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace onnxgpu::runtime {

// What the planner knows of a value at node i.
struct ValueFacts {
  DType dtype = DType::Undefined;
  Shape shape;
  const Tensor* value = nullptr;  // a constant's value (null: computed at run time)
};

struct FusedGroup {
  ir::Node node;                // the fused node (domain webgpu::kFusedDomain); its elementwise
                                // expression, if it has one, in node.fused
  std::vector<size_t> members;  // the graph nodes it computes besides the one it is placed at
};

class Fusion {
 public:
  // `enabled` false: no groups (every node runs alone).
  // `onnx_opset`: the model's ai.onnx opset (how Split reads its sizes). `derived`: where constants
  // made by fusing live (the session's; null: no sibling groups).
  Fusion(const ir::Graph& graph, bool enabled, int64_t onnx_opset, std::map<std::string, Tensor>* derived = nullptr);
  // How much of a value's facts a decision reads. Kind: whether the value is known, its dtype and
  // rank (the facts come with every dim 0 and no value): what a refresh of a plan for other sizes
  // (refresh.h) never changes, so a decision that reads no more of a value is not made again when
  // only that value's sizes or contents changed. All: its sizes and a constant's contents too.
  enum class Read { Kind, All };
  using Lookup = std::function<const ValueFacts*(const std::string&, Read)>;  // null when unknown

  // A MatMul or sibling group placed at node i (its members come after i), or the elementwise
  // group whose root is i (its members come before i and were deferred).
  std::optional<FusedGroup> group_at(size_t i, const Lookup& facts) const;
  // The attention group placed at node i (a product of softmaxed scores with V), if one is.
  std::optional<FusedGroup> attention_group(size_t i, const Lookup& facts) const;
  // What the attention group at i defers to it (the score product, the expression's root or node,
  // the Softmax), ascending: each runs as its own group or node when the attention kernel cannot.
  std::vector<size_t> attention_parts(size_t i) const;
  // Node i belongs to a group placed at a later node (its root) and waits for it.
  bool deferred(size_t i) const { return root_of_.count(i) != 0; }
  // The nodes deferred to `root`, ascending (to run one by one when the root's group cannot run).
  std::vector<size_t> deferred_to(size_t root) const;
  // Every output of the node is read only by Shape or Size (which fold from the known shape): its
  // kernel need not run, only describe its outputs.
  bool read_for_shape_only(const ir::Node& node) const;
  // Where node i's reads happen: its group's root when deferred (that root's when deferred in turn),
  // else i.
  size_t placed_at(size_t i) const {
    for (auto it = root_of_.find(i); it != root_of_.end(); it = root_of_.find(i)) i = it->second;
    return i;
  }

 private:
  std::optional<size_t> only_consumer(const std::string& value) const;
  const ir::Node* constant_node(const std::string& value) const;
  bool scalar_constant(const std::string& value) const;
  std::optional<std::pair<double, bool>> scalar_of(const std::string& value, size_t max_rank) const;
  std::optional<float> scalar_value(const std::string& value, size_t max_rank) const;
  std::optional<double> scalar_number(const std::string& value, size_t max_rank) const;
  std::optional<FusedGroup> matmul_group(size_t i, const Lookup& facts, const std::string& a = "") const;
  std::optional<FusedGroup> conv_group(size_t i, const Lookup& facts) const;
  bool fold_batch_norm(FusedGroup& f, size_t conv) const;
  bool absorb_expression(FusedGroup& f, const Shape& out, const Lookup& facts) const;
  bool absorb_pool(FusedGroup& f, const Shape& out) const;
  static std::vector<int64_t> transpose_perm(const ir::Node& t, size_t rank);
  void find_elementwise_groups();
  void find_attention();
  std::vector<size_t> chain_nodes(size_t head) const;

  bool split_into_parts(FusedGroup& f, size_t split, const Shape& out, const Lookup& facts) const;
  bool absorb_activation(FusedGroup& f, size_t rank) const;
  bool absorb_post_norm(FusedGroup& f, const Shape& out, const Lookup& facts) const;
  void find_siblings();
  std::optional<FusedGroup> sibling_group(size_t i) const;
  void find_nbits_pairs();
  std::optional<FusedGroup> nbits_pair_group(size_t i, const Lookup& facts, const std::string& a = "") const;
  void find_norm_prologues();
  void describe_norm(ir::Node& fused, const ir::Node& norm) const;
  std::optional<FusedGroup> norm_group(size_t i, const Lookup& facts) const;
  void find_layer_norm_prologues();
  void find_rms_norms();
  std::optional<FusedGroup> rms_norm_group(size_t i, const Lookup& facts, size_t x_rank = 0) const;
  bool lone_elementwise(size_t n) const;
  std::optional<FusedGroup> layer_norm_group(size_t i, size_t j, const Lookup& facts) const;
  bool read(const std::string& value) const;
  const Tensor* constant_bias(size_t matmul, std::string* name = nullptr) const;

  const ir::Graph& g_;
  bool enabled_;
  int64_t opset_;
  std::map<std::string, Tensor>* derived_;
  std::unordered_map<size_t, std::vector<size_t>> siblings_;  // first sibling -> the siblings, ascending
  std::unordered_map<std::string, std::vector<size_t>> consumers_;  // every read, subgraphs included
  std::unordered_map<std::string, size_t> producer_;
  std::set<std::string> graph_outputs_;
  std::set<size_t> bias_adds_;                        // Adds kept for a MatMul group (bias, residual)
  std::set<size_t> elementwise_roots_;
  void defer(size_t member, size_t root);
  std::unordered_map<size_t, size_t> root_of_;                 // member -> root (elementwise, Transposes)
  std::unordered_map<size_t, std::vector<size_t>> deferred_;  // root -> members, ascending
  std::map<std::pair<size_t, size_t>, size_t> transposed_;  // (MatMul, operand) -> folded Transpose
  struct Attention {
    size_t scores, softmax;
    std::optional<size_t> chain;  // the elementwise group's root, or a lone elementwise node
    // The NaN guard between the Softmax and the product with V, Where(IsNaN(p), 0, p) (exported
    // scaled_dot_product_attention: a row that sees no key gives zeros): the IsNaN and the Where.
    std::optional<std::pair<size_t, size_t>> guard;
    bool guard_isnan_alone = false;  // the IsNaN is not in the Where's group: a part of its own
  };
  std::optional<std::pair<size_t, size_t>> nan_guard(size_t where, size_t product) const;
  std::unordered_map<size_t, Attention> attention_;  // the product with V -> its parts
  struct NBitsPair {
    size_t second;  // the other product (after the first)
    size_t root;    // the expression's root, or its lone node
  };
  std::unordered_map<size_t, NBitsPair> nbits_pairs_;  // the first product -> the rest of its pair
  std::unordered_map<size_t, size_t> norm_prologues_;  // a normalization -> the (first) product reading it
  struct RmsNorm {
    std::string x;                    // the rows (before the Cast to float, when there is one)
    size_t reduce;                    // the ReduceMean (its axes are checked at plan time)
    std::string eps;                  // the constant scalar added to the mean square
    std::string weight;               // the 1-D scale ("" when none)
    std::vector<std::string> scalars;  // the other constants the chain reads (2, 1, -0.5): no wider than x
  };
  std::unordered_map<size_t, RmsNorm> rms_norms_;  // the chain's last node -> the chain
};

}  // namespace onnxgpu::runtime
