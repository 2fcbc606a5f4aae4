// The graph compiler's back end: a validated graph to a recipe.
//
//   CompileTarget target;                       // from the device (runtime) or by hand
//   recipe::Recipe recipe;
//   Result r = compile_graph(graph, target, &recipe);
//
// Steps: validate (errors name node and tensor, nothing is produced), the topological order, the
// memory plan, the waits between nodes (node_dependencies), then per node in order:
//   - MME GUIDs: the node's MME job with section-relative addresses; a GEMM with enough rows is
//     split by rows (a batched GEMM by batch) across every MME engine, or sliced into row chunks
//     with the TPC node that reads it (slicing.h); the job's end message adds 1 to the node's
//     sync object (a sliced GEMM's second engine to one of its own);
//   - TPC GUIDs: the kernel library's instantiation, its program placed in the program image
//     (once per kernel variant), its index space spread over every TPC (one command buffer
//     each, each adding 1 to the node's sync object when done);
// each engine job first waits (monitor + fence) for the sync objects of the nodes it depends
// on. The last job, on the external queue, waits for every node nothing else waits for, then
// sets every sync object of the recipe back to 0, so the next launch starts clean.
#pragma once

#include "synapse/compiler/compile_target.h"
#include "synapse/graph/graph.h"
#include "synapse/recipe/recipe.pb.h"

namespace hpusim::synapse::compiler {

// Errors: validate()'s; synAllResourcesTaken when the graph needs more sync objects than the
// target gives; synFail for an internal lowering error (a bug, with its message).
graph::Result compile_graph(const graph::Graph& graph, const CompileTarget& target, recipe::Recipe* recipe);

}  // namespace hpusim::synapse::compiler
