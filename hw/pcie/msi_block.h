// The device side of interrupt delivery: the PCIE_MSI registers (a write to MSI_INTR_<vector>
// raises that vector; multi-MSI mode) and PCIE_CORE MSI_REQ (a write raises vector 0; single-MSI
// mode). The driver's completion MSG_PROT writes here; the PCIe link carries the MSI upstream.
#pragma once

#include "hw/cfg/cfg_space.h"
#include "hw/pcie/pcie_link.h"

namespace hpusim::hw {

class MsiBlock : public RegisterBlock {
 public:
  MsiBlock(PcieLink& link, uint32_t vectors) : link_(link), vectors_(vectors) {}

  bool read_register(uint64_t offset, uint32_t& value, Picoseconds) override {
    if (offset / 4 >= vectors_) return false;
    value = 0;
    return true;
  }
  bool write_register(uint64_t offset, uint32_t, Picoseconds at_ps) override {
    if (offset % 4 != 0 || offset / 4 >= vectors_) return false;
    link_.raise_msi(static_cast<uint32_t>(offset / 4), at_ps);
    return true;
  }

 private:
  PcieLink& link_;
  uint32_t vectors_;
};

// MSI_REQ of the PCIe core: any write raises vector 0.
class MsiRequestRegister : public RegisterBlock {
 public:
  explicit MsiRequestRegister(PcieLink& link) : link_(link) {}
  bool read_register(uint64_t offset, uint32_t& value, Picoseconds) override {
    value = 0;
    return offset == 0;
  }
  bool write_register(uint64_t offset, uint32_t, Picoseconds at_ps) override {
    if (offset != 0) return false;
    link_.raise_msi(0, at_ps);
    return true;
  }

 private:
  PcieLink& link_;
};

}  // namespace hpusim::hw
