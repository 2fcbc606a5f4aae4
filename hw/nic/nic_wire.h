// What travels on a NIC link (hw/nic): a TLM generic payload carrying a packet's payload bytes,
// with this header as its extension. Data packets are routed by `dest`; a credit goes back one hop
// (the receive buffer of the link's far end has room for one more packet); an acknowledgement goes
// end to end to `dest` (the data's source) once the data is written.
#pragma once

#include <tlm>

#include <cstdint>

namespace hpusim::hw {

// A port's address in its box: card * 256 + port.
constexpr uint32_t nic_address(uint32_t card, uint32_t port) { return card * 256 + port; }

struct NicHeader : tlm::tlm_extension<NicHeader> {
  // Reset: the source port was reset; its packets sent before are dropped at the far end (a
  // direct link's connection starts again, as RoCE queue pairs are re-created).
  enum class Kind : uint8_t { Data, Credit, Ack, Reset };
  Kind kind = Kind::Data;
  uint32_t epoch = 0;     // the sender's connection epoch (Data, Reset; a direct link's Credit and Ack echo it)
  uint64_t send_id = 0;   // the source port's send the data belongs to (Data, Ack)
  uint32_t source = 0;    // the sending port's address (Data)
  uint32_t dest = 0;      // where it goes (Data: the receiving port; Ack: the data's source)

  tlm::tlm_extension_base* clone() const override { return new NicHeader(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override { *this = static_cast<const NicHeader&>(other); }
};

}  // namespace hpusim::hw
