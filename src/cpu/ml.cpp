// ai.onnx.ml's numeric operators, as ONNX Runtime's CPU EP computes them (the results that users of
// scikit-learn, XGBoost or LightGBM exports compare with): the tree ensembles (TreeEnsembleRegressor and
// TreeEnsembleClassifier, opsets 1 and 3; TreeEnsemble, opset 5), LinearRegressor, LinearClassifier, Scaler,
// Normalizer, Binarizer, ArrayFeatureExtractor, Imputer, OneHotEncoder, LabelEncoder (numbers), SVMRegressor,
// SVMClassifier and FeatureVectorizer.
// CPU only: a tree walk per row has no GPU kernel here; in a WebGPU session each node falls back alone
// (fail-loud refuses it). Not supported: string values (out of scope everywhere) and the maps (ZipMap,
// DictVectorizer, CastMap). Differences with ONNX Runtime 1.30, on purpose, where its
// results are not a model's: a float is a member of TreeEnsemble's set only when equal to one of its values
// (ONNX Runtime tests the float converted to an integer; both agree on whole-numbered categories); a two-class
// TreeEnsembleClassifier with two base values adds each to its class; LinearClassifier refuses PROBIT on a
// single score (ONNX Runtime writes those scores out of their rows); SVMClassifier refuses PROBIT of two classes
// without probabilities (ONNX Runtime leaves the second score unwritten).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "cpu/kernel.h"
#include "ops/values.h"

