#include "sim/platform/card_link.h"

#include "hw/card/card.h"

namespace hpusim::platform {

void CardLink::host_write(uint64_t bus_address, const void* data, uint64_t bytes) {
  cosim_.on_sim_thread([&] { card_.memory().host_memory().write(bus_address, data, bytes); });
}

void CardLink::host_read(uint64_t bus_address, void* data, uint64_t bytes) {
  cosim_.on_sim_thread([&] { card_.memory().host_memory().read(bus_address, data, bytes); });
}

void CardLink::host_fill(uint64_t bus_address, uint8_t value, uint64_t bytes) {
  cosim_.on_sim_thread([&] { card_.memory().host_memory().fill(bus_address, value, bytes); });
}

void CardLink::pin_user_pages(uint64_t bus_address, uint8_t* memory, uint64_t bytes) {
  cosim_.on_sim_thread([&] { card_.memory().host_memory().pin(bus_address, memory, bytes); });
}

void CardLink::unpin_user_pages(uint64_t bus_address) {
  cosim_.on_sim_thread([&] { card_.memory().host_memory().unpin(bus_address); });
}

void CardLink::reset_card() {
  cosim_.on_sim_thread([&] { card_.reset(); });
}

}  // namespace hpusim::platform
