// Named wires between blocks, bound where the card is assembled (hw/card): a block drives its
// output port; the block the card bound it to receives. Driving an unbound port goes nowhere (a
// test bench without the receiver), and what a port is bound to can be asked (tests, traces).
//
//   InterruptLine  a level-less interrupt request into an interrupt controller (the device CPU's
//                  GIC): TPCn_KRN_ERR, MMEn_ERR, the MMU page fault
//   ResetLine      a block asking for the rest of the card to be reset (SW_ALL_RST)
//   RazwiPort      the fabric reporting an access nobody serves (RAZWI)
//   MsiPort        a PCIe link's message-signalled interrupts, into the host's root port
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "hw/common/mem_protocol.h"

namespace hpusim::hw {

// What receives interrupt lines: line numbers are the receiver's (the GIC's SPI numbers).
class InterruptTarget {
 public:
  virtual ~InterruptTarget() = default;
  virtual void raise_interrupt(uint32_t line, Picoseconds at) = 0;
};

class InterruptLine {
 public:
  explicit InterruptLine(std::string name) : name_(std::move(name)) {}
  void bind(InterruptTarget& target, uint32_t line) {
    target_ = &target;
    line_ = line;
  }
  void raise(Picoseconds at) const {
    if (target_ != nullptr) target_->raise_interrupt(line_, at);
  }
  const std::string& name() const { return name_; }
  bool bound() const { return target_ != nullptr; }
  uint32_t line() const { return line_; }

 private:
  std::string name_;
  InterruptTarget* target_ = nullptr;
  uint32_t line_ = 0;
};

// What a reset request reaches.
class ResetTarget {
 public:
  virtual ~ResetTarget() = default;
  virtual void reset_requested() = 0;
};

class ResetLine {
 public:
  explicit ResetLine(std::string name) : name_(std::move(name)) {}
  void bind(ResetTarget& target) { target_ = &target; }
  void assert_reset() const {
    if (target_ != nullptr) target_->reset_requested();
  }
  const std::string& name() const { return name_; }
  bool bound() const { return target_ != nullptr; }

 private:
  std::string name_;
  ResetTarget* target_ = nullptr;
};

// An access no target serves, as the fabric reports it.
struct IllegalAccess {
  std::string master;
  uint64_t address = 0;
  bool is_write = false;
  Picoseconds at = 0;
};

class RazwiTarget {
 public:
  virtual ~RazwiTarget() = default;
  virtual void report_razwi(const IllegalAccess& access) = 0;
};

class RazwiPort {
 public:
  explicit RazwiPort(std::string name) : name_(std::move(name)) {}
  void bind(RazwiTarget& target) { target_ = &target; }
  void report(const IllegalAccess& access) const {
    if (target_ != nullptr) target_->report_razwi(access);
  }
  const std::string& name() const { return name_; }
  bool bound() const { return target_ != nullptr; }

 private:
  std::string name_;
  RazwiTarget* target_ = nullptr;
};

// What receives message-signalled interrupts: the host's root port.
class MsiTarget {
 public:
  virtual ~MsiTarget() = default;
  virtual void deliver_msi(uint32_t vector, Picoseconds at) = 0;
};

// A PCIe link's MSI output: a 4-byte device write to the bound host bus address (the x86 MSI
// window, or the test's) is an interrupt with the written vector.
class MsiPort {
 public:
  explicit MsiPort(std::string name) : name_(std::move(name)) {}
  void bind(MsiTarget& target, uint64_t host_address) {
    target_ = &target;
    address_ = host_address;
  }
  bool is_msi(uint64_t host_address, uint64_t bytes) const {
    return target_ != nullptr && bytes == 4 && host_address == address_;
  }
  void send(uint32_t vector, Picoseconds at) const {
    if (target_ != nullptr) target_->deliver_msi(vector, at);
  }
  const std::string& name() const { return name_; }
  bool bound() const { return target_ != nullptr; }
  uint64_t address() const { return address_; }

 private:
  std::string name_;
  MsiTarget* target_ = nullptr;
  uint64_t address_ = 0;
};

}  // namespace hpusim::hw
