#include "runtime/fusion.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "core/parallel.h"
#include "core/switches.h"
#include "ir/fused_expr.h"
#include "ops/broadcast.h"
#include "ops/reduce.h"
#include "ops/split.h"
#include "ops/window.h"
#include "webgpu/kernels/kernel.h"
#include "webgpu/kernels/matmul.h"

namespace onnxgpu::runtime {

namespace {

bool plain(const ir::Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }
bool plain(const ir::Node& n, const char* op) { return n.op_type == op && plain(n); }

// The ops the fused elementwise kernels evaluate (webgpu/kernels/fused_steps.h).
bool elementwise_op(const ir::Node& n) {
  static const std::set<std::string> ops = {
      "Add",  "Sub",  "Mul",  "Div",  "Pow",     "Exp",   "Log",  "Sqrt",     "Reciprocal", "Tanh",
      "Erf",  "Relu", "Neg",  "Abs",  "Sigmoid", "Sin",   "Cos",  "Softplus", "Softsign",   "HardSwish",
      "Floor", "Ceil", "Where", "HardSigmoid", "Clip"};
  // (Clip with both bounds as inputs: opset 11's form, which torch writes for ReLU6 / hardtanh.)
  if (n.op_type == "Clip" && n.inputs.size() != 3) return false;
  return plain(n) && ops.count(n.op_type) && n.outputs.size() == 1 && !n.outputs[0].empty() &&
         std::none_of(n.inputs.begin(), n.inputs.end(), [](const std::string& s) { return s.empty(); });
}

ir::Attribute ints_attr(std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::Ints;
  a.ints = std::move(v);
  return a;
}

// The fused expression of the elementwise nodes `order` (graph order): one step per node, a node's
// result read as that step's; `operand(value)` gives the operand of every other value read, asked
// once per value (nullopt: the nodes cannot be written so). The caller sets the expression's inputs.
using OperandFn = std::function<std::optional<ir::FusedOperand>(const std::string&)>;
std::optional<ir::FusedExpr> fused_expr(const ir::Graph& g, const std::vector<size_t>& order, const OperandFn& operand) {
  std::unordered_map<std::string, ir::FusedOperand> ref;
  ir::FusedExpr expr;
  for (size_t m = 0; m < order.size(); ++m) {
    const ir::Node& n = g.nodes[order[m]];
    ir::FusedStep step{n.op_type, {}};
    for (const auto& in : n.inputs) {
      if (!ref.count(in)) {
        auto o = operand(in);
        if (!o) return std::nullopt;
        ref[in] = *o;
      }
      step.args.push_back(ref[in]);
    }
    if (n.op_type == "HardSigmoid") {  // its attributes become constant operands: HardSigmoid(x, alpha, beta)
      step.args.push_back(ir::FusedOperand::constant(n.attr_float("alpha", 0.2f)));
      step.args.push_back(ir::FusedOperand::constant(n.attr_float("beta", 0.5f)));
    }
    ref[n.outputs[0]] = ir::FusedOperand::step(m);
    expr.steps.push_back(std::move(step));
  }
  return expr;
}

// `expr` on the fused node, its inputs being the node's inputs from `first_input` on.
void set_expr(ir::Node& node, ir::FusedExpr expr, size_t first_input) {
  expr.first_input = first_input;
  expr.num_inputs = node.inputs.size() - first_input;
  node.fused = std::make_shared<const ir::FusedExpr>(std::move(expr));
}

// A float32 as text that tells every value apart (a key of constants made once per session).
std::string f32_key(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return std::to_string(bits);
}

constexpr size_t kMaxMembers = 24;   // nodes of one elementwise group
constexpr size_t kMaxExternal = 5;   // distinct tensors it reads (storage bindings per dispatch)

}  // namespace

Fusion::Fusion(const ir::Graph& graph, bool enabled, int64_t onnx_opset, std::map<std::string, Tensor>* derived)
    : g_(graph), enabled_(enabled), opset_(onnx_opset), derived_(derived) {
  for (const auto& o : graph.outputs) graph_outputs_.insert(o.name);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& n = graph.nodes[i];
    std::vector<std::string> reads = n.inputs;  // a value read inside a Loop body counts as read by the Loop
    for (auto& r : n.implicit_inputs()) reads.push_back(std::move(r));
    for (const auto& r : reads)
      if (!r.empty()) consumers_[r].push_back(i);
    for (const auto& o : n.outputs)
      if (!o.empty()) producer_[o] = i;
  }
  if (!enabled) return;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& n = graph.nodes[i];
    if (!plain(n, "MatMul") || n.outputs.size() != 1) continue;
    auto j = only_consumer(n.outputs[0]);
    if (!j || !plain(graph.nodes[*j], "Add")) continue;
    bias_adds_.insert(*j);  // and the residual Add that may follow: kept out of elementwise groups
    if (auto k = only_consumer(graph.nodes[*j].outputs.empty() ? "" : graph.nodes[*j].outputs[0]))
      if (plain(graph.nodes[*k], "Add")) bias_adds_.insert(*k);
  }
  // A Transpose that only a MatMul reads becomes that product's strided operand: deferred to it.
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& n = graph.nodes[i];
    if (!plain(n, "MatMul") || n.inputs.size() != 2) continue;
    for (size_t q = 0; q < 2; ++q) {
      auto p = producer_.find(n.inputs[q]);
      if (p == producer_.end() || !plain(graph.nodes[p->second], "Transpose") || root_of_.count(p->second)) continue;
      auto only = only_consumer(n.inputs[q]);
      if (!only || *only != i || graph.nodes[p->second].inputs.empty()) continue;
      transposed_[{i, q}] = p->second;
      defer(p->second, i);
    }
  }
  find_rms_norms();
  find_elementwise_groups();
  find_attention();
  if (derived_) find_siblings();
  find_nbits_pairs();
  find_norm_prologues();
}

// An elementwise node that may join another group alone (not a bias Add kept for its product, nor
// the last node of an RMS norm, whose group is its own).
bool Fusion::lone_elementwise(size_t n) const {
  return elementwise_op(g_.nodes[n]) && !bias_adds_.count(n) && !rms_norms_.count(n);
}

// The elementwise nodes of a chain whose last node is `head`: its group's members and root, or the
// lone node. Graph order.
std::vector<size_t> Fusion::chain_nodes(size_t head) const {
  std::vector<size_t> nodes;
  if (elementwise_roots_.count(head)) nodes = deferred_to(head);
  nodes.push_back(head);
  return nodes;
}

// Softmax(e(MatMul(Q, K))) read only by MatMul(., V), e an elementwise group or node (or nothing)
// that alone reads the score product; or read by MatMul(., V) through the NaN guard
// Where(IsNaN(p), 0, p) that torch's exported scaled_dot_product_attention puts there (nan_guard).
// ($ONNXGPU_ATTENTION=0: none, for measuring what it buys.)
void Fusion::find_attention() {
  if (!switched_on("ONNXGPU_ATTENTION")) return;
  auto product = [&](size_t n) {
    const ir::Node& m = g_.nodes[n];
    return plain(m, "MatMul") && m.inputs.size() == 2 && m.outputs.size() == 1 && !m.outputs[0].empty() &&
           !root_of_.count(n);
  };
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    if (!product(i)) continue;
    auto sp = producer_.find(g_.nodes[i].inputs[0]);
    if (sp == producer_.end() || root_of_.count(sp->second)) continue;
    std::optional<std::pair<size_t, size_t>> guard = nan_guard(sp->second, i);
    const size_t s = guard ? producer_.at(g_.nodes[guard->first].inputs[0]) : sp->second;  // the Softmax, if any
    const ir::Node& sm = g_.nodes[s];
    if (!plain(sm, "Softmax") || sm.inputs.size() != 1 || sm.outputs.size() != 1 || root_of_.count(s) ||
        (!guard && only_consumer(sm.outputs[0]) != i))
      continue;
    auto ep = producer_.find(sm.inputs[0]);
    if (ep == producer_.end() || only_consumer(sm.inputs[0]) != s) continue;
    Attention a{0, s, std::nullopt, guard, guard && !root_of_.count(guard->first)};
    size_t e = ep->second;
    if (product(e)) {
      a.scores = e;
    } else {
      // An elementwise group's root, or a lone elementwise node.
      if (root_of_.count(e) || rms_norms_.count(e) || !(elementwise_roots_.count(e) || elementwise_op(g_.nodes[e])))
        continue;
      // The score product: the one MatMul the chain reads whose value only the chain reads.
      std::vector<size_t> chain = chain_nodes(e);
      std::set<size_t> in_chain(chain.begin(), chain.end());
      std::set<size_t> products;
      for (size_t c : chain)
        for (const auto& in : g_.nodes[c].inputs) {
          auto p = producer_.find(in);
          if (p == producer_.end() || in_chain.count(p->second) || !product(p->second) || graph_outputs_.count(in)) continue;
          const auto& readers = consumers_.at(in);
          if (std::all_of(readers.begin(), readers.end(), [&](size_t r) { return in_chain.count(r) != 0; }))
            products.insert(p->second);
        }
      if (products.size() != 1) continue;
      a.scores = *products.begin();
      a.chain = e;
    }
    if (a.scores == i || attention_.count(a.scores)) continue;
    attention_[i] = a;
    for (size_t m : attention_parts(i)) root_of_[m] = i;  // deferred, but run as their own groups
  }
}

// Where(IsNaN(p), 0, p) read only by `product` (its A), p a Softmax's output that only the IsNaN and the
// Where read, 0 a float scalar (of rank 0 or 1: it widens no score): the IsNaN and the Where. The IsNaN alone
// or in the Where's group.
std::optional<std::pair<size_t, size_t>> Fusion::nan_guard(size_t where, size_t product) const {
  const ir::Node& w = g_.nodes[where];
  if (!plain(w, "Where") || w.inputs.size() != 3 || w.outputs.size() != 1 || only_consumer(w.outputs[0]) != product)
    return std::nullopt;
  auto c = producer_.find(w.inputs[0]);
  if (c == producer_.end() || !plain(g_.nodes[c->second], "IsNaN") || only_consumer(w.inputs[0]) != where) return std::nullopt;
  auto r = root_of_.find(c->second);
  if (r != root_of_.end() && r->second != where) return std::nullopt;
  const std::string& p = g_.nodes[c->second].inputs.empty() ? std::string() : g_.nodes[c->second].inputs[0];
  auto sm = producer_.find(p);
  if (p.empty() || w.inputs[2] != p || sm == producer_.end() || !plain(g_.nodes[sm->second], "Softmax") || graph_outputs_.count(p))
    return std::nullopt;
  const std::vector<size_t>& readers = consumers_.at(p);
  if (readers.size() != 2 || !std::all_of(readers.begin(), readers.end(), [&](size_t x) { return x == where || x == c->second; }))
    return std::nullopt;
  if (scalar_value(w.inputs[1], 1) != 0.0f) return std::nullopt;
  return std::pair{c->second, where};
}