namespace onnxgpu::cpu {
namespace {

const DTypeSet kMlInputs{DType::Float32, DType::Float64, DType::Int64, DType::Int32};
const DTypeSet kV5Inputs{DType::Float32, DType::Float64, DType::Float16};  // TreeEnsemble's X, also its Y's type

// Input 'X' of one of `allowed` (the ops' usual numbers by default), else an error naming them.
void check_x(const KernelContext& ctx, const Tensor& x, DTypeSet allowed = kMlInputs,
             const char* expected = "float32, float64, int64 or int32") {
  if (!allowed.has(x.dtype())) ctx.fail("input 'X' is " + x.describe() + ", expected " + expected);
}

// X as doubles in rows: [N, F] is N rows of F, [F] one row.
struct Rows {
  Tensor values;  // float64, X's shape
  int64_t n = 0, f = 0;
  const double* row(int64_t i) const { return values.data<double>() + i * f; }
};

Rows rows_of(const KernelContext& ctx, const Tensor& x, DTypeSet allowed = kMlInputs,
             const char* expected = "float32, float64, int64 or int32") {
  check_x(ctx, x, allowed, expected);
  if (x.rank() != 1 && x.rank() != 2) ctx.fail("input 'X' must be [N, F] or [F], got " + x.describe());
  return {x.cast(DType::Float64), x.rank() == 2 ? x.dim(0) : 1, x.dim(x.rank() - 1)};
}

// The post transforms (ONNX Runtime's ml_common.h). Its probit takes erf's inverse through Winitzki's
// approximation (a = 0.147), as the ONNX reference does; the scores' exact inverse would differ in the third digit.
enum class Post { None, Logistic, Softmax, SoftmaxZero, Probit };

double probit(double p) {
  const double x = 2 * p - 1, sign = x < 0 ? -1.0 : 1.0, l = std::log((1 - x) * (1 + x));
  const double v = 2 / (3.14159 * 0.147) + 0.5 * l;
  return 1.41421356 * sign * std::sqrt(-v + std::sqrt(v * v - l / 0.147));
}

double logistic(double v) { return 1 / (1 + std::exp(-v)); }

// The transform of one row's scores. ONNX Runtime applies only PROBIT to a single score (its binary
// classifiers' cases are elsewhere), every transform to two or more.
void post_transform(Post post, double* s, int64_t n) {
  if (post == Post::None) return;
  if (post == Post::Probit) {
    for (int64_t i = 0; i < n; ++i) s[i] = probit(s[i]);
    return;
  }
  if (n < 2) return;
  if (post == Post::Logistic) {
    for (int64_t i = 0; i < n; ++i) s[i] = logistic(s[i]);
    return;
  }
  double top = -std::numeric_limits<double>::max(), sum = 0;
  for (int64_t i = 0; i < n; ++i) top = std::max(top, s[i]);
  for (int64_t i = 0; i < n; ++i) {
    // SOFTMAX_ZERO leaves a zero score out of the sum (and zero after it).
    const bool skip = post == Post::SoftmaxZero && std::fabs(s[i]) <= 1e-7;
    s[i] = skip ? s[i] * std::exp(-top) : std::exp(s[i] - top);
    if (!skip) sum += s[i];
  }
  for (int64_t i = 0; i < n; ++i) s[i] /= sum;
}

Post post_from_name(const KernelContext& ctx, const std::string& name) {
  static const std::map<std::string, Post> names{{"NONE", Post::None}, {"LOGISTIC", Post::Logistic}, {"SOFTMAX", Post::Softmax},
                                                 {"SOFTMAX_ZERO", Post::SoftmaxZero}, {"PROBIT", Post::Probit}};
  auto it = names.find(name);
  if (it == names.end()) ctx.fail("attribute 'post_transform' is '" + name + "', expected NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO or PROBIT");
  return it->second;
}

// ---------------------------------------------------------------------------------------------------------
// Tree ensembles. Both attribute layouts (opsets 1-3: nodes named by tree and node ids, leaves' weights
// listed by the same ids; opset 5: nodes and leaves by index) become one Ensemble.

enum class Mode { Leq, Lt, Gte, Gt, Eq, Neq, Member };
enum class Aggregate { Average, Sum, Min, Max };

struct Branch {
  int64_t feature = 0;
  Mode mode = Mode::Leq;
  double split = 0;
  std::vector<double> members;  // Mode::Member: sorted
  bool nan_true = false;        // a missing value (NaN) takes the true branch
  int64_t next[2] = {0, 0};     // the true and false branches: >= 0 a branch's index, < 0 leaf -1 - next
};

struct Ensemble {
  std::vector<Branch> branches;
  std::vector<std::vector<std::pair<int64_t, double>>> leaves;  // per leaf: (target, weight)
  std::vector<int64_t> roots;                                   // as Branch::next
  int64_t targets = 1;
  Aggregate aggregate = Aggregate::Sum;
  Post post = Post::None;
  std::vector<double> base;  // empty or one per target
  bool classifier = false;   // targets are classes
};

bool goes_true(const Branch& b, double x) {
  if (std::isnan(x)) return b.nan_true || b.mode == Mode::Neq;  // NaN compares false but unequal (and is no member)
  switch (b.mode) {
    case Mode::Leq: return x <= b.split;
    case Mode::Lt: return x < b.split;
    case Mode::Gte: return x >= b.split;
    case Mode::Gt: return x > b.split;
    case Mode::Eq: return x == b.split;
    case Mode::Neq: return x != b.split;
    case Mode::Member: return std::binary_search(b.members.begin(), b.members.end(), x);
  }
  return false;
}

// Checks what a walk relies on: features inside the row, branches and leaves that exist, trees without a
// cycle (every walk ends within as many steps as there are branches).
void check_ensemble(const KernelContext& ctx, const Ensemble& e, int64_t features) {
  const int64_t nb = int64_t(e.branches.size()), nl = int64_t(e.leaves.size());
  auto check_next = [&](int64_t next, const std::string& what) {
    if (next >= nb || -1 - next >= nl) ctx.fail(what + " names a node or leaf that does not exist");
  };
  for (const Branch& b : e.branches) {
    if (b.feature < 0 || b.feature >= features)
      ctx.fail("a node reads feature " + std::to_string(b.feature) + ", but input 'X' has " + std::to_string(features) + " per row");
    check_next(b.next[0], "a node's true branch");
    check_next(b.next[1], "a node's false branch");
  }
  for (int64_t r : e.roots) check_next(r, "a tree's root");
  for (const auto& leaf : e.leaves)
    for (const auto& [target, w] : leaf)
      if (target < 0 || target >= e.targets)
        ctx.fail("a leaf's target id " + std::to_string(target) + " is outside [0, n_targets = " + std::to_string(e.targets) + ")");
  // A base value per target, or none; a two-class classifier may give one (its single score's).
  if (!e.base.empty() && int64_t(e.base.size()) != e.targets && !(e.classifier && e.targets == 2 && e.base.size() == 1))
    ctx.fail("the base values have " + std::to_string(e.base.size()) + " entries, expected one per target (" + std::to_string(e.targets) + ")");
  // A cycle: a walk from some root that has not reached a leaf after visiting every branch once.
  std::vector<uint8_t> state(size_t(nb), 0);  // 0 unvisited, 1 on the path, 2 done
  std::vector<std::pair<int64_t, int>> stack;
  for (int64_t root : e.roots) {
    if (root < 0 || state[size_t(root)] == 2) continue;
    stack.assign(1, {root, 0});
    state[size_t(root)] = 1;
    while (!stack.empty()) {
      auto& [at, side] = stack.back();
      if (side == 2) {
        state[size_t(at)] = 2;
        stack.pop_back();
        continue;
      }
      const int64_t next = e.branches[size_t(at)].next[side++];
      if (next < 0 || state[size_t(next)] == 2) continue;
      if (state[size_t(next)] == 1) ctx.fail("the trees' nodes form a cycle");
      state[size_t(next)] = 1;
      stack.push_back({next, 0});
    }
  }
}

// One row through every tree: each reached leaf's weights gathered per target, as ONNX Runtime's
// aggregators do (SUM and AVERAGE add, MIN and MAX keep the extreme); `has` marks the targets a leaf reached.
void accumulate(const Ensemble& e, const double* row, std::vector<double>& score, std::vector<uint8_t>& has) {
  std::fill(score.begin(), score.end(), 0.0);
  std::fill(has.begin(), has.end(), 0);
  for (int64_t at : e.roots) {
    while (at >= 0) {
      const Branch& b = e.branches[size_t(at)];
      at = b.next[goes_true(b, row[b.feature]) ? 0 : 1];
    }
    for (const auto& [target, w] : e.leaves[size_t(-1 - at)]) {
      double& s = score[size_t(target)];
      if (e.aggregate == Aggregate::Min) s = has[size_t(target)] ? std::min(s, w) : w;
      else if (e.aggregate == Aggregate::Max) s = has[size_t(target)] ? std::max(s, w) : w;
      else s += w;
      has[size_t(target)] = 1;
    }
  }
}

// A regression's scores [N, targets]: AVERAGE divides the sums by the number of trees, the base values are
// added after (to a target no leaf reached, the base alone), then the post transform.
std::vector<double> evaluate(const Ensemble& e, const Rows& x) {
  const int64_t t = e.targets;
  std::vector<double> out(size_t(x.n * t));
  std::vector<double> score(static_cast<size_t>(t));
  std::vector<uint8_t> has(static_cast<size_t>(t));
  for (int64_t r = 0; r < x.n; ++r) {
    accumulate(e, x.row(r), score, has);
    double* o = out.data() + r * t;
    for (int64_t k = 0; k < t; ++k) {
      double s = score[size_t(k)];
      if (e.aggregate == Aggregate::Average) s /= double(e.roots.size());
      o[k] = s + (e.base.empty() ? 0.0 : e.base[size_t(k)]);
    }
    post_transform(e.post, o, t);
  }
  return out;
}

// An attribute of floats given either as a list or, from opset 3 on, as a tensor (`<name>_as_tensor`).
std::vector<double> floats_or_tensor(const KernelContext& ctx, const std::string& name) {
  const ir::Node& n = ctx.node;
  if (n.has_attr(name) && n.has_attr(name + "_as_tensor"))
    ctx.fail("attributes '" + name + "' and '" + name + "_as_tensor' are both given");
  if (const Tensor* t = n.attr_tensor(name + "_as_tensor")) return ops::to_doubles(*t);
  const std::vector<float> f = n.attr_floats(name);
  return {f.begin(), f.end()};
}

// The per-node attributes have one value per node (`first` counts the nodes); the optional
// nodes_missing_value_tracks_true has one too, or none.
void check_node_attributes(const KernelContext& ctx, const std::string& first, size_t count, size_t missing,
                           const std::vector<std::pair<std::string, size_t>>& sizes) {
  for (const auto& [name, size] : sizes)
    if (size != count) ctx.fail("attribute '" + name + "' has " + std::to_string(size) + " values, " + first + " " + std::to_string(count));
  if (missing != 0 && missing != count)
    ctx.fail("attribute 'nodes_missing_value_tracks_true' has " + std::to_string(missing) + " values, " + first + " " + std::to_string(count));
}

// TreeEnsembleRegressor and TreeEnsembleClassifier (opsets 1 and 3): nodes and leaf weights named by (tree id,
// node id); the weights' attributes are `<weights>_treeids`, `_nodeids`, `_ids` and `_weights`, "target" or "class".
// A classifier's targets are its classes (`classes` > 0), always summed.
Ensemble ids_ensemble(const KernelContext& ctx, const std::string& weights_of, int64_t classes = 0) {
  const ir::Node& n = ctx.node;
  const auto tree_ids = n.attr_ints("nodes_treeids"), node_ids = n.attr_ints("nodes_nodeids"),
             features = n.attr_ints("nodes_featureids"), trues = n.attr_ints("nodes_truenodeids"),
             falses = n.attr_ints("nodes_falsenodeids"), missing = n.attr_ints("nodes_missing_value_tracks_true");
  const auto modes = n.attr_strings("nodes_modes");
  const auto values = floats_or_tensor(ctx, "nodes_values");
  const size_t count = tree_ids.size();
  check_node_attributes(ctx, "nodes_treeids", count, missing.size(),
                        {{"nodes_nodeids", node_ids.size()}, {"nodes_featureids", features.size()}, {"nodes_modes", modes.size()},
                         {"nodes_values", values.size()}, {"nodes_truenodeids", trues.size()}, {"nodes_falsenodeids", falses.size()}});

  Ensemble e;
  e.targets = classes > 0 ? classes : n.attr_int("n_targets", 1);
  e.classifier = classes > 0;
  if (e.targets < 1) ctx.fail("attribute 'n_targets' must be positive, got " + std::to_string(e.targets));
  const std::string agg = classes > 0 ? "SUM" : n.attr_string("aggregate_function", "SUM");
  static const std::map<std::string, Aggregate> aggs{{"AVERAGE", Aggregate::Average}, {"SUM", Aggregate::Sum},
                                                     {"MIN", Aggregate::Min}, {"MAX", Aggregate::Max}};
  if (!aggs.count(agg)) ctx.fail("attribute 'aggregate_function' is '" + agg + "', expected AVERAGE, SUM, MIN or MAX");
  e.aggregate = aggs.at(agg);
  e.post = post_from_name(ctx, n.attr_string("post_transform", "NONE"));
  e.base = floats_or_tensor(ctx, "base_values");

  // Each (tree, node) id becomes a branch or a leaf; children point at their index.
  std::map<std::pair<int64_t, int64_t>, int64_t> index;  // (tree, node) -> as Branch::next
  static const std::map<std::string, Mode> mode_names{{"BRANCH_LEQ", Mode::Leq}, {"BRANCH_LT", Mode::Lt}, {"BRANCH_GTE", Mode::Gte},
                                                      {"BRANCH_GT", Mode::Gt}, {"BRANCH_EQ", Mode::Eq}, {"BRANCH_NEQ", Mode::Neq}};
  for (size_t i = 0; i < count; ++i) {
    const auto id = std::make_pair(tree_ids[i], node_ids[i]);
    if (index.count(id)) ctx.fail("node " + std::to_string(id.second) + " of tree " + std::to_string(id.first) + " is listed twice");
    if (modes[i] == "LEAF") {
      index[id] = -1 - int64_t(e.leaves.size());
      e.leaves.emplace_back();
    } else {
      auto m = mode_names.find(modes[i]);
      if (m == mode_names.end()) ctx.fail("attribute 'nodes_modes' has '" + modes[i] + "', expected BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ or LEAF");
      index[id] = int64_t(e.branches.size());
      Branch b;
      b.feature = features[i];
      b.mode = m->second;
      b.split = values[i];
      b.nan_true = !missing.empty() && missing[i] != 0;
      e.branches.push_back(b);
    }
  }
  // Children, and each tree's root: its one node that no node of the tree names as a child.
  std::map<int64_t, std::vector<int64_t>> nodes_of_tree;
  std::map<std::pair<int64_t, int64_t>, bool> is_child;
  for (size_t i = 0; i < count; ++i) {
    nodes_of_tree[tree_ids[i]].push_back(node_ids[i]);
    const int64_t at = index.at({tree_ids[i], node_ids[i]});
    if (at < 0) continue;
    for (int side = 0; side < 2; ++side) {
      const int64_t child = side == 0 ? trues[i] : falses[i];
      auto it = index.find({tree_ids[i], child});
      if (it == index.end())
        ctx.fail("node " + std::to_string(node_ids[i]) + " of tree " + std::to_string(tree_ids[i]) + " has child " +
                 std::to_string(child) + ", which the tree does not have");
      e.branches[size_t(at)].next[side] = it->second;
      is_child[{tree_ids[i], child}] = true;
    }
  }
  for (const auto& [tree, nodes] : nodes_of_tree) {
    int64_t root = 0, roots = 0;
    for (int64_t id : nodes)
      if (!is_child.count({tree, id})) root = index.at({tree, id}), ++roots;
    if (roots != 1) ctx.fail("tree " + std::to_string(tree) + " has " + std::to_string(roots) + " nodes that are no node's child, expected one root");
    e.roots.push_back(root);
  }

  const std::string w = weights_of;
  const auto w_trees = n.attr_ints(w + "_treeids"), w_nodes = n.attr_ints(w + "_nodeids"), w_targets = n.attr_ints(w + "_ids");
  const auto weights = floats_or_tensor(ctx, w + "_weights");
  if (w_nodes.size() != w_trees.size() || w_targets.size() != w_trees.size() || weights.size() != w_trees.size())
    ctx.fail("attributes '" + w + "_treeids', '" + w + "_nodeids', '" + w + "_ids' and '" + w + "_weights' must have as many values each");
  for (size_t i = 0; i < w_trees.size(); ++i) {
    auto it = index.find({w_trees[i], w_nodes[i]});
    if (it == index.end() || it->second >= 0)
      ctx.fail("a " + w + " weight is given to node " + std::to_string(w_nodes[i]) + " of tree " + std::to_string(w_trees[i]) + ", which is not a leaf");
    e.leaves[size_t(-1 - it->second)].push_back({w_targets[i], weights[i]});
  }
  return e;
}

// TreeEnsemble (opset 5): nodes by index, each branch's children a node or a leaf by index.
Ensemble tree_ensemble_v5(const KernelContext& ctx) {
  const ir::Node& n = ctx.node;
  auto tensor_values = [&](const std::string& name, bool required) {
    const Tensor* t = n.attr_tensor(name);
    if (!t) {
      if (required) ctx.fail("attribute '" + name + "' is missing");
      return std::vector<double>{};
    }
    return ops::to_doubles(*t);
  };
  const auto features = n.attr_ints("nodes_featureids"), trues = n.attr_ints("nodes_truenodeids"),
             falses = n.attr_ints("nodes_falsenodeids"), true_leaf = n.attr_ints("nodes_trueleafs"),
             false_leaf = n.attr_ints("nodes_falseleafs"), missing = n.attr_ints("nodes_missing_value_tracks_true"),
             leaf_targets = n.attr_ints("leaf_targetids"), roots = n.attr_ints("tree_roots");
  const auto modes = tensor_values("nodes_modes", true), splits = tensor_values("nodes_splits", true),
             leaf_weights = tensor_values("leaf_weights", true), members = tensor_values("membership_values", false);
  const size_t count = features.size();
  check_node_attributes(ctx, "nodes_featureids", count, missing.size(),
                        {{"nodes_truenodeids", trues.size()}, {"nodes_falsenodeids", falses.size()}, {"nodes_trueleafs", true_leaf.size()},
                         {"nodes_falseleafs", false_leaf.size()}, {"nodes_modes", modes.size()}, {"nodes_splits", splits.size()}});
  if (leaf_targets.size() != leaf_weights.size())
    ctx.fail("attributes 'leaf_targetids' and 'leaf_weights' must have as many values each");

  Ensemble e;
  e.targets = n.attr_int("n_targets", 0);
  if (e.targets < 1) ctx.fail("attribute 'n_targets' must be positive, got " + std::to_string(e.targets));
  const int64_t agg = n.attr_int("aggregate_function", 1), post = n.attr_int("post_transform", 0);
  if (agg < 0 || agg > 3) ctx.fail("attribute 'aggregate_function' is " + std::to_string(agg) + ", expected 0 (AVERAGE) to 3 (MAX)");
  if (post < 0 || post > 4) ctx.fail("attribute 'post_transform' is " + std::to_string(post) + ", expected 0 (NONE) to 4 (PROBIT)");
  e.aggregate = Aggregate(agg);
  e.post = std::array{Post::None, Post::Softmax, Post::Logistic, Post::SoftmaxZero, Post::Probit}[size_t(post)];
  for (size_t i = 0; i < leaf_targets.size(); ++i) e.leaves.push_back({{leaf_targets[i], leaf_weights[i]}});

  size_t member_at = 0;  // the set of the k-th MEMBER node: the k-th run of membership_values ended by NaN
  for (size_t i = 0; i < count; ++i) {
    Branch b;
    const double mode = modes[i];
    if (mode < 0 || mode > 6 || mode != std::floor(mode)) ctx.fail("attribute 'nodes_modes' has " + std::to_string(mode) + ", expected 0 (LEQ) to 6 (MEMBER)");
    b.mode = Mode(int(mode));
    b.feature = features[i];
    b.split = splits[i];
    b.nan_true = !missing.empty() && missing[i] != 0;
    if (b.mode == Mode::Member) {
      if (member_at >= members.size()) ctx.fail("attribute 'membership_values' has no set for node " + std::to_string(i) + " (mode MEMBER)");
      while (member_at < members.size() && !std::isnan(members[member_at])) b.members.push_back(members[member_at++]);
      ++member_at;  // the NaN that ends the set
      std::sort(b.members.begin(), b.members.end());
    }
    b.next[0] = true_leaf[i] ? -1 - trues[i] : trues[i];
    b.next[1] = false_leaf[i] ? -1 - falses[i] : falses[i];
    if (trues[i] < 0 || falses[i] < 0) ctx.fail("node " + std::to_string(i) + " has a negative child index");
    e.branches.push_back(b);
  }
  for (int64_t r : roots) {
    if (r < 0 || r >= int64_t(count)) ctx.fail("attribute 'tree_roots' names node " + std::to_string(r) + ", outside the " + std::to_string(count) + " nodes");
    e.roots.push_back(r);
  }
  if (e.roots.empty()) ctx.fail("attribute 'tree_roots' is empty");
  return e;
}

std::vector<Tensor> run_ensemble(KernelContext& ctx, const Ensemble& e, const Rows& x, DType out_type) {
  check_ensemble(ctx, e, x.f);
  const std::vector<double> scores = evaluate(e, x);
  return {Tensor::from_vector<double>({x.n, e.targets}, scores).cast(out_type)};
}

std::vector<Tensor> tree_ensemble_regressor(KernelContext& ctx) {
  const Rows x = rows_of(ctx, ctx.input(0));
  return run_ensemble(ctx, ids_ensemble(ctx, "target"), x, DType::Float32);
}

// One row's linear scores: s[k] = b[k] + W[k] . x, W [classes or targets, F] row-major; b may be empty (0).
void linear_scores(const std::vector<float>& w, const std::vector<float>& b, const double* x, int64_t f, double* s, int64_t count) {
  for (int64_t k = 0; k < count; ++k) {
    double v = b.empty() ? 0.0 : b[size_t(k)];
    for (int64_t j = 0; j < f; ++j) v += double(w[size_t(k * f + j)]) * x[j];
    s[k] = v;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Classifiers: labels Y [N] (int64) and scores Z [N, classes] (float), as ONNX Runtime writes them, its
// rules for two classes included (tree_ensemble_aggregator.h and linearclassifier.cc there).

// The class labels (int64; string labels are out of scope).
std::vector<int64_t> class_labels(const KernelContext& ctx, const std::string& ints_name) {
  if (ctx.node.has_attr("classlabels_strings")) ctx.unsupported("attribute 'classlabels_strings': string labels are out of scope");
  std::vector<int64_t> labels = ctx.node.attr_ints(ints_name);
  if (labels.size() < 2) ctx.fail("attribute '" + ints_name + "' has " + std::to_string(labels.size()) + " labels, expected two or more");
  return labels;
}

// One score written as two, by ONNX Runtime's rule for a binary classifier with a single score: `how` 0 or 1
// (all weights positive: a probability) [1 - s, s]; 2 or 3 (mixed weights: a margin) [-s, s], through the
// logistic function under LOGISTIC; PROBIT transforms s alone; anything else leaves [s, 0].
void second_class(int how, Post post, double s, double* z) {
  if (post == Post::Probit) {
    z[0] = probit(s), z[1] = 0;
  } else if (how == 0 || how == 1) {
    z[0] = 1 - s, z[1] = s;
  } else if (how == 2 || how == 3) {
    z[0] = post == Post::Logistic ? logistic(-s) : -s;
    z[1] = post == Post::Logistic ? logistic(s) : s;
  } else {
    z[0] = s, z[1] = 0;
  }
}

// TreeEnsembleClassifier. Three classes or more: the base values added, the label of the largest score, the
// post transform over the scores. Two: ONNX Runtime's binary rules. With weights for one class only (its
// "binary case") the label is the second one when the score passes 0.5 (all weights positive) or 0; with
// weights for both, the label is 1 or 0 itself, whatever the class labels are, as ONNX Runtime gives it. A
// single score (weights for class 0 only, as converters write gradient boosting) becomes two by second_class.
std::vector<Tensor> tree_ensemble_classifier(KernelContext& ctx) {
  const std::vector<int64_t> labels = class_labels(ctx, "classlabels_int64s");
  const int64_t c = int64_t(labels.size());
  const Ensemble e = ids_ensemble(ctx, "class", c);
  const Rows x = rows_of(ctx, ctx.input(0));
  check_ensemble(ctx, e, x.f);
  bool all_positive = true;
  std::set<int64_t> weighted;  // the classes that have weights
  for (const auto& leaf : e.leaves)
    for (const auto& [k, w] : leaf) all_positive &= w >= 0, weighted.insert(k);
  const bool binary_case = c == 2 && weighted.size() == 1;

  Tensor y(DType::Int64, {x.n});
  std::vector<double> z(static_cast<size_t>(x.n * c)), s(static_cast<size_t>(c));
  std::vector<uint8_t> has(static_cast<size_t>(c));
  for (int64_t r = 0; r < x.n; ++r) {
    accumulate(e, x.row(r), s, has);
    double* zr = z.data() + r * c;
    int64_t label;
    if (c > 2) {
      for (size_t k = 0; k < e.base.size(); ++k) s[k] = has[k] ? s[k] + e.base[k] : e.base[k], has[k] = 1;
      int64_t best = -1;
      for (int64_t k = 0; k < c; ++k)
        if (has[size_t(k)] && (best < 0 || s[size_t(k)] > s[size_t(best)])) best = k;
      label = labels[size_t(std::max<int64_t>(best, 0))];
      std::copy(s.begin(), s.end(), zr);
      post_transform(e.post, zr, c);
    } else {
      int how = -1;
      bool two = true;  // both scores kept (else the first alone, written as two below)
      if (e.base.size() == 2) {
        // Each base value added to its class. (Where only the second class has weights, ONNX Runtime 1.30 sets
        // that class's score to base[1] + the first's, 0: every row the same. Converters do not write this.)
        s[0] += e.base[0], s[1] += e.base[1];
      } else {
        if (e.base.size() == 1) s[0] += e.base[0];
        else how = 3;
        two = has[1];
      }
      const double positive = two && has[1] ? s[1] : has[0] ? s[0] : 0.0;
      if (binary_case && all_positive) how = positive > 0.5 ? 0 : 1;
      else if (binary_case) how = positive > 0 ? 2 : 3;
      label = binary_case ? labels[how == 0 || how == 2 ? 1 : 0] : positive > 0 ? 1 : 0;
      if (two) {
        zr[0] = s[0], zr[1] = s[1];
        post_transform(e.post, zr, 2);
      } else {
        second_class(how, e.post, s[0], zr);
      }
    }
    y.data<int64_t>()[r] = label;
  }
  return {y, Tensor::from_vector<double>({x.n, c}, z).cast(DType::Float32)};
}

// LinearClassifier: scores X W^T + intercepts, one class per intercept. One score s: the second label where it
// is positive, Z [N, 2] as [1 - p, p] with p = s, or its logistic under LOGISTIC (ONNX Runtime's rule); several:
// the label of the largest score, then the post transform.
std::vector<Tensor> linear_classifier(KernelContext& ctx) {
  const ir::Node& n = ctx.node;
  const std::vector<int64_t> labels = class_labels(ctx, "classlabels_ints");
  const Rows x = rows_of(ctx, ctx.input(0));
  const std::vector<float> w = n.attr_floats("coefficients"), b = n.attr_floats("intercepts");
  const int64_t c = int64_t(b.size());
  if (c < 1) ctx.fail("attribute 'intercepts' is empty: it gives the number of classes");
  if (int64_t(w.size()) != c * x.f)
    ctx.fail("attribute 'coefficients' has " + std::to_string(w.size()) + " values, expected classes x features = " +
             std::to_string(c) + " x " + std::to_string(x.f));
  if (c != int64_t(labels.size()) && !(c == 1 && labels.size() == 2))
    ctx.fail("there are " + std::to_string(c) + " intercepts but " + std::to_string(labels.size()) +
             " class labels, expected one intercept per class (or one for two classes)");
  const Post post = post_from_name(ctx, n.attr_string("post_transform", "NONE"));
  if (c == 1 && post == Post::Probit)
    ctx.unsupported("post_transform PROBIT of a single score: ONNX Runtime 1.30 writes those scores out of their rows, "
                    "so there is no reference to follow");
  const int64_t out = c == 1 ? 2 : c;
  Tensor y(DType::Int64, {x.n});
  std::vector<double> z(static_cast<size_t>(x.n * out)), s(static_cast<size_t>(c));
  for (int64_t r = 0; r < x.n; ++r) {
    linear_scores(w, b, x.row(r), x.f, s.data(), c);
    double* zr = z.data() + r * out;
    if (c == 1) {
      y.data<int64_t>()[r] = s[0] > 0 ? labels[1] : labels[0];
      // ONNX Runtime takes the logistic of the score first there: [1 - p, p].
      second_class(1, post, post == Post::Logistic ? logistic(s[0]) : s[0], zr);
    } else {
      y.data<int64_t>()[r] = labels[size_t(std::max_element(s.begin(), s.end()) - s.begin())];
      std::copy(s.begin(), s.end(), zr);
      post_transform(post, zr, c);
    }
  }
  return {y, Tensor::from_vector<double>({x.n, out}, z).cast(DType::Float32)};
}

std::vector<Tensor> tree_ensemble(KernelContext& ctx) {
  const Rows x = rows_of(ctx, ctx.input(0), kV5Inputs, "float32, float64 or float16");
  return run_ensemble(ctx, tree_ensemble_v5(ctx), x, ctx.input(0).dtype());
}

// ---------------------------------------------------------------------------------------------------------

// LinearRegressor: Y[N, targets] = X W^T + intercepts, W = coefficients as [targets, F], then the post transform.
std::vector<Tensor> linear_regressor(KernelContext& ctx) {
  const ir::Node& n = ctx.node;
  const Rows x = rows_of(ctx, ctx.input(0));
  const int64_t targets = n.attr_int("targets", 1);
  const std::vector<float> w = n.attr_floats("coefficients"), b = n.attr_floats("intercepts");
  if (targets < 1) ctx.fail("attribute 'targets' must be positive, got " + std::to_string(targets));
  if ((x.f > 0 && targets > int64_t(w.size())) || int64_t(w.size()) != targets * x.f)
    ctx.fail("attribute 'coefficients' has " + std::to_string(w.size()) + " values, expected targets x features = " +
             std::to_string(targets) + " x " + std::to_string(x.f));
  if (!b.empty() && int64_t(b.size()) != targets)
    ctx.fail("attribute 'intercepts' has " + std::to_string(b.size()) + " values, expected targets = " + std::to_string(targets));
  const Post post = post_from_name(ctx, n.attr_string("post_transform", "NONE"));
  std::vector<double> y(size_t(x.n * targets));
  for (int64_t r = 0; r < x.n; ++r) {
    double* o = y.data() + r * targets;
    linear_scores(w, b, x.row(r), x.f, o, targets);
    post_transform(post, o, targets);
  }
  return {Tensor::from_vector<double>({x.n, targets}, y).cast(DType::Float32)};
}

// Scaler: Y = (X - offset) * scale, each of offset and scale one value for every feature or one per feature.
std::vector<Tensor> scaler(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Rows x = rows_of(ctx, in);
  const std::vector<float> offset = ctx.node.attr_floats("offset"), scale = ctx.node.attr_floats("scale");
  for (const auto& [name, v] : {std::pair{"offset", &offset}, std::pair{"scale", &scale}})
    if (v->size() != 1 && int64_t(v->size()) != x.f)
      ctx.fail(std::string("attribute '") + name + "' has " + std::to_string(v->size()) + " values, expected 1 or one per feature (" + std::to_string(x.f) + ")");
  Tensor y(DType::Float32, in.shape());
  float* o = y.data<float>();
  for (int64_t i = 0; i < x.n * x.f; ++i) {
    const size_t k = size_t(i % x.f);
    o[i] = float((x.values.data<double>()[i] - offset[offset.size() == 1 ? 0 : k]) * scale[scale.size() == 1 ? 0 : k]);
  }
  return {y};
}

// Normalizer: each row divided by its largest value (MAX), its sum of magnitudes (L1) or its Euclidean
// norm (L2); a row whose divisor is 0 is copied.
std::vector<Tensor> normalizer(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Rows x = rows_of(ctx, in);
  const std::string norm = ctx.node.attr_string("norm", "MAX");
  if (norm != "MAX" && norm != "L1" && norm != "L2") ctx.fail("attribute 'norm' is '" + norm + "', expected MAX, L1 or L2");
  Tensor y(DType::Float32, in.shape());
  float* o = y.data<float>();
  for (int64_t r = 0; r < x.n; ++r) {
    const double* v = x.row(r);
    double d = norm == "MAX" ? -std::numeric_limits<double>::max() : 0.0;
    for (int64_t k = 0; k < x.f; ++k) d = norm == "MAX" ? std::max(d, v[k]) : norm == "L1" ? d + std::fabs(v[k]) : d + v[k] * v[k];
    if (norm == "L2") d = std::sqrt(d);
    for (int64_t k = 0; k < x.f; ++k) o[r * x.f + k] = float(d != 0 ? v[k] / d : v[k]);
  }
  return {y};
}

// Binarizer: 1 where X > threshold, else 0 (NaN too), in X's type.
std::vector<Tensor> binarizer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  check_x(ctx, x);
  const double threshold = ctx.node.attr_float("threshold", 0.0f);
  Tensor y(DType::Float64, x.shape());
  const Tensor d = x.cast(DType::Float64);
  for (int64_t i = 0; i < x.numel(); ++i) y.data<double>()[i] = d.data<double>()[i] > threshold ? 1.0 : 0.0;
  return {y.cast(x.dtype())};
}

// ArrayFeatureExtractor: X's last axis at the indices Y, [..., F] -> [..., len(Y)]; a rank-1 X gives [1, len(Y)].
std::vector<Tensor> array_feature_extractor(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  check_x(ctx, x);
  if (idx.dtype() != DType::Int64) ctx.fail("input 'Y' is " + idx.describe() + ", expected int64 indices");
  if (x.rank() < 1) ctx.fail("input 'X' must have at least one axis, got " + x.describe());
  const std::vector<int64_t> at = idx.to_int64_vector();
  const int64_t f = x.dim(x.rank() - 1), rows = f == 0 ? 0 : x.numel() / f, m = int64_t(at.size());
  if (m == 0) ctx.fail("input 'Y' holds no index");
  for (int64_t i : at)
    if (i < 0 || i >= f) ctx.fail("input 'Y' holds index " + std::to_string(i) + ", outside [0, " + std::to_string(f) + ") of X's last axis");
  Shape shape = x.rank() == 1 ? Shape{1, m} : x.shape();
  shape.back() = m;
  Tensor y(x.dtype(), shape);
  const size_t es = dtype_size(x.dtype());
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(y.raw());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < m; ++j) std::memcpy(dst + (r * m + j) * es, src + (r * f + at[size_t(j)]) * es, es);
  return {y};
}


// Imputer: X's values equal to the replaced value (NaN: every NaN) become the imputed value of their feature,
// or the first imputed value where there is not one per feature (ONNX Runtime's rule). float32 with
// imputed_value_floats, int64 with imputed_value_int64s.
std::vector<Tensor> imputer(KernelContext& ctx) {
  const ir::Node& n = ctx.node;
  const Tensor& x = ctx.input(0);
  const bool floats = x.dtype() == DType::Float32;
  if (!floats && x.dtype() != DType::Int64) ctx.fail("input 'X' is " + x.describe() + ", expected float32 or int64");
  if (x.rank() < 1) ctx.fail("input 'X' must have at least one axis, got " + x.describe());
  const std::string name = floats ? "imputed_value_floats" : "imputed_value_int64s";
  std::vector<double> imputed;
  if (floats) for (float v : n.attr_floats(name)) imputed.push_back(v);
  else for (int64_t v : n.attr_ints(name)) imputed.push_back(double(v));
  if (imputed.empty()) ctx.fail("attribute '" + name + "' is missing or empty, for input 'X' of " + x.describe());
  const double replaced = floats ? n.attr_float("replaced_value_float", 0.0f) : double(n.attr_int("replaced_value_int64", 0));
  const int64_t f = x.rank() == 1 ? x.dim(0) : x.dim(1);
  const bool per_feature = int64_t(imputed.size()) == f;
  Tensor y = x.clone();
  visit_dtype(x.dtype(), [&]<class T>() {
    T* v = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double d = double(v[i]);
      if ((std::isnan(d) && std::isnan(replaced)) || d == replaced) v[i] = T(imputed[per_feature && f > 0 ? size_t(i % f) : 0]);
    }
  }, DTypeSet{DType::Float32, DType::Int64});
  return {y};
}

// OneHotEncoder: [..] -> float [.., categories], 1 at each value's category (cats_int64s; a float is converted to
// an integer first); a value of no category gives a row of zeros, or an error when zeros is 0.
std::vector<Tensor> one_hot_encoder(KernelContext& ctx) {
  const ir::Node& n = ctx.node;
  const Tensor& x = ctx.input(0);
  if (n.has_attr("cats_strings")) ctx.unsupported("attribute 'cats_strings': string categories are out of scope");
  check_x(ctx, x);
  if (x.rank() > 2) ctx.fail("input 'X' must have at most two axes, got " + x.describe());
  const std::vector<int64_t> cats = n.attr_ints("cats_int64s");
  if (cats.empty()) ctx.fail("attribute 'cats_int64s' is missing or empty");
  const bool zeros = n.attr_int("zeros", 1) != 0;
  std::map<int64_t, int64_t> column;
  for (size_t i = 0; i < cats.size(); ++i) column[cats[i]] = int64_t(i);  // a repeated category: its last column
  const int64_t k = int64_t(cats.size());
  Shape shape = x.shape();
  shape.push_back(k);
  Tensor y(DType::Float32, shape);  // zeros
  const Tensor d = x.cast(DType::Float64);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = d.data<double>()[i];
    // Outside int64 (NaN included) a float is no category.
    auto it = std::isfinite(v) && std::fabs(v) < 9.2e18 ? column.find(int64_t(v)) : column.end();
    if (it != column.end()) y.data<float>()[i * k + it->second] = 1.0f;
    else if (!zeros) ctx.fail("input 'X' holds " + std::to_string(v) + ", which is no category, and attribute 'zeros' is 0");
  }
  return {y};
}

