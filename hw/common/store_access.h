// The functional half of a memory target: moves a transaction's data to or from the backing store
// that holds the target's contents (a mem::BackingStore, or anything with the same contains /
// read / write calls, such as the host memory behind the PCIe link, hw::HostMemory).
#pragma once

#include <tlm>

#include "hw/backing_store/backing_store.h"

namespace hpusim::hw {

// Reads or writes `trans` at `store_address` (the transaction's address translated into the
// store's address space). An access that does not fit in the store is answered with an address
// error and moves nothing; returns whether the access succeeded.
template <typename Store>
bool apply_to_store(Store& store, tlm::tlm_generic_payload& trans, uint64_t store_address) {
  const uint64_t length = trans.get_data_length();
  if (length == 0 || !store.contains(store_address, length)) {
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return false;
  }
  if (trans.is_write()) {
    store.write(store_address, trans.get_data_ptr(), length);
  } else if (trans.is_read()) {
    store.read(store_address, trans.get_data_ptr(), length);
  }
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
  return true;
}

}  // namespace hpusim::hw
