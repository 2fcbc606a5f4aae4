// What a QMAN's command processor needs to know about the engine behind it for the engine barrier
// (EB bit of a packet): whether every piece of work committed so far has finished, and an event
// that fires when that becomes true. The DMA core implements it; engines without a model yet
// (TPC, MME) have no EngineStatus and count as always idle.
#pragma once

#include <cstdint>

#include <systemc>

namespace hpusim::hw {

class EngineStatus {
 public:
  virtual ~EngineStatus() = default;
  // True when the engine has nothing running or queued and is able to run (not halted). Called at
  // the current simulation time, from any process.
  virtual bool engine_idle() const = 0;
  // Notified whenever the engine becomes idle (a waiter re-checks engine_idle() when it fires).
  virtual const sc_core::sc_event& engine_idle_event() const = 0;
  // Free slots in the engine's commit queue (work beyond them is dropped); a CP holds a LIN_DMA
  // until one is free. The event is notified when a slot may have freed.
  virtual uint32_t engine_room() const { return UINT32_MAX; }
  virtual const sc_core::sc_event& engine_room_event() const { return engine_idle_event(); }
};

}  // namespace hpusim::hw
