#include "sim/zoo/workload.h"

#include "sim/zoo/bert_layer_workload.h"
#include "sim/zoo/conv_block_workload.h"

namespace hpusim::zoo {

std::unique_ptr<Workload> make_mlp_workload();

std::vector<std::string> workload_names() { return {"mlp", "bert-layer", "conv-block"}; }

std::unique_ptr<Workload> make_workload(const std::string& name) {
  if (name == "mlp") return make_mlp_workload();
  if (name == "bert-layer") return make_bert_layer_workload({});
  if (name == "conv-block") return make_conv_block_workload({});
  return nullptr;
}

}  // namespace hpusim::zoo
