#include "sim/zoo/workload.h"

namespace hpusim::zoo {

std::unique_ptr<Workload> make_mlp_workload();

std::vector<std::string> workload_names() { return {"mlp"}; }

std::unique_ptr<Workload> make_workload(const std::string& name) {
  if (name == "mlp") return make_mlp_workload();
  return nullptr;
}

}  // namespace hpusim::zoo