std::vector<size_t> Fusion::attention_parts(size_t i) const {
  auto it = attention_.find(i);
  if (it == attention_.end()) return {};
  std::vector<size_t> parts{it->second.scores, it->second.softmax};
  if (it->second.chain) parts.push_back(*it->second.chain);
  if (const auto& g = it->second.guard) {  // the Where, and the IsNaN unless it is in the Where's group
    parts.push_back(g->second);
    if (it->second.guard_isnan_alone) parts.push_back(g->first);
  }
  std::sort(parts.begin(), parts.end());
  return parts;
}

std::optional<FusedGroup> Fusion::attention_group(size_t i, const Lookup& facts) const {
  auto it = attention_.find(i);
  if (!enabled_ || it == attention_.end()) return std::nullopt;
  const Attention& a = it->second;
  const ir::Node& pv = g_.nodes[i];
  const ir::Node& qk = g_.nodes[a.scores];
  FusedGroup f;
  f.node.op_type = "Attention";
  f.node.domain = webgpu::kFusedDomain;
  f.node.outputs = pv.outputs;
  // Q, K and V as the products read them: a folded Transpose's input, and its perm.
  size_t rank = 0;
  auto operand = [&](size_t mm, size_t q, const char* perm_attr) -> bool {
    auto t = transposed_.find({mm, q});
    const std::string& name = t == transposed_.end() ? g_.nodes[mm].inputs[q] : g_.nodes[t->second].inputs[0];
    const ValueFacts* v = facts(name, Read::Kind);  // known, and its rank: all the group needs
    if (!v) return false;
    f.node.inputs.push_back(name);
    rank = std::max(rank, v->shape.size());
    if (t == transposed_.end()) return true;
    std::vector<int64_t> perm = transpose_perm(g_.nodes[t->second], v->shape.size());
    if (perm.empty()) return false;
    f.node.attrs[perm_attr] = ints_attr(perm);
    f.members.push_back(t->second);
    return true;
  };
  if (!operand(a.scores, 0, "perm_q") || !operand(a.scores, 1, "perm_k") || !operand(i, 1, "perm_v")) return std::nullopt;
  f.members.push_back(a.scores);
  // The expression between the scores and the Softmax: the score is its product, the other values
  // it reads are its inputs, the node's inputs after Q, K and V.
  if (a.chain) {
    std::vector<size_t> chain = chain_nodes(*a.chain);
    const size_t first = f.node.inputs.size();
    auto expr = fused_expr(g_, chain, [&](const std::string& in) -> std::optional<ir::FusedOperand> {
      if (in == qk.outputs[0]) return ir::FusedOperand::product();
      if (!facts(in, Read::Kind)) return std::nullopt;
      f.node.inputs.push_back(in);
      return ir::FusedOperand::input(f.node.inputs.size() - 1 - first);
    });
    if (!expr) return std::nullopt;
    set_expr(f.node, std::move(*expr), first);
    f.members.insert(f.members.end(), chain.begin(), chain.end());
  }
  const ir::Node& sm = g_.nodes[a.softmax];
  ir::Attribute axis;
  axis.kind = ir::Attribute::Kind::Int;
  axis.i = sm.attr_int("axis", opset_ < 13 ? 1 : -1);
  f.node.attrs["axis"] = axis;
  f.members.push_back(a.softmax);
  if (a.guard) {  // rows whose softmax is NaN give zeros
    ir::Attribute on;
    on.kind = ir::Attribute::Kind::Int;
    on.i = 1;
    f.node.attrs["nan_rows_zero"] = on;
    f.members.push_back(a.guard->first);
    for (size_t m : chain_nodes(a.guard->second)) f.members.push_back(m);
  }
  // The heads put back in place by a Transpose of the result: written where it puts them.
  if (auto j = only_consumer(pv.outputs[0]); j && plain(g_.nodes[*j], "Transpose") && !root_of_.count(*j) &&
                                                 g_.nodes[*j].outputs.size() == 1 && !g_.nodes[*j].outputs[0].empty()) {
    std::vector<int64_t> perm = transpose_perm(g_.nodes[*j], rank);
    if (!perm.empty()) {
      f.node.attrs["perm_y"] = ints_attr(perm);
      f.node.outputs = g_.nodes[*j].outputs;
      f.members.push_back(*j);
    }
  }
  for (size_t t : deferred_to(i)) f.members.push_back(t);  // V's folded Transpose
  std::sort(f.members.begin(), f.members.end());
  f.members.erase(std::unique(f.members.begin(), f.members.end()), f.members.end());
  f.node.name = pv.name + " (attention, +" + std::to_string(f.members.size()) + " fused)";
  return f;
}

// The constant bias of the MatMul's only reader, an Add of an initializer of one row ([N], [1, N], ...).
const Tensor* Fusion::constant_bias(size_t matmul, std::string* name) const {
  const ir::Node& mm = g_.nodes[matmul];
  auto j = only_consumer(mm.outputs[0]);
  if (!j || !plain(g_.nodes[*j], "Add") || g_.nodes[*j].inputs.size() != 2 || g_.nodes[*j].outputs.size() != 1 ||
      g_.nodes[*j].outputs[0].empty())
    return nullptr;
  const ir::Node& add = g_.nodes[*j];
  const std::string& c = add.inputs[0] == mm.outputs[0] ? add.inputs[1] : add.inputs[0];
  auto w = g_.initializers.find(c);
  if (w == g_.initializers.end() || w->second.rank() < 1) return nullptr;
  const Tensor& b = w->second;
  if (b.numel() != b.shape().back()) return nullptr;
  if (name) *name = c;
  return &b;
}

// Sibling products: MatMuls reading one A, each B a 2-D initializer of the same dtype and K, either
// all with a bias Add (of their N) or none.
void Fusion::find_siblings() {
  std::map<std::string, std::vector<size_t>> by_a;
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const ir::Node& n = g_.nodes[i];
    if (!plain(n, "MatMul") || n.inputs.size() != 2 || n.outputs.size() != 1 || n.outputs[0].empty() ||
        graph_outputs_.count(n.outputs[0]) || root_of_.count(i))
      continue;
    auto w = g_.initializers.find(n.inputs[1]);
    if (w == g_.initializers.end() || w->second.rank() != 2 || !dtype_is_float(w->second.dtype())) continue;
    if (g_.initializers.count(n.inputs[0])) continue;
    by_a[n.inputs[0]].push_back(i);
  }
  constexpr size_t kMaxSiblings = 4;
  for (auto& [a, mms] : by_a) {
    if (mms.size() < 2) continue;
    const Tensor& w0 = g_.initializers.at(g_.nodes[mms[0]].inputs[1]);
    const Tensor* b0 = constant_bias(mms[0]);
    std::vector<size_t> group;
    for (size_t m : mms) {
      const Tensor& w = g_.initializers.at(g_.nodes[m].inputs[1]);
      const Tensor* b = constant_bias(m);
      // (A 1-D bias: one of higher rank could widen the Add's output beyond the product's rank.)
      if (w.dtype() != w0.dtype() || w.dim(0) != w0.dim(0) || (b == nullptr) != (b0 == nullptr) ||
          (b && (b->dtype() != w.dtype() || b->numel() != w.dim(1) || b->rank() != 1)))
        continue;
      if (group.size() < kMaxSiblings) group.push_back(m);
    }
    if (group.size() >= 2 && group[0] == mms[0]) siblings_[group[0]] = group;
  }
}

std::optional<FusedGroup> Fusion::sibling_group(size_t i) const {
  auto it = siblings_.find(i);
  if (it == siblings_.end()) return std::nullopt;
  const std::vector<size_t>& mms = it->second;
  FusedGroup f;
  std::vector<const Tensor*> ws, bs;
  std::string wname = "onnxgpu.siblings(", bname = "onnxgpu.sibling_biases(";
  ir::Attribute parts;
  parts.kind = ir::Attribute::Kind::Ints;
  for (size_t k = 0; k < mms.size(); ++k) {
    const ir::Node& mm = g_.nodes[mms[k]];
    std::string bias;
    const Tensor* b = constant_bias(mms[k], &bias);
    ws.push_back(&g_.initializers.at(mm.inputs[1]));
    if (b) bs.push_back(b);
    wname += (k ? "," : "") + mm.inputs[1];
    bname += (k ? "," : "") + bias;
    parts.ints.push_back(ws.back()->dim(1));
    f.node.name += (k ? "+" : "") + mm.name;
    if (b) {
      size_t add = *only_consumer(mm.outputs[0]);
      f.node.name += "+" + g_.nodes[add].name;
      f.node.outputs.push_back(g_.nodes[add].outputs[0]);
      f.members.push_back(add);
    } else {
      f.node.outputs.push_back(mm.outputs[0]);
    }
    if (k) f.members.push_back(mms[k]);
  }
  wname += ")";
  bname += ")";
  // The Bs side by side ([K, sum N]) and the biases one after another, made once per session.
  int64_t K = ws[0]->dim(0), N = 0;
  for (const Tensor* w : ws) N += w->dim(1);
  if (!derived_->count(wname)) {
    // (Rows in parts over a few threads: a 0.85B Llama puts 1.9 GB side by side.)
    Tensor cat = Tensor::uninitialized(ws[0]->dtype(), {K, N});  // (every byte written below)
    const size_t es = dtype_size(cat.dtype()), parts = copy_parts(cat.nbytes());
    const size_t rows = (size_t(K) + parts - 1) / parts;
    auto* out = static_cast<std::byte*>(cat.raw());
    run_parts(parts, [&](size_t p) {
      std::byte* dst = out + p * rows * size_t(N) * es;
      for (size_t r = p * rows; r < std::min(size_t(K), (p + 1) * rows); ++r) {
        for (const Tensor* w : ws) {
          const size_t row = size_t(w->dim(1)) * es;
          std::memcpy(dst, static_cast<const std::byte*>(w->raw()) + r * row, row);
          dst += row;
        }
      }
    });
    (*derived_)[wname] = std::move(cat);
    if (!bs.empty()) {
      Tensor bcat = Tensor::uninitialized(bs[0]->dtype(), {N});
      auto* bd = static_cast<std::byte*>(bcat.raw());
      for (const Tensor* b : bs) {
        std::memcpy(bd, b->raw(), b->nbytes());
        bd += b->nbytes();
      }
      (*derived_)[bname] = std::move(bcat);
    }
  }
  f.node.op_type = "MatMul";
  f.node.domain = webgpu::kFusedDomain;
  f.node.inputs = {g_.nodes[mms[0]].inputs[0], wname};
  if (!bs.empty()) f.node.inputs.push_back(bname);
  f.node.attrs["split"] = parts;
  std::sort(f.members.begin(), f.members.end());
  return f;
}

