// PageTableMemory over a backing store whose addresses are device physical addresses: tests write
// page tables straight into the card's memory with the driver's builder.
#pragma once

#include "driver/page_tables.h"
#include "hw/backing_store/backing_store.h"

namespace hpusim::test {

// PageTableMemory over a backing store whose addresses are device physical addresses.
class StorePageTableMemory : public driver::PageTableMemory {
 public:
  explicit StorePageTableMemory(mem::BackingStore& store) : store_(store) {}
  void write64(uint64_t pa, uint64_t value) override { store_.write(pa, &value, sizeof value); }
  uint64_t read64(uint64_t pa) override {
    uint64_t value = 0;
    store_.read(pa, &value, sizeof value);
    return value;
  }
  void zero(uint64_t pa, uint64_t bytes) override { store_.fill(pa, 0, bytes); }

 private:
  mem::BackingStore& store_;
};

}  // namespace hpusim::test
