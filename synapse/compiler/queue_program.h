// One queue's command buffer as the compiler builds it: waits on sync objects (a monitor and a
// fence), fragments from the engines' launch builders, and the patch points of every relocated
// address in them. Sync objects are numbered in the launch's own range (0 ..): every message to
// one and every monitor armed on one is a patch point (SECTION_SYNC_OBJECTS / SECTION_SYNC_GROUPS).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "arch/packets/packets.h"
#include "arch/regs/gaudi1_map.h"
#include "synapse/recipe/recipe.pb.h"

namespace hpusim::synapse::compiler {

// An address the runtime supplies: a section's base plus an addend.
struct Relocation {
  recipe::Section section = recipe::SECTION_WORKSPACE;
  uint32_t index = 0;      // SECTION_PERSISTENT: the tensor's ordinal
  uint64_t addend = 0;
  uint64_t placeholder() const { return addend; }   // what the fragment holds until patched
  // Sync object `index` of the launch's range: its address as if the range began at SOB 0.
  static Relocation sync_object(uint32_t index);
};

// WREG_32 register offsets (block-relative, as the packet carries them) that hold one half of a
// relocated address.
struct RegisterRelocation {
  Relocation target;
  recipe::Field field = recipe::FIELD_LOW32;
};
using RegisterRelocations = std::map<uint16_t, RegisterRelocation>;

// Block-relative register offsets [first, last).
struct RegisterRange {
  uint16_t first = 0, last = 0;
};

class QueueProgram {
 public:
  // `monitor`: the E_N monitor this queue's waits use (waits in one queue are sequential, so one
  // monitor serves them all: it is re-armed only after its fence passed). It must be the queue's
  // alone in every recipe (monitor_for_queue): launches in flight share the engines' queues.
  QueueProgram(regs::QueueId queue, bool external, uint32_t monitor);

  regs::QueueId queue() const { return queue_; }
  bool empty() const { return builder_.size() == 0; }

  // Blocks the queue until the launch's sync object `sob` reaches `target` (>=).
  void wait_for(uint32_t sob, uint16_t target);
  // Sets the launch's sync object `sob` to `value`; with `engine_barrier`, only once the queue's
  // engine (its DMA, on a DMA queue) has finished what earlier packets started.
  void set_sob(uint32_t sob, uint16_t value, bool engine_barrier = false);
  // Sets the launch's sync object `sob` back to 0 with a posted message: clears issue back to back,
  // not one message round trip each. Only for a job's tail, whose completion message (the driver's,
  // behind a message barrier) lands after them.
  void clear_sob(uint32_t sob);
  // Appends a fragment. Every WREG_32 packet in it whose register is in `relocations` becomes a
  // patch point (its value must already be the placeholder's half). Throws std::logic_error if a
  // packet does not decode or a relocated register holds something else.
  //
  // Registers in `reused` (block-relative offsets [first, last), plain storage the engine only
  // reads when a later trigger latches it, such as a TPC's QM descriptor set) are written only
  // when they would change: a WREG_32 giving one of them the value (or the relocation) an earlier
  // packet of this job already gave it is left out, as the graph compiler reuses the descriptor
  // set-up of the node before on the same engine.
  void append(const std::vector<uint8_t>& fragment, const RegisterRelocations& relocations,
              RegisterRange reused = {});

  // A linear DMA of `bytes` from `source` to `destination` (both patched 64-bit fields), then,
  // once the engine is done (engine barrier), ADD 1 to the launch's sync object `sob`. Pieces of at most
  // 1 GB (LIN_DMA sizes are 32-bit).
  void dma_copy(const Relocation& source, const Relocation& destination, uint64_t bytes, uint32_t sob);

  recipe::QueueJob take();

 private:
  regs::QueueId queue_;
  bool external_;
  uint32_t monitor_;
  qman::CommandBufferBuilder builder_;
  std::vector<recipe::Patch> patches_;
  // What this job's packets last wrote to each reused register: the value, and the relocation
  // when it is patched (then equal only with the same target and half).
  struct Written {
    uint32_t value = 0;
    bool relocated = false;
    recipe::Section section = recipe::SECTION_WORKSPACE;
    uint32_t index = 0;
    uint64_t addend = 0;
    recipe::Field field = recipe::FIELD_LOW32;
    bool operator==(const Written& o) const {
      return value == o.value && relocated == o.relocated &&
             (!relocated || (section == o.section && index == o.index && addend == o.addend && field == o.field));
    }
  };
  std::map<uint16_t, Written> written_;

  void add_patch(size_t offset, recipe::Field field, const Relocation& target);
  // A MSG_LONG to the launch's sync object `sob`, its address a patch point.
  void message_sob(uint32_t sob, uint32_t value, qman::Barriers barriers);
};

// The E_N monitor of `queue` in every recipe: monitor_base + its QMAN's index (stream 0 only;
// std::invalid_argument otherwise, or when it passes monitor_end).
uint32_t monitor_for_queue(regs::QueueId queue, uint32_t monitor_base, uint32_t monitor_end);

}  // namespace hpusim::synapse::compiler