// Pairs of MatMulNBits combined by one elementwise expression (see fusion.h): for each expression (an
// elementwise group's root or a lone elementwise node, deferred to no other group), the values it reads
// from outside are constant scalars and the products of exactly two MatMulNBits that only it reads, over
// one A with the same sizes. ($ONNXGPU_NBITS_PAIRS=0: none, for measuring what they buy.)
void Fusion::find_nbits_pairs() {
  if (!switched_on("ONNXGPU_NBITS_PAIRS")) return;
  auto nbits = [&](size_t n) {
    const ir::Node& m = g_.nodes[n];
    return m.op_type == "MatMulNBits" && m.domain == ir::kMsDomain && m.inputs.size() >= 3 && m.inputs.size() <= 6 &&
           !m.inputs[0].empty() &&
           (m.inputs.size() < 5 || m.inputs[4].empty()) && m.outputs.size() == 1 && !m.outputs[0].empty() &&
           !graph_outputs_.count(m.outputs[0]) && !root_of_.count(n);
  };
  auto same_sizes = [&](const ir::Node& a, const ir::Node& b) {
    for (const char* attr : {"K", "N", "bits", "block_size", "weight_prepacked"})
      if (a.has_attr(attr) != b.has_attr(attr) || a.attr_int(attr, 0) != b.attr_int(attr, 0)) return false;
    return a.inputs[0] == b.inputs[0];
  };
  for (size_t r = 0; r < g_.nodes.size(); ++r) {
    const bool lone = lone_elementwise(r);
    if (root_of_.count(r) || !(elementwise_roots_.count(r) || lone)) continue;
    std::vector<size_t> chain = chain_nodes(r);
    std::set<size_t> in_chain(chain.begin(), chain.end());
    std::set<size_t> products;
    bool ok = true;
    for (size_t c : chain) {
      if (g_.nodes[c].op_type == "Where") ok = false;  // its condition would be a tensor the pair reads
      for (const auto& in : g_.nodes[c].inputs) {
        auto p = producer_.find(in);
        if ((p != producer_.end() && in_chain.count(p->second)) || scalar_constant(in)) continue;
        if (p == producer_.end() || !nbits(p->second)) {
          ok = false;
          continue;
        }
        const auto& readers = consumers_.at(in);
        if (!std::all_of(readers.begin(), readers.end(), [&](size_t x) { return in_chain.count(x) != 0; })) ok = false;
        products.insert(p->second);
      }
    }
    if (!ok || products.size() != 2) continue;
    const size_t first = *products.begin(), second = *products.rbegin();
    if (!same_sizes(g_.nodes[first], g_.nodes[second])) continue;
    nbits_pairs_[first] = NBitsPair{second, r};
  }
}

// The pair whose first product is node i: one fused MatMulNBits node with the first product's
// attributes, inputs A, then each product's B, scales, zero points and bias ("" when absent), and the
// expression over the products (0: the first's, 1: the second's) and constants. `a`: another value
// of A's shape to read as A ("": A itself; a normalization prologue's input, norm_group).
std::optional<FusedGroup> Fusion::nbits_pair_group(size_t i, const Lookup& facts, const std::string& a) const {
  auto it = nbits_pairs_.find(i);
  if (it == nbits_pairs_.end()) return std::nullopt;
  const ir::Node& first = g_.nodes[i];
  const ir::Node& second = g_.nodes[it->second.second];
  FusedGroup f;
  f.node.op_type = "MatMulNBits";
  f.node.domain = webgpu::kFusedDomain;
  f.node.attrs = first.attrs;
  f.node.inputs = {a.empty() ? first.inputs[0] : a};
  for (const ir::Node* mm : {&first, &second})
    for (size_t q : {1, 2, 3, 5}) f.node.inputs.push_back(q < mm->inputs.size() ? mm->inputs[q] : "");
  for (const auto& in : f.node.inputs)
    if (!in.empty() && !facts(in, Read::Kind)) return std::nullopt;  // (the second's operands: known by now)
  const size_t rank = facts(f.node.inputs[0], Read::Kind)->shape.size();  // the products' rank
  std::vector<size_t> chain = chain_nodes(it->second.root);
  auto expr = fused_expr(g_, chain, [&](const std::string& in) -> std::optional<ir::FusedOperand> {
    if (in == first.outputs[0]) return ir::FusedOperand::product(0);
    if (in == second.outputs[0]) return ir::FusedOperand::product(1);
    auto v = scalar_value(in, rank);
    if (!v) return std::nullopt;  // a non-float scalar, or one that would widen the result
    return ir::FusedOperand::constant(*v);
  });
  if (!expr) return std::nullopt;
  set_expr(f.node, std::move(*expr), f.node.inputs.size());
  const ir::Node& root = g_.nodes[it->second.root];
  f.node.outputs = {root.outputs[0]};
  f.node.name = first.name + "+" + second.name + "+" + root.name + " (+" + std::to_string(chain.size() - 1) + ")";
  f.members = chain;
  f.members.push_back(it->second.second);
  std::sort(f.members.begin(), f.members.end());
  return f;
}

// A value some node or the graph's outputs read.
bool Fusion::read(const std::string& value) const {
  if (value.empty()) return false;
  auto it = consumers_.find(value);
  return graph_outputs_.count(value) || (it != consumers_.end() && !it->second.empty());
}

// Row normalizations computed in the prologue of the MatMulNBits that read them (see fusion.h): for
// each SimplifiedLayerNormalization, RMSNormalization or SkipSimplifiedLayerNormalization whose output
// 0 only one MatMulNBits, or the two of one NBits pair, read (as their A, and nothing else of theirs),
// and whose statistics outputs nothing reads. ($ONNXGPU_NORM_PROLOGUE=0: none, for measuring what it
// buys.)
void Fusion::find_norm_prologues() {
  if (!switched_on("ONNXGPU_NORM_PROLOGUE")) return;
  auto product = [&](size_t n, const std::string& a) {
    const ir::Node& m = g_.nodes[n];
    if (m.op_type != "MatMulNBits" || m.domain != ir::kMsDomain || m.inputs.size() < 3 || m.inputs.size() > 6 ||
        m.inputs[0] != a || (m.inputs.size() >= 5 && !m.inputs[4].empty()) || m.outputs.size() != 1 ||
        m.outputs[0].empty() || root_of_.count(n))
      return false;
    return std::count(m.inputs.begin(), m.inputs.end(), a) == 1;  // A alone
  };
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const ir::Node& nm = g_.nodes[i];
    const bool skip = nm.op_type == "SkipSimplifiedLayerNormalization" && nm.domain == ir::kMsDomain;
    if (!(skip || plain(nm, "SimplifiedLayerNormalization") || plain(nm, "RMSNormalization")) || root_of_.count(i) ||
        nm.inputs.size() < (skip ? 3u : 2u) || nm.outputs.empty() || nm.outputs[0].empty() ||
        graph_outputs_.count(nm.outputs[0]))
      continue;
    bool stats_read = false;  // mean, inv_std_var: the kernel never computes them as outputs
    for (size_t k = 1; k < nm.outputs.size(); ++k)
      if (!(skip && k == 3) && read(nm.outputs[k])) stats_read = true;
    auto readers = consumers_.find(nm.outputs[0]);
    if (stats_read || readers == consumers_.end() || readers->second.empty() || readers->second.size() > 2) continue;
    std::vector<size_t> ps = readers->second;
    std::sort(ps.begin(), ps.end());
    if (!std::all_of(ps.begin(), ps.end(), [&](size_t p) { return product(p, nm.outputs[0]); })) continue;
    if (ps.size() == 2) {  // (one reader is never a pair's: both of a pair read A)
      auto pair = nbits_pairs_.find(ps[0]);
      if (pair == nbits_pairs_.end() || pair->second.second != ps[1]) continue;
    }
    norm_prologues_[i] = ps[0];
  }
  find_layer_norm_prologues();
}

// LayerNormalization (over the last axis: checked when the group is made) whose output Y only one
// MatMul reads, as its A (and nothing else of it), or only the MatMuls of one sibling group, besides
// Shape or Size nodes (attention's view sizes in an exported GPT-2), and whose
// Mean and InvStdDev nothing reads: computed in the prologue of the product's one-row kernel
// (webgpu/kernels/gemv.cpp).
void Fusion::find_layer_norm_prologues() {
  auto product = [&](size_t n, const std::string& y) {
    const ir::Node& m = g_.nodes[n];
    return plain(m, "MatMul") && m.inputs.size() == 2 && m.inputs[0] == y && m.inputs[1] != y && m.outputs.size() == 1 &&
           !m.outputs[0].empty() && !root_of_.count(n);
  };
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const ir::Node& nm = g_.nodes[i];
    if (!plain(nm, "LayerNormalization") || root_of_.count(i) || nm.inputs.size() < 2 || nm.inputs[0].empty() ||
        nm.inputs[1].empty() || nm.outputs.empty() || nm.outputs[0].empty() || graph_outputs_.count(nm.outputs[0]))
      continue;
    if ((nm.outputs.size() > 1 && read(nm.outputs[1])) || (nm.outputs.size() > 2 && read(nm.outputs[2]))) continue;
    auto readers = consumers_.find(nm.outputs[0]);
    if (readers == consumers_.end() || readers->second.empty()) continue;
    std::vector<size_t> ps;  // the products (Shape and Size read only Y's shape, which the group describes)
    for (size_t r : readers->second)
      if (!(plain(g_.nodes[r], "Shape") || plain(g_.nodes[r], "Size"))) ps.push_back(r);
    std::sort(ps.begin(), ps.end());
    if (ps.empty() || !std::all_of(ps.begin(), ps.end(), [&](size_t p) { return product(p, nm.outputs[0]); })) continue;
    if (ps.size() > 1) {  // the siblings, all of them
      auto sib = siblings_.find(ps[0]);
      if (sib == siblings_.end() || sib->second != ps) continue;
    }
    norm_prologues_[i] = ps[0];
  }
}