// LabelEncoder (opsets 2-4, numbers only): each value of X looked up among the keys, replaced by the value at the
// same place, or the default. Keys and values from keys_int64s / keys_floats / keys_tensor and values_int64s /
// values_floats / values_tensor; a NaN key matches NaN.
std::vector<Tensor> label_encoder(KernelContext& ctx) {
  const ir::Node& n = ctx.node;
  const Tensor& x = ctx.input(0);
  for (const char* a : {"keys_strings", "values_strings", "classes_strings"})
    if (n.has_attr(a)) ctx.unsupported(std::string("attribute '") + a + "': string labels are out of scope");
  // Each of keys and values as doubles with its type.
  auto list = [&](const std::string& what) -> std::pair<std::vector<double>, DType> {
    if (const Tensor* t = n.attr_tensor(what + "_tensor")) return {ops::to_doubles(*t), t->dtype()};
    if (n.has_attr(what + "_int64s")) {
      std::vector<double> v;
      for (int64_t i : n.attr_ints(what + "_int64s")) v.push_back(double(i));
      return {v, DType::Int64};
    }
    if (n.has_attr(what + "_floats")) {
      const std::vector<float> f = n.attr_floats(what + "_floats");
      return {{f.begin(), f.end()}, DType::Float32};
    }
    ctx.fail("attribute '" + what + "_int64s', '" + what + "_floats' or '" + what + "_tensor' is missing");
  };
  const auto [keys, key_type] = list("keys");
  const auto [values, value_type] = list("values");
  if (keys.size() != values.size())
    ctx.fail("there are " + std::to_string(keys.size()) + " keys but " + std::to_string(values.size()) + " values");
  if (x.dtype() != key_type) ctx.fail("input 'X' is " + x.describe() + ", expected the keys' type " + std::string(dtype_name(key_type)));
  double fallback = value_type == DType::Float32 || value_type == DType::Float64 ? n.attr_float("default_float", -0.0f)
                                                                                 : double(n.attr_int("default_int64", -1));
  if (const Tensor* t = n.attr_tensor("default_tensor")) {
    if (t->numel() != 1) ctx.fail("attribute 'default_tensor' must hold one value, got " + t->describe());
    fallback = t->double_at(0);
  }
  std::map<double, double> table;
  std::optional<double> nan_value;  // the value of a NaN key
  for (size_t i = 0; i < keys.size(); ++i) {
    if (std::isnan(keys[i])) nan_value = values[i];
    else table.emplace(keys[i], values[i]);  // a repeated key: its first value
  }
  const Tensor d = x.cast(DType::Float64);
  Tensor y(DType::Float64, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = d.data<double>()[i];
    auto it = table.find(v);
    y.data<double>()[i] = std::isnan(v) ? nan_value.value_or(fallback) : it != table.end() ? it->second : fallback;
  }
  return {y.cast(value_type)};
}

