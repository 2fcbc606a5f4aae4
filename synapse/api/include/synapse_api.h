/* The public C API of hpusim's Synapse layer, the part that exists today: graphs, sections,
 * tensors and nodes over the graph model (synapse/graph), plus hpusim_ extensions to validate a
 * graph, read its structural hash and read the last error message. Usable from C and C++.
 * Every entry point returns a synStatus; see README.md for the checks and the param structs. */
#ifndef HPUSIM_SYNAPSE_API_H
#define HPUSIM_SYNAPSE_API_H

#include <stdint.h>

#include "synapse_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Graphs. synGraphCreate accepts synDeviceGaudi only (else synInvalidArgument). */
synStatus synGraphCreate(synGraphHandle* graph, synDeviceType deviceType);
/* Also ends the graph's section and tensor handles (tensors not yet used by a node survive). */
synStatus synGraphDestroy(synGraphHandle graph);

/* Sections: user memory. A tensor created in a section is persistent (a graph input or output)
 * and belongs to the section's graph; sectionDescriptor is reserved (0). */
synStatus synSectionCreate(synSectionHandle* section, uint64_t sectionDescriptor, synGraphHandle graph);
synStatus synSectionDestroy(synSectionHandle section);

/* Tensors. With a section the tensor joins that graph at once; without one (section NULL) it is
 * a workspace tensor that joins the graph of the first node that uses it. */
synStatus synTensorCreate(synTensor* tensor, const synTensorDescriptor* descriptor, synSectionHandle section,
                          uint64_t sectionOffset);
/* Ends the handle; a tensor a node already uses stays in its graph. */
synStatus synTensorDestroy(synTensor tensor);

/* Nodes. userParams / paramsSize: hpusim_GemmParams for gemm and batch_gemm,
 * hpusim_ConvolutionParams for spatial_convolution, dedx and dedw, an array of floats (the
 * kernel's scalar parameters) for TPC GUIDs; NULL and 0 for none. inputLayouts / outputLayouts:
 * NULL, or arrays of NULL or empty strings (layouts are not supported). */
synStatus synNodeCreate(synGraphHandle graph, const synTensor* inputs, const synTensor* outputs, uint32_t numInputs,
                        uint32_t numOutputs, const void* userParams, unsigned paramsSize, const char* guid,
                        const char* name, const char** inputLayouts, const char** outputLayouts);
synStatus synNodeCreateWithId(synGraphHandle graph, const synTensor* inputs, const synTensor* outputs,
                              uint32_t numInputs, uint32_t numOutputs, const void* userParams, unsigned paramsSize,
                              const char* guid, const char* name, synNodeId* nodeId, const char** inputLayouts,
                              const char** outputLayouts);

/* hpusim extensions (no graph compiler yet). */

/* Checks the whole graph; the first problem's status, its message in hpusim_lastErrorMessage. */
synStatus hpusim_graphValidate(synGraphHandle graph);
/* The graph's structural hash: the recipe cache's key (equal to the graph model's). */
synStatus hpusim_graphStructuralHash(synGraphHandle graph, uint64_t* hash);
/* The message of this thread's last failed call ("" after a successful one). Valid until the
 * thread's next call. */
const char* hpusim_lastErrorMessage(void);

#ifdef __cplusplus
}
#endif

#endif /* HPUSIM_SYNAPSE_API_H */