// What the fused node of a normalization prologue says of the normalization: "norm" (its op),
// "norm_opset" (the model's ONNX opset, which its rules read) and its attributes as "norm.<name>".
void Fusion::describe_norm(ir::Node& fused, const ir::Node& nm) const {
  ir::Attribute op;
  op.kind = ir::Attribute::Kind::String;
  op.s = nm.op_type;
  fused.attrs["norm"] = op;
  ir::Attribute opset;
  opset.kind = ir::Attribute::Kind::Int;
  opset.i = opset_;
  fused.attrs["norm_opset"] = opset;
  for (const auto& [name, a] : nm.attrs) fused.attrs["norm." + name] = a;
}

// The LayerNormalization at node i with the product(s) reading it (j: the product, or the first
// sibling): the fused MatMul of the product's own group (matmul_group's, or sibling_group's) with A
// replaced by the normalization's input, its inputs padded to four (A, B, bias, residual; "" when
// absent), then the normalization's scale and B ("" when none), the epilogue's expression after them.
// Attributes as norm_group's: "norm", "norm_opset", "norm.<name>"; "norm_shape_of_y" when Shape or
// Size read Y too: Y is then the last output, of X's shape, its values never computed.
std::optional<FusedGroup> Fusion::layer_norm_group(size_t i, size_t j, const Lookup& facts) const {
  const ir::Node& nm = g_.nodes[i];
  const ValueFacts* x = facts(nm.inputs[0], Read::Kind);
  if (!x || x->dtype != DType::Float32 || x->shape.empty()) return std::nullopt;
  const int64_t rank = int64_t(x->shape.size()), axis = nm.attr_int("axis", -1);
  if (axis != -1 && axis != rank - 1) return std::nullopt;
  FusedGroup f;
  if (siblings_.count(j)) {
    auto s = sibling_group(j);
    if (!s) return std::nullopt;
    f = std::move(*s);
    f.node.inputs[0] = nm.inputs[0];
  } else {
    auto m = matmul_group(j, facts, nm.inputs[0]);
    if (!m) return std::nullopt;
    f = std::move(*m);
  }
  f.members.push_back(j);
  f.node.inputs.resize(std::max<size_t>(f.node.inputs.size(), 4));
  f.node.inputs.push_back(nm.inputs[1]);
  f.node.inputs.push_back(nm.inputs.size() > 2 ? nm.inputs[2] : "");
  for (const auto& in : f.node.inputs)  // (a residual computed after the normalization: not yet)
    if (!in.empty() && !(derived_ && derived_->count(in)) && !facts(in, Read::Kind)) return std::nullopt;
  if (f.node.fused) {  // the epilogue's expression reads no input: it starts after the normalization's
    ir::FusedExpr expr = *f.node.fused;
    set_expr(f.node, std::move(expr), f.node.inputs.size());
  }
  describe_norm(f.node, nm);
  // Y read by Shape or Size too: its last output, described as X's shape (a view of X), never computed.
  if (std::any_of(consumers_.at(nm.outputs[0]).begin(), consumers_.at(nm.outputs[0]).end(), [&](size_t r) {
        return plain(g_.nodes[r], "Shape") || plain(g_.nodes[r], "Size");
      })) {
    f.node.outputs.push_back(nm.outputs[0]);
    ir::Attribute y;
    y.kind = ir::Attribute::Kind::Int;
    y.i = 1;
    f.node.attrs["norm_shape_of_y"] = y;
  }
  f.node.name = nm.name + "+" + f.node.name;
  std::sort(f.members.begin(), f.members.end());
  return f;
}

// The normalization at node i with the product(s) reading it: the fused MatMulNBits node of the
// product (its attributes, inputs A, B, scales, zero points and bias; outputs its own) or of the pair
// (nbits_pair_group's), with A replaced by the normalization's input, then three inputs: the skip (""
// for the forms without), the scale and the Skip form's bias ("" when none); the pair's expression
// after them. Output 1: the Skip form's residual sum (input + skip + bias) when something reads it.
// Attributes: "norm" (the normalization's op), "norm_opset" (the model's ONNX opset, which the
// normalization's rules read) and the normalization's own attributes as "norm.<name>".
std::optional<FusedGroup> Fusion::norm_group(size_t i, const Lookup& facts) const {
  auto it = norm_prologues_.find(i);
  if (it == norm_prologues_.end()) return std::nullopt;
  const ir::Node& nm = g_.nodes[i];
  if (plain(nm, "LayerNormalization")) return layer_norm_group(i, it->second, facts);
  const ir::Node& mm = g_.nodes[it->second];
  const bool skip = nm.op_type == "SkipSimplifiedLayerNormalization";
  // Float32 rows (the prologue stages float32) normalized along their last axis.
  const ValueFacts* x = facts(nm.inputs[0], Read::Kind);
  if (!x || x->dtype != DType::Float32 || x->shape.empty()) return std::nullopt;
  if (!skip) {
    const int64_t rank = int64_t(x->shape.size()), axis = nm.attr_int("axis", -1);
    if (axis != -1 && axis != rank - 1) return std::nullopt;
  }
  FusedGroup f;
  if (nbits_pairs_.count(it->second)) {
    auto pair = nbits_pair_group(it->second, facts, nm.inputs[0]);
    if (!pair) return std::nullopt;
    f = std::move(*pair);
  } else {
    f.node.op_type = "MatMulNBits";
    f.node.domain = webgpu::kFusedDomain;
    f.node.attrs = mm.attrs;
    f.node.inputs = {mm.inputs[0]};
    for (size_t q : {1, 2, 3, 5}) f.node.inputs.push_back(q < mm.inputs.size() ? mm.inputs[q] : "");
    f.node.outputs = mm.outputs;
    f.node.name = mm.name;
  }
  f.node.inputs[0] = nm.inputs[0];  // A: the rows before they are normalized
  f.node.inputs.push_back(skip ? nm.inputs[1] : "");
  f.node.inputs.push_back(nm.inputs[skip ? 2 : 1]);
  f.node.inputs.push_back(skip && nm.inputs.size() > 3 ? nm.inputs[3] : "");
  for (const auto& in : f.node.inputs)
    if (!in.empty() && !facts(in, Read::Kind)) return std::nullopt;  // (the products' operands: known by now)
  if (f.node.fused) {  // the pair's expression reads no input: it starts after the normalization's
    ir::FusedExpr expr = *f.node.fused;
    set_expr(f.node, std::move(expr), f.node.inputs.size());
  }
  if (skip && nm.outputs.size() > 3 && read(nm.outputs[3])) f.node.outputs.push_back(nm.outputs[3]);
  describe_norm(f.node, nm);
  f.node.name = nm.name + "+" + f.node.name;
  f.members.push_back(it->second);
  std::sort(f.members.begin(), f.members.end());
  return f;
}

// The permutation of a Transpose node for an input of rank r (reversed when absent); empty when invalid.
std::vector<int64_t> Fusion::transpose_perm(const ir::Node& t, size_t r) {
  std::vector<int64_t> perm = t.attr_ints("perm");
  if (perm.empty())
    for (size_t d = r; d-- > 0;) perm.push_back(int64_t(d));
  if (perm.size() != r || r < 2) return {};
  std::vector<bool> seen(r, false);
  for (int64_t d : perm) {
    if (d < 0 || size_t(d) >= r || seen[size_t(d)]) return {};
    seen[size_t(d)] = true;
  }
  return perm;
}

bool Fusion::read_for_shape_only(const ir::Node& node) const {
  bool any = false;
  for (const auto& o : node.outputs) {
    if (o.empty()) continue;
    if (graph_outputs_.count(o)) return false;
    auto it = consumers_.find(o);
    if (it == consumers_.end()) continue;
    for (size_t c : it->second) {
      const ir::Node& n = g_.nodes[c];
      if (!(plain(n, "Shape") || plain(n, "Size"))) return false;
      any = true;
    }
  }
  return any;
}

// The Constant node that produces `value`, if one does (wherever it stands in the graph).
const ir::Node* Fusion::constant_node(const std::string& value) const {
  auto p = producer_.find(value);
  return p != producer_.end() && plain(g_.nodes[p->second], "Constant") ? &g_.nodes[p->second] : nullptr;
}

// A one-element initializer or Constant: the fused kernel writes it into its WGSL, binding nothing.
bool Fusion::scalar_constant(const std::string& value) const {
  auto w = g_.initializers.find(value);
  if (w != g_.initializers.end()) return shape_numel(w->second.shape()) == 1;
  const ir::Node* c = constant_node(value);
  if (!c) return false;
  if (const Tensor* t = c->attr_tensor("value")) return shape_numel(t->shape()) == 1;
  return c->has_attr("value_float") || c->has_attr("value_int");
}

