/* A client in C: proves synapse_api.h compiles as C99 and that its calls link and run. */
#include <stddef.h>
#include <string.h>

#include "synapse_api.h"

static synStatus add_tensor(synTensor* tensor, const char* name, unsigned d0, unsigned d1, synSectionHandle section) {
  synTensorDescriptor desc;
  memset(&desc, 0, sizeof desc);
  desc.m_dataType = syn_type_single;
  desc.m_dims = 2;
  desc.m_sizes[0] = d0;
  desc.m_sizes[1] = d1;
  desc.m_name = name;
  return synTensorCreate(tensor, &desc, section, 0);
}

/* Builds and validates x -> relu -> y (f32 [8, 4], both persistent); *hash gets its structural
 * hash. The first failing call's status, or synSuccess. */
synStatus c_client_relu_graph(uint64_t* hash) {
  synGraphHandle graph;
  synSectionHandle section;
  synTensor x, y;
  synStatus status = synGraphCreate(&graph, synDeviceGaudi);
  if (status != synSuccess) return status;
  if ((status = synSectionCreate(&section, 0, graph)) == synSuccess &&
      (status = add_tensor(&x, "x", 8, 4, section)) == synSuccess &&
      (status = add_tensor(&y, "y", 8, 4, section)) == synSuccess &&
      (status = synNodeCreate(graph, &x, &y, 1, 1, NULL, 0, "relu_fwd_f32", "relu", NULL, NULL)) == synSuccess &&
      (status = hpusim_graphValidate(graph)) == synSuccess)
    status = hpusim_graphStructuralHash(graph, hash);
  synGraphDestroy(graph);
  return status;
}

/* A NULL graph pointer is refused with synInvalidArgument and a message. */
int c_client_null_graph_is_refused(void) {
  return synGraphCreate(NULL, synDeviceGaudi) == synInvalidArgument && hpusim_lastErrorMessage()[0] != '\0';
}
