// The hpusim memory protocol: TLM-2.0 non-blocking transport with pipelined, time-annotated
// requests. Every memory-mapped block (fabric, HBM, SRAM, PCIe, CFG space) speaks it.
//
//  * An initiator sends nb_transport_fw(trans, BEGIN_REQ, delay): the request reaches the callee
//    at sc_time_stamp() + delay. The callee returns TLM_ACCEPTED. Unlike the base protocol, an
//    initiator may have many requests in flight on one socket (it bounds its own window); there is
//    no END_REQ.
//  * The target answers with nb_transport_bw(trans, BEGIN_RESP, delay): the response is complete
//    at sc_time_stamp() + delay. The target may do so from inside nb_transport_fw. The initiator
//    returns TLM_COMPLETED; there is no END_RESP.
//  * Data moves when the target accepts the request (the data path is functional; timing travels
//    separately through the annotations). Errors are reported in the response status.
//  * transport_dbg gives untimed access for loaders, debuggers and tests.
#pragma once

#include <systemc>
#include <tlm>

#include <cstdint>

namespace hpusim::hw {

using Picoseconds = uint64_t;

inline Picoseconds now_ps() { return sc_core::sc_time_stamp().value(); }

inline sc_core::sc_time ps_to_time(Picoseconds ps) { return sc_core::sc_time::from_value(ps); }

// The delay that makes an event happen at absolute time `at_ps` (never in the past).
inline sc_core::sc_time delay_until(Picoseconds at_ps) {
  Picoseconds now = now_ps();
  return sc_core::sc_time::from_value(at_ps > now ? at_ps - now : 0);
}

// SystemC must run with 1 ps resolution for these conversions; checked when a card is built.
void require_picosecond_resolution();

// Period of a clock in picoseconds, rounded to the nearest picosecond.
inline Picoseconds period_ps_from_mhz(uint32_t mhz) { return (1000000ull + mhz / 2) / mhz; }

// Who issued a transaction within its master port, when several threads share the port (the
// command processors of a QMAN): the fabric takes one port's same-time transactions in issuer
// order, then in the order each issuer made them, not in the order the kernel ran the threads
// (which a box split between processes may change). Without it a transaction is issuer 0's.
struct IssuerExtension : tlm::tlm_extension<IssuerExtension> {
  unsigned issuer = 0;
  tlm::tlm_extension_base* clone() const override { return new IssuerExtension(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override { *this = static_cast<const IssuerExtension&>(other); }
};
inline unsigned issuer_of(const tlm::tlm_generic_payload& trans) {
  const IssuerExtension* e = trans.get_extension<IssuerExtension>();
  return e != nullptr ? e->issuer : 0;
}

}  // namespace hpusim::hw