// The value of a one-element initializer or Constant node of rank <= `max_rank` (a higher rank would
// widen what it is combined with), and whether it counts as a float (a float tensor, or a
// value_float / value_int attribute).
std::optional<std::pair<double, bool>> Fusion::scalar_of(const std::string& value, size_t max_rank) const {
  if (!scalar_constant(value)) return std::nullopt;
  const Tensor* t = nullptr;
  if (auto w = g_.initializers.find(value); w != g_.initializers.end()) {
    t = &w->second;
  } else {
    const ir::Node* c = constant_node(value);
    t = c->attr_tensor("value");
    if (!t && c->has_attr("value_float")) return std::pair{double(c->attr_float("value_float", 0.0f)), true};
    if (!t && c->has_attr("value_int")) return std::pair{double(c->attr_int("value_int", 0)), true};
  }
  if (!t || size_t(t->rank()) > max_rank) return std::nullopt;
  if (dtype_is_float(t->dtype())) return std::pair{t->double_at(0), true};
  if (dtype_is_integer(t->dtype())) return std::pair{t->double_at(0), false};
  return std::nullopt;
}

// A float scalar (scalar_of), as float32.
std::optional<float> Fusion::scalar_value(const std::string& value, size_t max_rank) const {
  auto s = scalar_of(value, max_rank);
  if (!s || !s->second) return std::nullopt;
  return float(s->first);
}

// Any numeric scalar (a Pow's integer exponent too), as double.
std::optional<double> Fusion::scalar_number(const std::string& value, size_t max_rank) const {
  auto s = scalar_of(value, max_rank);
  return s ? std::optional<double>(s->first) : std::nullopt;
}

void Fusion::defer(size_t member, size_t root) {
  root_of_[member] = root;
  auto& m = deferred_[root];
  m.insert(std::upper_bound(m.begin(), m.end(), member), member);
}

std::vector<size_t> Fusion::deferred_to(size_t root) const {
  auto it = deferred_.find(root);
  return it == deferred_.end() ? std::vector<size_t>{} : it->second;
}

std::optional<size_t> Fusion::only_consumer(const std::string& value) const {
  if (value.empty() || graph_outputs_.count(value)) return std::nullopt;
  auto it = consumers_.find(value);
  if (it == consumers_.end() || it->second.size() != 1) return std::nullopt;
  return it->second[0];
}

// RMS normalizations written in plain ops (see fusion.h): each ReduceMean starts a candidate, matched
// backwards to the square of x and forwards to the inverse root, the product with x and the optional
// weight and Casts; every value but the last must be read only by the next node of the chain (x by the
// square and the product only, when a Cast to float makes it). What needs sizes or ranks (the axes, the
// scalars' ranks, x's dtype, the weight) is checked at plan time (rms_norm_group).
// ($ONNXGPU_RMS_FUSION=0: none, for measuring what it buys.)
void Fusion::find_rms_norms() {
  if (!switched_on("ONNXGPU_RMS_FUSION")) return;
  constexpr size_t kAnyRank = 64;
  auto node = [&](size_t n, const char* op, size_t inputs) {
    const ir::Node& m = g_.nodes[n];
    return plain(m, op) && m.inputs.size() == inputs && m.outputs.size() == 1 && !m.outputs[0].empty() &&
           std::none_of(m.inputs.begin(), m.inputs.end(), [](const std::string& v) { return v.empty(); }) &&
           !root_of_.count(n);
  };
  // The only node that reads node n's output (never a graph output), when it is `op` with `inputs` inputs.
  auto next = [&](size_t n, const char* op, size_t inputs) -> std::optional<size_t> {
    auto c = only_consumer(g_.nodes[n].outputs[0]);
    if (!c || !node(*c, op, inputs)) return std::nullopt;
    return c;
  };
  // The other input of a two-input node that reads `v`.
  auto other = [&](size_t n, const std::string& v) -> std::string {
    const ir::Node& m = g_.nodes[n];
    return m.inputs[0] == v ? m.inputs[1] : m.inputs[0];
  };
  auto is = [&](const std::string& v, double want) {
    auto c = scalar_number(v, kAnyRank);
    return c && *c == want;
  };
  auto to_float = [&](size_t n) { return g_.nodes[n].attr_int("to", 0) == int64_t(DType::Float32); };
  // A weight: an initializer, a Constant, or an Identity of one (torch shares equal weights so).
  std::function<bool(const std::string&)> constant = [&](const std::string& v) {
    if (g_.initializers.count(v) || constant_node(v)) return true;
    auto p = producer_.find(v);
    return p != producer_.end() && node(p->second, "Identity", 1) && constant(g_.nodes[p->second].inputs[0]);
  };
  for (size_t rm = 0; rm < g_.nodes.size(); ++rm) {
    const ir::Node& r = g_.nodes[rm];
    if (!(node(rm, "ReduceMean", 1) || node(rm, "ReduceMean", 2)) || r.attr_int("keepdims", 1) != 1) continue;
    if (only_consumer(r.inputs[0]) != std::optional<size_t>(rm)) continue;
    auto sp = producer_.find(r.inputs[0]);
    if (sp == producer_.end()) continue;
    const size_t sq = sp->second;
    RmsNorm c;
    c.reduce = rm;
    std::vector<size_t> chain{sq, rm};
    std::string x;
    if (node(sq, "Pow", 2) && is(g_.nodes[sq].inputs[1], 2.0)) {
      x = g_.nodes[sq].inputs[0];
      c.scalars.push_back(g_.nodes[sq].inputs[1]);
    } else if (node(sq, "Mul", 2) && g_.nodes[sq].inputs[0] == g_.nodes[sq].inputs[1]) {
      x = g_.nodes[sq].inputs[0];
    } else {
      continue;
    }
    // + eps, then 1 / sqrt: Sqrt -> Div(x, .), or Sqrt -> Reciprocal | Div(1, .) -> Mul(x, .), or
    // Pow(., -0.5) -> Mul(x, .).
    auto add = next(rm, "Add", 2);
    if (!add) continue;
    c.eps = other(*add, r.outputs[0]);
    if (c.eps == r.outputs[0] || !scalar_value(c.eps, kAnyRank)) continue;
    chain.push_back(*add);
    const std::string& var = g_.nodes[*add].outputs[0];
    std::optional<size_t> normed, inv;
    if (auto sqrt = next(*add, "Sqrt", 1)) {
      chain.push_back(*sqrt);
      const std::string& root = g_.nodes[*sqrt].outputs[0];
      if (auto d = next(*sqrt, "Div", 2); d && g_.nodes[*d].inputs[1] == root) {
        if (g_.nodes[*d].inputs[0] == x) {
          normed = d;
        } else if (is(g_.nodes[*d].inputs[0], 1.0)) {
          inv = d;
          c.scalars.push_back(g_.nodes[*d].inputs[0]);
        }
      } else if (auto rc = next(*sqrt, "Reciprocal", 1)) {
        inv = rc;
      }
    } else if (auto p = next(*add, "Pow", 2); p && g_.nodes[*p].inputs[0] == var && is(g_.nodes[*p].inputs[1], -0.5)) {
      inv = p;
      c.scalars.push_back(g_.nodes[*p].inputs[1]);
    }
    if (inv) {
      chain.push_back(*inv);
      auto m = next(*inv, "Mul", 2);
      if (m && other(*m, g_.nodes[*inv].outputs[0]) == x) normed = m;
    }
    if (!normed) continue;
    chain.push_back(*normed);
    // Then Casts to float and at most one Mul by a constant weight (a Mul by anything else stays out).
    size_t last = *normed;
    for (bool grew = true; grew;) {
      grew = false;
      const std::string& y = g_.nodes[last].outputs[0];
      if (auto cast = next(last, "Cast", 1); cast && to_float(*cast)) {
        last = *cast;
        grew = true;
      } else if (auto m = next(last, "Mul", 2); m && c.weight.empty() && other(*m, y) != y && constant(other(*m, y))) {
        c.weight = other(*m, y);
        last = *m;
        grew = true;
      }
      if (grew) chain.push_back(last);
    }
    // x made by a Cast to float that only the chain reads: the Cast joins, its input is the rows.
    c.x = x;
    if (auto xp = producer_.find(x); xp != producer_.end() && node(xp->second, "Cast", 1) && to_float(xp->second) &&
                                     !graph_outputs_.count(x)) {
      const auto& readers = consumers_.at(x);
      if (std::all_of(readers.begin(), readers.end(),
                      [&](size_t n) { return std::count(chain.begin(), chain.end(), n) != 0; })) {
        chain.push_back(xp->second);
        c.x = g_.nodes[xp->second].inputs[0];
      }
    }
    if (std::any_of(chain.begin(), chain.end(), [&](size_t n) { return root_of_.count(n) || rms_norms_.count(n); }))
      continue;
    for (size_t n : chain)
      if (n != last) defer(n, last);
    rms_norms_[last] = std::move(c);
  }
}

// The RMS norm whose last node is i (find_rms_norms): the fused SimplifiedLayerNormalization node
// (inputs the rows and the weight or "", attributes axis -1 and epsilon), when x is float32 rows, the
// ReduceMean takes their last axis alone and no scalar of the chain is of higher rank than x. `x_rank`
// (not 0): x is float32 rows of that rank not computed yet (a product's result, absorb_post_norm).
std::optional<FusedGroup> Fusion::rms_norm_group(size_t i, const Lookup& facts, size_t x_rank) const {
  auto it = rms_norms_.find(i);
  if (it == rms_norms_.end()) return std::nullopt;
  const RmsNorm& c = it->second;
  size_t rank = x_rank;
  if (!rank) {
    const ValueFacts* x = facts(c.x, Read::Kind);
    if (!x || x->dtype != DType::Float32 || x->shape.empty()) return std::nullopt;
    rank = x->shape.size();
  }
  const ir::Node& rm = g_.nodes[c.reduce];
  std::vector<bool> axes;
  try {
    axes = ops::reduced_dims(
        rm, opset_, int64_t(rank), 18,
        [&]() -> const Tensor* {
          if (rm.inputs.size() < 2) return nullptr;
          const ValueFacts* a = facts(rm.inputs[1], Read::All);
          if (!a || !a->value) throw InvalidArgument("axes not constant");
          return a->value;
        },
        [](const std::string& m) { throw InvalidArgument(m); });
  } catch (const Error&) {
    return std::nullopt;  // the ReduceMean alone reports it
  }
  for (size_t d = 0; d < rank; ++d)
    if (axes[d] != (d + 1 == rank)) return std::nullopt;
  std::optional<float> eps = scalar_value(c.eps, rank);
  if (!eps) return std::nullopt;
  for (const auto& s : c.scalars)
    if (!scalar_number(s, rank)) return std::nullopt;
  if (!c.weight.empty()) {  // a constant float32 row (its length: the kernel checks it)
    const ValueFacts* w = facts(c.weight, Read::All);
    if (!w || !w->value || w->dtype != DType::Float32 || w->shape.size() != 1) return std::nullopt;
  }
  const ir::Node& last = g_.nodes[i];
  FusedGroup f;
  f.node.op_type = "SimplifiedLayerNormalization";
  f.node.domain = webgpu::kFusedDomain;
  f.node.inputs = {c.x, c.weight};
  f.node.outputs = {last.outputs[0]};
  ir::Attribute axis;
  axis.kind = ir::Attribute::Kind::Int;
  axis.i = -1;
  f.node.attrs["axis"] = axis;
  ir::Attribute epsilon;
  epsilon.kind = ir::Attribute::Kind::Float;
  epsilon.f = *eps;
  f.node.attrs["epsilon"] = epsilon;
  f.members = deferred_to(i);
  f.node.name = last.name + " (RMS norm, +" + std::to_string(f.members.size()) + " fused)";
  return f;
}

