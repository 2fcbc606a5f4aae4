// The CFG space: the register window (memory_map.cfg_base, 64 MB on HL-205) where every engine's
// registers live. Blocks claim an address range and handle 32-bit register reads and writes;
// an access to no block, or not 4-byte aligned and sized, is answered with an error response.
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include <functional>
#include <string>
#include <vector>

#include "hw/common/mem_protocol.h"

namespace hpusim::hw {

class RegisterBlock {
 public:
  virtual ~RegisterBlock() = default;
  // `offset` is relative to the block's base. `at_ps` is the time the access takes effect.
  // Returning false makes the access fail with an error response.
  virtual bool read_register(uint64_t offset, uint32_t& value, Picoseconds at_ps) = 0;
  virtual bool write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) = 0;
};

struct CfgSpaceStats {
  uint64_t reads = 0;
  uint64_t writes = 0;
  uint64_t errors = 0;
};

class CfgSpace : public sc_core::sc_module {
 public:
  CfgSpace(sc_core::sc_module_name name, uint64_t base, uint64_t size, Picoseconds access_ps);

  tlm_utils::simple_target_socket<CfgSpace> socket;

  // Claims [base, base + size) (absolute device addresses) for `block`.
  void attach(const std::string& name, uint64_t base, uint64_t size, RegisterBlock& block);

  const CfgSpaceStats& stats() const { return stats_; }

 private:
  struct Mapping {
    std::string name;
    uint64_t base;
    uint64_t end;
    RegisterBlock* block;
  };
  tlm::tlm_sync_enum forward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  unsigned debug_transport(tlm::tlm_generic_payload& trans);
  bool access(tlm::tlm_generic_payload& trans, Picoseconds at_ps);
  const Mapping* find(uint64_t address) const;

  uint64_t base_;
  uint64_t size_;
  Picoseconds access_ps_;
  std::vector<Mapping> mappings_;
  CfgSpaceStats stats_;
};

}  // namespace hpusim::hw
