#include "arch/mme/mme_launch.h"

#include <stdexcept>

#include "arch/packets/packets.h"

namespace hpusim::mme {

std::vector<uint8_t> build_mme_command_buffer(const MmeJob& job, uint32_t geometries) {
  const std::string error = validate(job, geometries);
  if (!error.empty()) throw std::invalid_argument("MME job: " + error);
  qman::CommandBufferBuilder b;
  // Pipelined descriptor writes; the command's RB waits for them.
  for (const auto& [offset, value] : encode(job)) b.wreg32(static_cast<uint16_t>(offset), value, qman::kNoBarriers);
  b.wreg32(static_cast<uint16_t>(desc::kCmd), desc::kCmdExecute, qman::Barriers{true, true, true});
  return b.take();
}

}  // namespace hpusim::mme