// Grows each group backwards from a root (the last elementwise node of a chain, taken from the end
// of the graph): a producer joins when it is elementwise and everything that reads its value is
// already in the group.
void Fusion::find_elementwise_groups() {
  std::set<size_t> taken;
  for (size_t r = g_.nodes.size(); r-- > 0;) {
    if (taken.count(r) || root_of_.count(r) || !lone_elementwise(r)) continue;  // (an RMS norm's nodes: its own group)
    std::set<size_t> group{r};
    for (bool grew = true; grew && group.size() < kMaxMembers;) {
      grew = false;
      for (size_t m : std::vector<size_t>(group.begin(), group.end())) {
        for (const auto& in : g_.nodes[m].inputs) {
          auto p = producer_.find(in);
          if (p == producer_.end() || group.count(p->second) || taken.count(p->second) || root_of_.count(p->second) ||
              graph_outputs_.count(in) || !lone_elementwise(p->second))
            continue;
          const auto& readers = consumers_.at(in);
          if (!std::all_of(readers.begin(), readers.end(), [&](size_t c) { return group.count(c) != 0; })) continue;
          group.insert(p->second);
          grew = true;
          if (group.size() >= kMaxMembers) break;
        }
        if (group.size() >= kMaxMembers) break;
      }
    }
    if (group.size() < 2) continue;
    std::set<std::string> produced, external;
    for (size_t m : group) produced.insert(g_.nodes[m].outputs[0]);
    for (size_t m : group)
      for (const auto& in : g_.nodes[m].inputs)
        if (!produced.count(in) && !scalar_constant(in)) external.insert(in);  // scalars go into the WGSL
    if (external.size() > kMaxExternal) continue;
    for (size_t m : group)
      if (m != r) {
        defer(m, r);
        taken.insert(m);
      }
    taken.insert(r);
    elementwise_roots_.insert(r);
  }
}

std::optional<FusedGroup> Fusion::group_at(size_t i, const Lookup& facts) const {
  if (!enabled_) return std::nullopt;
  if (auto f = norm_group(i, facts)) return f;
  if (auto f = sibling_group(i)) return f;
  if (auto f = nbits_pair_group(i, facts)) return f;
  if (auto f = matmul_group(i, facts)) return f;
  if (auto f = conv_group(i, facts)) return f;
  if (rms_norms_.count(i)) return rms_norm_group(i, facts);
  if (!elementwise_roots_.count(i)) return std::nullopt;
  // The fused node's expression: a step per member in graph order, reading the group's external
  // values as its inputs, which are the node's.
  FusedGroup f;
  f.members = deferred_to(i);
  std::vector<size_t> order = f.members;
  order.push_back(i);
  auto expr = fused_expr(g_, order, [&](const std::string& in) -> std::optional<ir::FusedOperand> {
    f.node.inputs.push_back(in);
    return ir::FusedOperand::input(f.node.inputs.size() - 1);
  });
  const ir::Node& root = g_.nodes[i];
  f.node.name = root.name + " (+" + std::to_string(f.members.size()) + " fused)";
  f.node.op_type = "Elementwise";
  f.node.domain = webgpu::kFusedDomain;
  f.node.outputs = {root.outputs[0]};
  set_expr(f.node, std::move(*expr), 0);
  (void)facts;
  return f;
}

// `a`: another value of A's shape to read as A ("": A itself; a normalization prologue's input,
// layer_norm_group).
std::optional<FusedGroup> Fusion::matmul_group(size_t i, const Lookup& facts, const std::string& a) const {
  const ir::Node& mm = g_.nodes[i];
  if (!plain(mm, "MatMul") || mm.inputs.size() != 2 || mm.outputs.size() != 1) return std::nullopt;
  FusedGroup f;
  f.node.name = mm.name;
  f.node.op_type = "MatMul";
  f.node.domain = webgpu::kFusedDomain;
  f.node.inputs = mm.inputs;
  f.node.outputs = mm.outputs;
  // The operands as the product sees them: a folded Transpose's input, permuted.
  Shape shape[2];
  DType dtype[2];
  bool constant[2] = {false, false};  // an operand known at plan time
  for (size_t q = 0; q < 2; ++q) {
    auto t = transposed_.find({i, q});
    if (q == 0 && !a.empty()) {
      if (t != transposed_.end()) return std::nullopt;
      f.node.inputs[0] = a;
    }
    const std::string& name = q == 0 && !a.empty() ? a : t == transposed_.end() ? mm.inputs[q] : g_.nodes[t->second].inputs[0];
    const ValueFacts* v = facts(name, Read::All);
    if (!v) return std::nullopt;
    dtype[q] = v->dtype;
    shape[q] = v->shape;
    constant[q] = v->value != nullptr;
    if (t == transposed_.end()) continue;
    std::vector<int64_t> perm = transpose_perm(g_.nodes[t->second], v->shape.size());
    if (perm.empty()) return std::nullopt;
    Shape p;
    for (int64_t d : perm) p.push_back(v->shape[size_t(d)]);
    shape[q] = p;
    f.node.inputs[q] = name;
    f.node.attrs[q == 0 ? "perm_a" : "perm_b"] = ints_attr(perm);
    f.members.push_back(t->second);
  }
  if (!dtype_is_float(dtype[0]) || dtype[1] != dtype[0]) return std::nullopt;
  // The bias must be one row of the product ([N] with leading 1s, never widening the output); then a
  // residual Add of the output's shape, computed before the MatMul.
  auto j = only_consumer(mm.outputs[0]);
  const ir::Node* add = j ? &g_.nodes[*j] : nullptr;
  // Or a Transpose of the product (attention's heads back in place): written where it puts them.
  // (Not one that the next product reads in place: that one is deferred to it.)
  if (add && plain(*add, "Transpose") && !root_of_.count(*j) && add->outputs.size() == 1 && !add->outputs[0].empty() &&
      shape[0].size() >= 2 && shape[1].size() >= 2) {
    std::vector<int64_t> perm = transpose_perm(*add, std::max(shape[0].size(), shape[1].size()));
    if (!perm.empty()) {
      f.node.attrs["perm_y"] = ints_attr(perm);
      f.node.name += "+" + add->name;
      f.node.outputs = add->outputs;
      f.members.push_back(*j);
    }
    add = nullptr;
  }
  if (add && plain(*add, "Add") && add->inputs.size() == 2 && add->outputs.size() == 1 && !add->outputs[0].empty() &&
      shape[0].size() >= 2 && shape[1].size() == 2) {
    const std::string& bias = add->inputs[0] == mm.outputs[0] ? add->inputs[1] : add->inputs[0];
    const ValueFacts* c = facts(bias, Read::All);
    int64_t n = shape[1][1];
    Shape out(shape[0].begin(), shape[0].end() - 1);
    out.push_back(n);
    // The Add at node k (reading `sum`) as the residual: its other operand of the output's shape,
    // computed before the MatMul (input 3; input 2, the bias, left empty when there is none).
    auto take_residual = [&](size_t k, const std::string& sum, bool after_bias) {
      const ir::Node& res = g_.nodes[k];
      const std::string& other = res.inputs[0] == sum ? res.inputs[1] : res.inputs[0];
      const ValueFacts* r = other == sum ? nullptr : facts(other, Read::All);
      if (!r || r->dtype != dtype[0] || r->shape != out) return;
      f.node.name += "+" + res.name;
      if (!after_bias) f.node.inputs.push_back("");
      f.node.inputs.push_back(other);
      f.node.outputs = res.outputs;
      f.members.push_back(k);
    };
    if (c && c->value && c->dtype == dtype[0] && !c->shape.empty() && c->shape.size() <= shape[0].size() &&
        c->shape.back() == n && shape_numel(c->shape) == n) {
      f.node.name += "+" + add->name;
      f.node.inputs.push_back(bias);
      f.node.outputs = add->outputs;
      f.members.push_back(*j);
      if (auto k = only_consumer(add->outputs[0]); k && split_into_parts(f, *k, out, facts)) {
        // written into the Split's parts: no residual
      } else if (k) {
        const ir::Node& res = g_.nodes[*k];
        if (plain(res, "Add") && res.inputs.size() == 2 && res.outputs.size() == 1 && !res.outputs[0].empty())
          take_residual(*k, add->outputs[0], true);
      }
    } else if (!(constant[0] && constant[1])) {  // (a product of constants folds)
      // No bias: the Add is a residual (x + h @ W, the output projections of T5 and Llama).
      take_residual(*j, mm.outputs[0], false);
    }
  }
  if (add && plain(*add, "Split") && shape[0].size() >= 2 && shape[1].size() == 2) {  // no bias
    Shape out(shape[0].begin(), shape[0].end() - 1);
    out.push_back(shape[1][1]);
    split_into_parts(f, *j, out, facts);
  }
  // ($ONNXGPU_EPILOGUE_ACTIVATION=0 keeps activations out of the epilogue, for measuring what it buys.)
  static const bool activations = switched_on("ONNXGPU_EPILOGUE_ACTIVATION");
  // (float32 only: the fused elementwise kernel, which the group would otherwise be, is float32 too.)
  if (activations && dtype[0] == DType::Float32 && f.node.outputs.size() == 1 && !f.node.attrs.count("perm_y")) {
    size_t ra = shape[0].size(), rb = shape[1].size();  // the product's rank (numpy matmul)
    size_t rank = std::max(ra >= 2 ? ra - 2 : 0, rb >= 2 ? rb - 2 : 0) + (ra >= 2 ? 1 : 0) + (rb >= 2 ? 1 : 0);
    absorb_activation(f, rank);
  }
  if (a.empty() && dtype[0] == DType::Float32 && f.node.outputs.size() == 1 && !f.node.attrs.count("perm_y") &&
      !f.node.attrs.count("split") && shape[0].size() >= 2 && shape[1].size() == 2) {
    Shape out(shape[0].begin(), shape[0].end() - 1);
    out.push_back(shape[1][1]);
    absorb_post_norm(f, out, facts);
  }
  if (f.members.empty() && a.empty()) return std::nullopt;  // a plain MatMul
  std::sort(f.members.begin(), f.members.end());
  return f;
}