// The SVMs' kernel (kernel_type, kernel_params = [gamma, coef0, degree]) between a row and a support vector:
// LINEAR x . v, POLY (gamma x . v + coef0)^degree, RBF exp(-gamma |x - v|^2), SIGMOID tanh(gamma x . v + coef0).
struct SvmKernel {
  enum class Type { Linear, Poly, Rbf, Sigmoid } type = Type::Linear;
  double gamma = 0, coef0 = 0, degree = 0;
  double operator()(const double* x, const float* v, int64_t f) const {
    double dot = 0, dist = 0;
    for (int64_t k = 0; k < f; ++k) dot += x[k] * v[k], dist += (x[k] - v[k]) * (x[k] - v[k]);
    switch (type) {
      case Type::Linear: return dot;
      case Type::Poly: return std::pow(gamma * dot + coef0, degree);
      case Type::Rbf: return std::exp(-gamma * dist);
      case Type::Sigmoid: break;
    }
    return std::tanh(gamma * dot + coef0);
  }
};

// The node's kernel; `linear`: LINEAR whatever kernel_type says (the models without support vectors).
SvmKernel svm_kernel(const KernelContext& ctx, bool linear) {
  static const std::map<std::string, SvmKernel::Type> types{{"LINEAR", SvmKernel::Type::Linear}, {"POLY", SvmKernel::Type::Poly},
                                                           {"RBF", SvmKernel::Type::Rbf}, {"SIGMOID", SvmKernel::Type::Sigmoid}};
  SvmKernel k;
  const std::string name = linear ? "LINEAR" : ctx.node.attr_string("kernel_type", "LINEAR");
  auto it = types.find(name);
  if (it == types.end()) ctx.fail("attribute 'kernel_type' is '" + name + "', expected LINEAR, POLY, RBF or SIGMOID");
  k.type = it->second;
  const std::vector<float> params = ctx.node.attr_floats("kernel_params");
  if (!params.empty() && params.size() != 3)
    ctx.fail("attribute 'kernel_params' must hold gamma, coef0 and degree, got " + std::to_string(params.size()) + " values");
  if (!params.empty()) k.gamma = params[0], k.coef0 = params[1], k.degree = params[2];
  return k;
}

