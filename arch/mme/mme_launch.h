// The command buffer an MME master's QMAN runs for one job (as the runtime builds it): WREG_32s
// of the job's descriptor words into the MME CTRL block, then CMD EXECUTE behind an engine
// barrier (so a job starts after the previous one on this engine ended). Plain C++.
#pragma once

#include <cstdint>
#include <vector>

#include "arch/mme/mme_job.h"

namespace hpusim::mme {

// `job.so_address` / `job.so_message` should already name the end-of-job message (for example
// qman::sob_write_value(1, true) to a SOB). Throws std::invalid_argument for a job that
// validate() rejects with `geometries` geometries.
std::vector<uint8_t> build_mme_command_buffer(const MmeJob& job, uint32_t geometries);

}  // namespace hpusim::mme
