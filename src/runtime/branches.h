// If nodes on a flag. An If runs on the CPU as control flow and takes every node of its branches there
// with it; Optimum's merged decoders hold their whole prompt and decode graphs in the two branches of an
// If whose condition is a bool graph input (use_cache_branch). Where the condition is such a flag, its
// value is known when the run starts, and the model with that If replaced by the branch the value takes
// is an ordinary graph: the session plans, captures and replays one per combination of flag values
// (session.cpp), each on the GPU like any other model.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxgpu::runtime {

// The flags: bool graph inputs (without an initializer) that an If of the main graph, or of a branch taken
// through such flags, has as its condition. Sorted.
std::vector<std::string> branch_flags(const ir::Model& model);

// The model with each If on one of `flags` replaced by the nodes of the branch its value takes (again inside
// a taken branch). A branch's own values and initializers are renamed "<If node>/<then|else>/<name>" (with "~2",
// "~3" after the node's name where two Ifs share one), so no branch's names meet another's or the outer graph's;
// an Identity gives each branch output the If's output name. Subgraphs inside a taken branch (a Loop's body, an
// If on a computed condition) read the renamed values.
// `taken`, when given, receives one line per If taken: "<node>: <flag>=<0|1>, <then|else>_branch".
ir::Model take_branches(const ir::Model& model, const std::map<std::string, bool>& flags,
                        std::vector<std::string>* taken = nullptr);

}  // namespace onnxgpu::runtime