// SVMRegressor: with support vectors (n_supports > 0), sum_j coefficients[j] K(x, sv_j) + rho[0]; without,
// x . coefficients + rho[0]. one_class: +1 or -1 by the sign. As in ONNX Runtime, post_transform is not
// applied. Y [N, 1].
std::vector<Tensor> svm_regressor(KernelContext& ctx) {
  const ir::Node& n = ctx.node;
  const Rows x = rows_of(ctx, ctx.input(0));
  const std::vector<float> sv = n.attr_floats("support_vectors"), coef = n.attr_floats("coefficients"), rho = n.attr_floats("rho");
  const int64_t supports = n.attr_int("n_supports", 0);
  const SvmKernel kernel = svm_kernel(ctx, supports <= 0);
  if (rho.empty()) ctx.fail("attribute 'rho' is missing");
  if (supports < 0) ctx.fail("attribute 'n_supports' must not be negative");
  if (supports > 0 ? int64_t(coef.size()) != supports || int64_t(sv.size()) != supports * x.f : int64_t(coef.size()) != x.f)
    ctx.fail(supports > 0 ? "attributes 'coefficients' and 'support_vectors' must hold n_supports values and n_supports x features (" +
                                std::to_string(supports) + " x " + std::to_string(x.f) + "), got " + std::to_string(coef.size()) + " and " +
                                std::to_string(sv.size())
                          : "attribute 'coefficients' has " + std::to_string(coef.size()) + " values, expected one per feature (" +
                                std::to_string(x.f) + ")");
  const bool one_class = n.attr_int("one_class", 0) != 0;
  Tensor y(DType::Float32, {x.n, 1});
  for (int64_t r = 0; r < x.n; ++r) {
    double out = rho[0];
    if (supports == 0)  // the linear form: the coefficients are the one vector, rho its bias
      out += kernel(x.row(r), coef.data(), x.f);
    for (int64_t j = 0; j < supports; ++j) out += coef[size_t(j)] * kernel(x.row(r), sv.data() + j * x.f, x.f);
    y.data<float>()[r] = float(one_class ? (out > 0 ? 1.0 : -1.0) : out);
  }
  return {y};
}