// The normalization that reads the group's result h (of shape `out`) joins it as its post-normalization
// (see fusion.h): inputs padded to six, then the scale and the shift ("" when none); attributes
// "post_norm" (the normalization) and "post_norm.epsilon"; outputs h, when anything else reads it, and
// the normalized rows.
bool Fusion::absorb_post_norm(FusedGroup& f, const Shape& out, const Lookup& facts) const {
  static const bool on = switched_on("ONNXGPU_POST_NORM");
  const std::string h = f.node.outputs[0];
  auto readers = consumers_.find(h);
  if (!on || h.empty() || out.empty() || readers == consumers_.end()) return false;
  const int64_t n = out.back(), rank = int64_t(out.size());
  const int64_t rows = n > 0 ? shape_numel(out) / n : 0;
  auto row_of_n = [&](const std::string& v) {
    const ValueFacts* c = facts(v, Read::All);
    return c && c->dtype == DType::Float32 && !c->shape.empty() && c->shape.back() == n && shape_numel(c->shape) == n;
  };
  std::vector<size_t> members;  // the normalization's nodes
  std::string op, y, scale, shift;
  float epsilon = 1e-5f;
  for (size_t r : readers->second) {
    const ir::Node& ln = g_.nodes[r];
    if (plain(ln, "LayerNormalization") && ln.inputs.size() >= 2 && ln.inputs.size() <= 3 && ln.inputs[0] == h &&
        !ln.inputs[1].empty() && !ln.outputs.empty() && !ln.outputs[0].empty() && !root_of_.count(r)) {
      int64_t axis = ln.attr_int("axis", -1);
      if (axis < 0) axis += rank;
      const bool stats_read = (ln.outputs.size() > 1 && read(ln.outputs[1])) || (ln.outputs.size() > 2 && read(ln.outputs[2]));
      const std::string b = ln.inputs.size() > 2 ? ln.inputs[2] : "";
      // (A prologue of the product that reads Y serves few rows better: no dispatch of its own.)
      const bool prologue = norm_prologues_.count(r) && rows <= int64_t(webgpu::products::kGemvMaxRows);
      if (stats_read || axis != rank - 1 || ln.attr_int("stash_type", 1) != 1 || prologue || !row_of_n(ln.inputs[1]) ||
          (!b.empty() && !row_of_n(b)))
        continue;
      op = "LayerNormalization";
      y = ln.outputs[0];
      scale = ln.inputs[1];
      shift = b;
      epsilon = ln.attr_float("epsilon", 1e-5f);
      members = {r};
      break;
    }
    // An RMS norm in plain ops whose rows are h: its group (rms_norm_group's checks), its nodes members.
    auto last = root_of_.find(r);
    if (last == root_of_.end()) continue;
    auto c = rms_norms_.find(last->second);
    if (c == rms_norms_.end() || c->second.x != h || (!c->second.weight.empty() && !row_of_n(c->second.weight))) continue;
    std::optional<FusedGroup> g = rms_norm_group(last->second, facts, out.size());
    if (!g) continue;
    op = "SimplifiedLayerNormalization";
    y = g->node.outputs[0];
    scale = c->second.weight;
    epsilon = g->node.attr_float("epsilon", 1e-5f);
    members = g->members;
    members.push_back(last->second);
    break;
  }
  if (members.empty()) return false;
  bool kept = graph_outputs_.count(h) != 0;  // h read elsewhere too: stored as well
  for (size_t r : readers->second)
    if (std::find(members.begin(), members.end(), r) == members.end()) kept = true;
  f.node.inputs.resize(6);  // (inputs 4 and 5: a normalization prologue's, none here)
  f.node.inputs.push_back(scale);
  f.node.inputs.push_back(shift);
  ir::Attribute norm;
  norm.kind = ir::Attribute::Kind::String;
  norm.s = op;
  f.node.attrs["post_norm"] = norm;
  ir::Attribute eps;
  eps.kind = ir::Attribute::Kind::Float;
  eps.f = epsilon;
  f.node.attrs["post_norm.epsilon"] = eps;
  f.node.outputs = kept ? std::vector<std::string>{h, y} : std::vector<std::string>{y};
  f.node.name += "+" + g_.nodes[*std::max_element(members.begin(), members.end())].name;
  f.members.insert(f.members.end(), members.begin(), members.end());
  return true;
}

// Node `split` reads the product (of shape `out`) alone: when it splits the last axis, the product
// writes each column into its part (attribute "split": the parts' widths; outputs: the parts).
// The elementwise group (or lone elementwise node) that alone reads the product's (epilogue's) result
// joins the epilogue when its other inputs are constant scalars (a GELU after the bias, a Relu): the
// fused node's expression, the result its product and each scalar a constant.
bool Fusion::absorb_activation(FusedGroup& f, size_t rank) const {
  const std::string value = f.node.outputs[0];
  auto readers = consumers_.find(value);
  if (value.empty() || graph_outputs_.count(value) || readers == consumers_.end() || readers->second.empty()) return false;
  // The group each reader belongs to: its root's nodes, or the reader alone (T5's Relu after its
  // first MLP product), not part of another group.
  auto root_of = [&](size_t n) -> std::optional<size_t> {
    if (elementwise_roots_.count(n)) return n;
    auto r = root_of_.find(n);
    if (r != root_of_.end()) return elementwise_roots_.count(r->second) ? std::optional<size_t>(r->second) : std::nullopt;
    if (lone_elementwise(n)) return n;
    return std::nullopt;
  };
  auto root = root_of(readers->second[0]);
  if (!root || root_of_.count(*root)) return false;
  for (size_t c : readers->second)
    if (root_of(c) != root) return false;
  std::vector<size_t> order = chain_nodes(*root);
  for (size_t n : order)
    if (g_.nodes[n].op_type == "Where") return false;
  auto expr = fused_expr(g_, order, [&](const std::string& in) -> std::optional<ir::FusedOperand> {
    if (in == value) return ir::FusedOperand::product();
    auto v = scalar_value(in, rank);
    if (!v) return std::nullopt;  // another tensor: not an epilogue
    return ir::FusedOperand::constant(*v);
  });
  if (!expr) return false;
  set_expr(f.node, std::move(*expr), f.node.inputs.size());
  f.node.name += "+" + g_.nodes[*root].name + (order.size() > 1 ? " (+" + std::to_string(order.size() - 1) + ")" : "");
  f.node.outputs = g_.nodes[*root].outputs;
  f.members.insert(f.members.end(), order.begin(), order.end());
  return true;
}

bool Fusion::split_into_parts(FusedGroup& f, size_t split, const Shape& out, const Lookup& facts) const {
  const ir::Node& s = g_.nodes[split];
  if (!plain(s, "Split") || s.inputs.empty() || s.inputs[0] != f.node.outputs[0] || out.empty()) return false;
  if (std::any_of(s.outputs.begin(), s.outputs.end(), [](const std::string& o) { return o.empty(); })) return false;
  int64_t r = int64_t(out.size()), axis = s.attr_int("axis", 0);
  if (axis < 0) axis += r;
  if (axis != r - 1) return false;
  bool has_input = s.inputs.size() > 1 && !s.inputs[1].empty();
  // The sizes: a constant the plan knows, or a Constant node later in the graph than the product.
  const Tensor* sizes_in = nullptr;
  if (has_input) {
    const ValueFacts* v = facts(s.inputs[1], Read::All);
    sizes_in = v ? v->value : nullptr;
    if (const ir::Node* c = sizes_in ? nullptr : constant_node(s.inputs[1])) sizes_in = c->attr_tensor("value");
    if (!sizes_in || !dtype_is_integer(sizes_in->dtype())) return false;
  }
  std::vector<int64_t> sizes;
  try {
    sizes = ops::split_sizes(
        s, opset_, axis, out.back(), shape_str(out), s.outputs.size(), has_input,
        [&] { return sizes_in->to_int64_vector(); }, [](const std::string& m) { throw InvalidArgument(m); });
  } catch (const Error&) {
    return false;  // the Split alone reports it
  }
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return false;  // an empty part: the Split runs
  f.node.attrs["split"] = ints_attr(sizes);
  f.node.name += "+" + s.name;
  f.node.outputs = s.outputs;
  f.members.push_back(split);
  return true;
}

// Conv [-> BatchNormalization] [-> an elementwise expression] [-> a pool]: see fusion.h.
// ($ONNXGPU_CONV_FUSION=0: none, for measuring what it buys.)
std::optional<FusedGroup> Fusion::conv_group(size_t i, const Lookup& facts) const {
  static const bool on = switched_on("ONNXGPU_CONV_FUSION");
  const ir::Node& cv = g_.nodes[i];
  if (!on || !plain(cv, "Conv") || cv.inputs.size() < 2 || cv.inputs.size() > 3 || cv.outputs.size() != 1 ||
      cv.outputs[0].empty() || cv.inputs[0].empty() || cv.inputs[1].empty())
    return std::nullopt;
  const ValueFacts* x = facts(cv.inputs[0], Read::All);
  const ValueFacts* w = facts(cv.inputs[1], Read::All);
  if (!x || !w || x->dtype != DType::Float32 || w->dtype != DType::Float32 || x->shape.size() < 3 ||
      w->shape.size() != x->shape.size())
    return std::nullopt;
  // The output's shape, for the expression's inputs (none may widen it); a bad node is left to the Conv.
  Shape out{x->shape[0], w->shape[0]};
  try {
    Shape in_sp(x->shape.begin() + 2, x->shape.end()), k_sp(w->shape.begin() + 2, w->shape.end());
    ops::Window win = ops::make_window(cv, in_sp, k_sp, false, [](const std::string& m) { throw InvalidArgument(m); });
    out.insert(out.end(), win.out.begin(), win.out.end());
  } catch (const Error&) {
    return std::nullopt;
  }
  FusedGroup f;
  f.node = cv;
  f.node.domain = webgpu::kFusedDomain;
  f.node.fused.reset();
  f.node.inputs.resize(3);  // x, w, the bias ("" when none), then the expression's inputs
  fold_batch_norm(f, i);
  absorb_expression(f, out, facts);
  absorb_pool(f, out);
  if (f.members.empty()) return std::nullopt;  // a plain Conv
  std::sort(f.members.begin(), f.members.end());
  return f;
}

