#include "hw/common/mem_protocol.h"

#include <stdexcept>

namespace hpusim::hw {

void require_picosecond_resolution() {
  if (sc_core::sc_get_time_resolution() != sc_core::sc_time(1, sc_core::SC_PS)) {
    throw std::logic_error("hpusim models need a SystemC time resolution of 1 ps");
  }
}

}  // namespace hpusim::hw