// Pairwise coupling (Wu, Lin and Weng, "Probability estimates for multi-class classification by pairwise
// coupling", method 2, as libsvm and ONNX Runtime's multiclass_probability solve it, in float32 like them):
// r[i * c + j] the probability of class i against j; p the c class probabilities.
void pairwise_coupling(int64_t c, const std::vector<float>& r, float* p) {
  std::vector<float> q(static_cast<size_t>(c * c)), qp(static_cast<size_t>(c));
  const float eps = 0.005f / float(c);
  for (int64_t i = 0; i < c; ++i) {
    p[i] = 1.0f / float(c);
    for (int64_t j = 0; j < i; ++j) {
      q[size_t(i * c + i)] += r[size_t(j * c + i)] * r[size_t(j * c + i)];
      q[size_t(i * c + j)] = q[size_t(j * c + i)];
    }
    for (int64_t j = i + 1; j < c; ++j) {
      q[size_t(i * c + i)] += r[size_t(j * c + i)] * r[size_t(j * c + i)];
      q[size_t(i * c + j)] = -r[size_t(j * c + i)] * r[size_t(i * c + j)];
    }
  }
  for (int iter = 0; iter < 100; ++iter) {
    float pqp = 0;
    for (int64_t i = 0; i < c; ++i) {
      qp[size_t(i)] = 0;
      for (int64_t j = 0; j < c; ++j) qp[size_t(i)] += q[size_t(i * c + j)] * p[j];
      pqp += p[i] * qp[size_t(i)];
    }
    float max_error = 0;
    for (int64_t i = 0; i < c; ++i) max_error = std::max(max_error, std::fabs(qp[size_t(i)] - pqp));
    if (max_error < eps) break;
    for (int64_t i = 0; i < c; ++i) {
      const float diff = (-qp[size_t(i)] + pqp) / q[size_t(i * c + i)];
      p[i] += diff;
      pqp = (pqp + diff * (diff * q[size_t(i * c + i)] + 2 * qp[size_t(i)])) / (1 + diff) / (1 + diff);
      for (int64_t j = 0; j < c; ++j) {
        qp[size_t(j)] = (qp[size_t(j)] + diff * q[size_t(i * c + j)]) / (1 + diff);
        p[j] /= (1 + diff);
      }
    }
  }
}

