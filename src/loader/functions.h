// Model-local functions (ModelProto.functions): every node that calls one is replaced by the function's
// body, as ONNX's own inliner does, before the model becomes an ir::Model. So a model whose exporter
// kept modules or library ops as functions (torch's export_modules_as_functions, torch 2.1-2.4's
// dynamo_export, onnxscript) runs like its inlined form: every op of the body on its provider, fused
// and captured as any other node.
//   - The call's inputs and outputs take the places of the function's formal ones (an input the call
//     leaves out is an omitted optional input; an output it leaves out becomes an inner value); every
//     other value, and each body node's name, gets a prefix unique to the call.
//   - A body attribute that refers to one of the function's (ref_attr_name) takes the call's attribute
//     of that name, else the function's default for it (FunctionProto.attribute_proto), else is left out.
//   - Calls inside a body, and inside the subgraphs of If / Loop / Scan nodes, are inlined too (at most
//     64 levels deep, and at most 2^20 nodes in all); a function that calls itself is an error.
//   - The function's opset imports join the model's; one that imports a domain at another version than
//     the model does is refused (the nodes keep one opset per domain).
//   - Functions of one name told apart by `overload` (IR 10) are called by it.
// Ops the engine runs as a composition of others (composite_ops.h) are inlined the same way.
#pragma once
#include <onnx/onnx_pb.h>

namespace onnxgpu::loader {

// Inlines every call of mp.functions (and of the built-in compositions) in mp's graph and clears
// mp.functions. Throws InvalidArgument for a malformed function or call, NotImplemented for what is
// refused above.
void inline_functions(onnx::ModelProto& mp);

}  // namespace onnxgpu::loader