// The BatchNormalization (inference) that alone reads the Conv's output, with constant statistics, over
// constant weights: folded into them, once per session (`derived`): W'[m] = W[m] s[m], B' = (B - mean) s +
// beta, s = scale / sqrt(var + epsilon).
bool Fusion::fold_batch_norm(FusedGroup& f, size_t conv) const {
  if (!derived_) return false;
  const ir::Node& cv = g_.nodes[conv];
  auto j = only_consumer(cv.outputs[0]);
  if (!j) return false;
  const ir::Node& bn = g_.nodes[*j];
  if (!plain(bn, "BatchNormalization") || bn.inputs.size() != 5 || bn.inputs[0] != cv.outputs[0] || bn.outputs.empty() ||
      bn.outputs[0].empty() || bn.attr_int("training_mode", 0) != 0 || bn.attr_int("spatial", 1) != 1)
    return false;
  for (size_t k = 1; k < bn.outputs.size(); ++k)
    if (!bn.outputs[k].empty()) return false;  // training outputs
  auto init = [&](const std::string& name) -> const Tensor* {
    auto it = g_.initializers.find(name);
    return it == g_.initializers.end() || it->second.dtype() != DType::Float32 ? nullptr : &it->second;
  };
  const Tensor* w = init(cv.inputs[1]);
  const Tensor* b = cv.inputs.size() > 2 && !cv.inputs[2].empty() ? init(cv.inputs[2]) : nullptr;
  if (!w || w->rank() < 3 || (cv.inputs.size() > 2 && !cv.inputs[2].empty() && !b)) return false;
  const int64_t m = w->dim(0);
  const Tensor* p[4];
  for (size_t k = 0; k < 4; ++k) {
    p[k] = init(bn.inputs[k + 1]);
    if (!p[k] || p[k]->numel() != m || p[k]->rank() != 1) return false;
  }
  if (b && (b->numel() != m || b->rank() != 1)) return false;
  std::string key = cv.inputs[1] + "," + (b ? cv.inputs[2] : "") + "," + bn.inputs[1] + "," + bn.inputs[2] + "," +
                    bn.inputs[3] + "," + bn.inputs[4] + "," + f32_key(bn.attr_float("epsilon", 1e-5f));
  std::string wname = "onnxgpu.bn_folded_w(" + key + ")", bname = "onnxgpu.bn_folded_b(" + key + ")";
  if (!derived_->count(wname)) {
    const double eps = bn.attr_float("epsilon", 1e-5f);
    Tensor wf(DType::Float32, w->shape()), bf(DType::Float32, {m});
    const int64_t per = w->numel() / std::max<int64_t>(m, 1);
    const float *scale = p[0]->data<float>(), *beta = p[1]->data<float>(), *mean = p[2]->data<float>(),
                *var = p[3]->data<float>(), *wv = w->data<float>();
    for (int64_t o = 0; o < m; ++o) {
      double s = double(scale[o]) / std::sqrt(double(var[o]) + eps);
      for (int64_t e = 0; e < per; ++e) wf.data<float>()[o * per + e] = float(double(wv[o * per + e]) * s);
      bf.data<float>()[o] = float(((b ? double(b->data<float>()[o]) : 0.0) - double(mean[o])) * s + double(beta[o]));
    }
    (*derived_)[wname] = std::move(wf);
    (*derived_)[bname] = std::move(bf);
  }
  f.node.inputs[1] = wname;
  f.node.inputs[2] = bname;
  f.node.outputs = {bn.outputs[0]};
  f.node.name += "+" + bn.name;
  f.members.push_back(*j);
  return true;
}

// The 2-D MaxPool or AveragePool that alone reads the fused Conv's result `out` (not a graph output), whose
// windows tile it without overlap: kernel_shape == strides, dilations 1, no pads (auto_pad NOTSET or VALID),
// ceil_mode 0 (the trailing rows and columns no window covers are dropped), a MaxPool's Indices unread. The
// Conv kernel then stores only the pooled values (attributes pool = "max" / "average" and pool_kernel on the
// fused node; webgpu/kernels/conv.cpp). Windows of 1, 2 or 4 taps only: the implicit GEMM holds 4 columns
// of a row per invocation, so those are whole windows; a larger one (3 x 3) stays a Pool of its own rather
// than take the slower kernels. ($ONNXGPU_CONV_POOL=0: none, for measuring what it buys.)
bool Fusion::absorb_pool(FusedGroup& f, const Shape& out) const {
  static const bool on = switched_on("ONNXGPU_CONV_POOL");
  if (!on || out.size() != 4) return false;
  const std::string value = f.node.outputs[0];
  auto j = only_consumer(value);
  if (!j || root_of_.count(*j)) return false;
  const ir::Node& pool = g_.nodes[*j];
  const bool max = plain(pool, "MaxPool");
  if (!(max || plain(pool, "AveragePool")) || pool.inputs.size() != 1 || pool.inputs[0] != value || pool.outputs.empty() ||
      pool.outputs[0].empty() || pool.outputs.size() > 2 || (pool.outputs.size() == 2 && read(pool.outputs[1])))
    return false;
  auto all = [](const std::vector<int64_t>& v, size_t n, int64_t x) {
    return v.size() == n && std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
  };
  std::vector<int64_t> k;
  try {  // (an attribute of the wrong kind: the pool alone reports it)
    k = pool.attr_ints("kernel_shape", {});
    if (k.size() != 2 || k[0] < 1 || k[1] < 1 || out[2] < k[0] || out[3] < k[1]) return false;
    if (k[0] * k[1] > 4 || 4 % (k[0] * k[1]) != 0) return false;  // 1, 2 or 4 taps
    std::string auto_pad = pool.attr_string("auto_pad", "NOTSET");
    if (pool.attr_ints("strides", {1, 1}) != k || !all(pool.attr_ints("dilations", {1, 1}), 2, 1) ||
        !all(pool.attr_ints("pads", {0, 0, 0, 0}), 4, 0) || (auto_pad != "NOTSET" && auto_pad != "VALID") ||
        pool.attr_int("ceil_mode", 0) != 0)
      return false;
  } catch (const Error&) {
    return false;
  }
  ir::Attribute kind;
  kind.kind = ir::Attribute::Kind::String;
  kind.s = max ? "max" : "average";
  f.node.attrs["pool"] = kind;
  f.node.attrs["pool_kernel"] = ints_attr(k);
  f.node.name += "+" + pool.name;
  f.node.outputs = {pool.outputs[0]};
  f.members.push_back(*j);
  return true;
}

// The elementwise group (or lone elementwise node) that alone reads the fused node's output joins its
// epilogue: the output is its product, constant scalars are constants, and every other value it reads
// (a residual) becomes an input of the node, when it is known by then and broadcasts to the output's
// shape `out` without widening it. At most 3 such inputs (with x, w, the bias, the output and the
// status word: the 8 storage bindings every WebGPU device has).
bool Fusion::absorb_expression(FusedGroup& f, const Shape& out, const Lookup& facts) const {
  const std::string value = f.node.outputs[0];
  auto readers = consumers_.find(value);
  if (value.empty() || graph_outputs_.count(value) || readers == consumers_.end() || readers->second.empty()) return false;
  // The group each reader belongs to: its root's nodes, or the reader alone (not part of another group).
  auto chain_of = [&](size_t n) -> std::optional<size_t> {
    if (elementwise_roots_.count(n)) return n;
    auto r = root_of_.find(n);
    if (r != root_of_.end()) return elementwise_roots_.count(r->second) ? std::optional<size_t>(r->second) : std::nullopt;
    if (lone_elementwise(n)) return n;
    return std::nullopt;
  };
  auto root = chain_of(readers->second[0]);
  if (!root || root_of_.count(*root)) return false;  // (a group deferred in turn: attention's score expression)
  for (size_t c : readers->second)
    if (chain_of(c) != root) return false;
  std::vector<size_t> order = chain_nodes(*root);
  for (size_t n : order)
    if (g_.nodes[n].op_type == "Where") return false;
  const size_t first = f.node.inputs.size();
  std::vector<std::string> inputs;
  auto expr = fused_expr(g_, order, [&](const std::string& in) -> std::optional<ir::FusedOperand> {
    if (in == value) return ir::FusedOperand::product();
    if (auto v = scalar_value(in, out.size())) return ir::FusedOperand::constant(*v);
    const ValueFacts* v = facts(in, Read::All);
    if (!v || v->dtype != DType::Float32 || inputs.size() >= 3) return std::nullopt;
    try {
      if (ops::broadcast_shapes({out, v->shape}) != out) return std::nullopt;
    } catch (const Error&) {
      return std::nullopt;
    }
    inputs.push_back(in);
    return ir::FusedOperand::input(inputs.size() - 1);
  });
  if (!expr) return false;
  f.node.inputs.insert(f.node.inputs.end(), inputs.begin(), inputs.end());
  set_expr(f.node, std::move(*expr), first);
  f.node.name += "+" + g_.nodes[*root].name + (order.size() > 1 ? " (+" + std::to_string(order.size() - 1) + ")" : "");
  f.node.outputs = g_.nodes[*root].outputs;
  f.members.insert(f.members.end(), order.begin(), order.end());
  return true;
}

}  // namespace onnxgpu::runtime