// SVMClassifier, as ONNX Runtime computes it (svmclassifier.cc there).
// - Without support vectors (vectors_per_class empty): linear scores x . coefficients[k] + rho[0] per class;
//   the label of the largest (two classes: the second where the score passes 0.5 with all weights positive,
//   or 0 with mixed ones); Z [N, classes] after the post transform.
// - With support vectors (libsvm's one-against-one): per pair of classes i < j, the decision
//   sum over i's vectors of coefficients[j - 1][v] K(x, v) + sum over j's of coefficients[i][v] K(x, v) + rho[pair],
//   a vote for i where positive, else for j; the label is the most voted class (the first of a tie).
//   Without prob_a / prob_b, Z holds the decisions ([N, pairs]; two classes: [-d, d], [1 - p, p] with
//   p = logistic(d) under LOGISTIC, and [1 - d, d] under SOFTMAX or SOFTMAX_ZERO); with them, the class probabilities by
//   Platt's sigmoid per pair (1 - logistic(d a + b), kept within [1e-7, 1 - 1e-7]) and pairwise coupling.
// PROBIT of two classes' single decision is refused: ONNX Runtime leaves the second score unwritten.
std::vector<Tensor> svm_classifier(KernelContext& ctx) {
  const ir::Node& n = ctx.node;
  const std::vector<int64_t> labels = class_labels(ctx, "classlabels_ints");
  const int64_t c = int64_t(labels.size());
  const Rows x = rows_of(ctx, ctx.input(0));
  const std::vector<float> sv = n.attr_floats("support_vectors"), coef = n.attr_floats("coefficients"), rho = n.attr_floats("rho"),
                           pa = n.attr_floats("prob_a"), pb = n.attr_floats("prob_b");
  const std::vector<int64_t> per_class = n.attr_ints("vectors_per_class");
  const Post post = post_from_name(ctx, n.attr_string("post_transform", "NONE"));
  if (coef.empty()) ctx.fail("attribute 'coefficients' is empty");
  if (rho.empty()) ctx.fail("attribute 'rho' is missing");
  if (pa.size() != pb.size())
    ctx.fail("attributes 'prob_a' and 'prob_b' have " + std::to_string(pa.size()) + " and " + std::to_string(pb.size()) + " values, expected as many");
  int64_t vectors = 0;
  std::vector<int64_t> first;  // each class's first support vector
  for (int64_t v : per_class) {
    if (v < 0) ctx.fail("attribute 'vectors_per_class' has a negative count");
    first.push_back(vectors);
    vectors += v;
  }
  const bool svc = vectors > 0;
  const SvmKernel kernel = svm_kernel(ctx, !svc);
  const int64_t pairs = c * (c - 1) / 2;
  const bool proba = !pa.empty();
  if (svc) {
    if (int64_t(per_class.size()) != c)
      ctx.fail("attribute 'vectors_per_class' has " + std::to_string(per_class.size()) + " counts for " + std::to_string(c) + " classes");
    if (int64_t(sv.size()) != vectors * x.f)
      ctx.fail("attribute 'support_vectors' has " + std::to_string(sv.size()) + " values, expected vectors x features = " +
               std::to_string(vectors) + " x " + std::to_string(x.f));
    if (int64_t(coef.size()) < (c - 1) * vectors)
      ctx.fail("attribute 'coefficients' has " + std::to_string(coef.size()) + " values, expected (classes - 1) x vectors = " +
               std::to_string((c - 1) * vectors));
    if (int64_t(rho.size()) < pairs) ctx.fail("attribute 'rho' has " + std::to_string(rho.size()) + " values, expected one per pair of classes (" + std::to_string(pairs) + ")");
    if (proba && int64_t(pa.size()) < pairs)
      ctx.fail("attribute 'prob_a' has " + std::to_string(pa.size()) + " values, expected one per pair of classes (" + std::to_string(pairs) + ")");
    if (!proba && c == 2 && post == Post::Probit)
      ctx.unsupported("post_transform PROBIT of two classes' single decision: ONNX Runtime 1.30 leaves the second score unwritten, "
                      "so there is no reference to follow");
  } else if (int64_t(coef.size()) != c * x.f) {
    ctx.fail("attribute 'coefficients' has " + std::to_string(coef.size()) + " values, expected classes x features = " +
             std::to_string(c) + " x " + std::to_string(x.f));
  }
  const bool all_positive = std::all_of(coef.begin(), coef.end(), [](float w) { return w >= 0; });
  const int64_t width = svc && !proba ? (c > 2 ? pairs : 2) : c;
  Tensor y(DType::Int64, {x.n});
  Tensor z(DType::Float32, {x.n, width});
  std::vector<double> kv(static_cast<size_t>(vectors)), s(static_cast<size_t>(std::max(c, pairs)));
  std::vector<float> decision(static_cast<size_t>(pairs)), r(static_cast<size_t>(c * c));
  std::vector<int64_t> votes(static_cast<size_t>(c));
  for (int64_t row = 0; row < x.n; ++row) {
    float* zr = z.data<float>() + row * width;
    // Z's row: the first `count` scores of s after the post transform.
    auto write_scores = [&](int64_t count) {
      post_transform(post, s.data(), count);
      for (int64_t k = 0; k < count; ++k) zr[k] = float(s[size_t(k)]);
    };
    int64_t best = 0;
    if (!svc) {  // the linear form: one score per class, rho[0] the bias of each
      linear_scores(coef, {}, x.row(row), x.f, s.data(), c);
      for (int64_t k = 0; k < c; ++k) s[size_t(k)] = float(s[size_t(k)] + rho[0]);
      best = std::max_element(s.begin(), s.begin() + c) - s.begin();
      const double top = s[size_t(best)];
      y.data<int64_t>()[row] = c == 2 && !proba && ((all_positive && top >= 0.5) || (!all_positive && top > 0)) ? labels[1] : labels[size_t(best)];
      write_scores(c);
      continue;
    }
    for (int64_t v = 0; v < vectors; ++v) kv[size_t(v)] = float(kernel(x.row(row), sv.data() + v * x.f, x.f));
    std::fill(votes.begin(), votes.end(), 0);
    int64_t pair = 0;
    for (int64_t i = 0; i < c; ++i)
      for (int64_t j = i + 1; j < c; ++j, ++pair) {
        double d = rho[size_t(pair)];
        for (int64_t v = first[size_t(i)]; v < first[size_t(i)] + per_class[size_t(i)]; ++v) d += coef[size_t((j - 1) * vectors + v)] * kv[size_t(v)];
        for (int64_t v = first[size_t(j)]; v < first[size_t(j)] + per_class[size_t(j)]; ++v) d += coef[size_t(i * vectors + v)] * kv[size_t(v)];
        decision[size_t(pair)] = float(d);
        ++votes[size_t(d > 0 ? i : j)];
      }
    best = std::max_element(votes.begin(), votes.end()) - votes.begin();
    y.data<int64_t>()[row] = labels[size_t(best)];
    if (proba) {
      pair = 0;
      for (int64_t i = 0; i < c; ++i)
        for (int64_t j = i + 1; j < c; ++j, ++pair) {
          const float p = std::clamp(float(1 - logistic(double(decision[size_t(pair)]) * pa[size_t(pair)] + pb[size_t(pair)])), 1e-7f, 1 - 1e-7f);
          r[size_t(i * c + j)] = p, r[size_t(j * c + i)] = 1 - p;
        }
      pairwise_coupling(c, r, zr);
      std::copy(zr, zr + c, s.begin());
      write_scores(c);
    } else if (c == 2) {
      const float d = decision[0], p = post == Post::Logistic ? float(logistic(d)) : d;
      zr[0] = post == Post::None ? -d : 1 - p, zr[1] = p;
    } else {
      std::copy(decision.begin(), decision.end(), s.begin());
      write_scores(pairs);
    }
  }
  return {y, z};
}

