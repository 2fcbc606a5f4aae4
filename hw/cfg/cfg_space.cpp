#include "hw/cfg/cfg_space.h"

#include <cstring>
#include <stdexcept>

namespace hpusim::hw {

CfgSpace::CfgSpace(sc_core::sc_module_name name, uint64_t base, uint64_t size, Picoseconds access_ps)
    : sc_module(name), socket("socket"), base_(base), size_(size), access_ps_(access_ps) {
  socket.register_nb_transport_fw(this, &CfgSpace::forward);
  socket.register_transport_dbg(this, &CfgSpace::debug_transport);
}

void CfgSpace::attach(const std::string& name, uint64_t base, uint64_t size, RegisterBlock& block) {
  if (base < base_ || size == 0 || base + size > base_ + size_) {
    throw std::invalid_argument("CFG block " + name + " lies outside the CFG space");
  }
  for (const Mapping& m : mappings_) {
    if (base < m.end && m.base < base + size) {
      throw std::invalid_argument("CFG block " + name + " overlaps " + m.name);
    }
  }
  mappings_.push_back({name, base, base + size, &block});
}

const CfgSpace::Mapping* CfgSpace::find(uint64_t address) const {
  for (const Mapping& m : mappings_) {
    if (address >= m.base && address < m.end) return &m;
  }
  return nullptr;
}

bool CfgSpace::access(tlm::tlm_generic_payload& trans, Picoseconds at_ps) {
  const uint64_t address = trans.get_address();
  const unsigned length = trans.get_data_length();
  const Mapping* mapping = find(address);
  if (mapping == nullptr || length == 0 || length % 4 != 0 || address % 4 != 0 || address + length > mapping->end) {
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    ++stats_.errors;
    return false;
  }
  unsigned char* data = trans.get_data_ptr();
  for (unsigned i = 0; i < length; i += 4) {
    uint32_t value = 0;
    bool ok;
    if (trans.is_write()) {
      std::memcpy(&value, data + i, 4);
      ok = mapping->block->write_register(address + i - mapping->base, value, at_ps);
      ++stats_.writes;
    } else {
      ok = mapping->block->read_register(address + i - mapping->base, value, at_ps);
      std::memcpy(data + i, &value, 4);
      ++stats_.reads;
    }
    if (!ok) {
      trans.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
      ++stats_.errors;
      return false;
    }
  }
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
  return true;
}

tlm::tlm_sync_enum CfgSpace::forward(tlm::tlm_generic_payload& trans, tlm::tlm_phase&, sc_core::sc_time& delay) {
  const Picoseconds arrival = now_ps() + delay.value();
  access(trans, arrival);
  tlm::tlm_phase response = tlm::BEGIN_RESP;
  sc_core::sc_time back = delay_until(arrival + access_ps_);
  socket->nb_transport_bw(trans, response, back);
  return tlm::TLM_ACCEPTED;
}

unsigned CfgSpace::debug_transport(tlm::tlm_generic_payload& trans) {
  return access(trans, now_ps()) ? trans.get_data_length() : 0;
}

}  // namespace hpusim::hw
