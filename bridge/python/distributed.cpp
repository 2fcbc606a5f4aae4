// hpusim._C's part for torch.distributed: the "hccl" backend as torch's Backend type, and the ids
// its communicators are made from (hpusim/torch/distributed/hccl.py registers it).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <cstring>
#include <string>

#include "bridge/core/process_group_hccl.h"

namespace py = pybind11;

// torch's classes are held by c10::intrusive_ptr (torch/csrc/utils/pybind.h declares the same).
PYBIND11_DECLARE_HOLDER_TYPE(T, c10::intrusive_ptr<T>, true)

namespace hpusim::bridge {

void add_distributed(py::module_& m) {
  m.def(
      "hccl_unique_id",
      [](std::vector<int> cards) {
        py::gil_scoped_release release;
        const hcclUniqueId id = hccl_unique_id(cards);
        py::gil_scoped_acquire acquire;
        return py::bytes(reinterpret_cast<const char*>(&id), sizeof(id));
      },
      py::arg("cards") = std::vector<int>{});
  m.def("create_hccl_backend", [](py::bytes id_bytes, int rank, int size,
                                  bool lazy_collectives) -> c10::intrusive_ptr<c10d::Backend> {
    const std::string raw = id_bytes;
    hcclUniqueId id{};
    if (raw.size() != sizeof(id)) {
      throw std::invalid_argument("hccl: a communicator id has " + std::to_string(sizeof(id)) + " bytes, not " +
                                  std::to_string(raw.size()));
    }
    std::memcpy(&id, raw.data(), sizeof(id));
    py::gil_scoped_release release;
    return c10::make_intrusive<ProcessGroupHccl>(id, rank, size, lazy_collectives);
  });
  m.def("release_hccl_communicators", [] {
    py::gil_scoped_release release;
    release_hccl_communicators();
  });
}

}  // namespace hpusim::bridge