// FeatureVectorizer: the inputs' rows side by side, input i giving inputdimensions[i] columns (its first
// ones, zeros where it has fewer). Y float [N, sum of inputdimensions].
std::vector<Tensor> feature_vectorizer(KernelContext& ctx) {
  const std::vector<int64_t> dims = ctx.node.attr_ints("inputdimensions");
  if (dims.size() != ctx.num_inputs())
    ctx.fail("attribute 'inputdimensions' has " + std::to_string(dims.size()) + " values for " + std::to_string(ctx.num_inputs()) + " inputs");
  int64_t total = 0, rows = -1;
  std::vector<Rows> in;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (dims[i] < 0) ctx.fail("attribute 'inputdimensions' has a negative value");
    total += dims[i];
    in.push_back(rows_of(ctx, ctx.input(i)));
    if (rows >= 0 && in.back().n != rows)
      ctx.fail("input " + std::to_string(i) + " has " + std::to_string(in.back().n) + " rows, the first " + std::to_string(rows));
    rows = in.back().n;
  }
  Tensor y(DType::Float32, {std::max<int64_t>(rows, 0), total});  // zeros
  float* o = y.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    int64_t at = r * total;
    for (size_t i = 0; i < in.size(); ++i) {
      for (int64_t k = 0; k < std::min(dims[i], in[i].f); ++k) o[at + k] = float(in[i].row(r)[k]);
      at += dims[i];
    }
  }
  return {y};
}
}  // namespace

void register_ml(KernelRegistry& r) {
  r.add("TreeEnsembleRegressor", tree_ensemble_regressor, ir::kMlDomain);
  r.add("TreeEnsemble", tree_ensemble, ir::kMlDomain);
  r.add("TreeEnsembleClassifier", tree_ensemble_classifier, ir::kMlDomain);
  r.add("LinearClassifier", linear_classifier, ir::kMlDomain);
  r.add("LinearRegressor", linear_regressor, ir::kMlDomain);
  r.add("Scaler", scaler, ir::kMlDomain);
  r.add("Normalizer", normalizer, ir::kMlDomain);
  r.add("Binarizer", binarizer, ir::kMlDomain);
  r.add("ArrayFeatureExtractor", array_feature_extractor, ir::kMlDomain);
  r.add("Imputer", imputer, ir::kMlDomain);
  r.add("OneHotEncoder", one_hot_encoder, ir::kMlDomain);
  r.add("LabelEncoder", label_encoder, ir::kMlDomain);
  r.add("SVMRegressor", svm_regressor, ir::kMlDomain);
  r.add("SVMClassifier", svm_classifier, ir::kMlDomain);
  r.add("FeatureVectorizer", feature_vectorizer, ir::kMlDomain);
}

}  // namespace onnxgpu::cpu
