// embedding_fwd over rows of at most kEmbeddingRowVectors vectors, several rows a step: the
// rows' indices (prefetched rows ahead through the [1, N] view, so a load takes only its own), then
// every vector of every row loaded before any is stored, list-scheduled (body_schedule.h).
// embedding_fwd.s loads a row's index, waits a memory latency for it, and then copies the row one
// vector at a time through one register, each store waiting for its load; here a step waits about
// one memory latency for all its rows. Elements move as raw bits, as the kernel file's.
#include <sstream>

#include "synapse/tpc_kernels/body_schedule.h"
#include "synapse/tpc_kernels/glue_util.h"

namespace hpusim::synapse::tpc_kernels::glue {

std::string embedding_fwd_rows(unsigned rows, unsigned vectors, unsigned steps_ahead) {
  const auto v = [](unsigned n) { return "V" + std::to_string(n); };
  // Row j's index, in a ring of eight scalar registers: each is free again once its row's address
  // is set, so a step is not limited to eight rows.
  const auto s = [](unsigned n) { return "S" + std::to_string(8 + n % 8); };
  const std::string r = std::to_string(rows);
  // I3 the indices ([1, N]: (0, n)), I6 the index prefetches, I4 W's rows, I5 Y's.
  std::vector<std::string> b = {"iget_dim S16, I2 dim=1", "mul.i32 S16, S16, " + r, "imov I3, 0",
                                "imov_dim I3, S16 dim=1", "imov I5, I3"};
  // A row of one vector leaves dim 0 of I4 and I5 at 0: their other dims are all a row needs set.
  const bool one_vector = vectors == 1;
  if (one_vector) b.push_back("imov I4, 0");
  for (unsigned j = 0; j < rows; ++j) {
    b.push_back("ld_tnsr_s " + s(j) + ", I3, 1");
    b.push_back("iadd_dim I3, 1 dim=1");
    if (!one_vector) b.push_back("imov I4, 0");
    b.push_back("imov_dim I4, " + s(j) + " dim=1");
    for (unsigned x = 0; x < vectors; ++x) {
      if (x) b.push_back("iadd_dim I4, LANES dim=0");
      b.push_back("ld_tnsr " + v(j * vectors + x) + ", I4, 0");
    }
  }
  // The indices of the step steps_ahead on (I3 is at the next step's first row).
  b.push_back("imov I6, I3");
  b.push_back("iadd_dim I6, " + std::to_string((steps_ahead - 1) * rows) + " dim=1");
  for (unsigned j = 0; j < rows; ++j) {
    b.push_back("prefetch I6, 1");
    b.push_back("iadd_dim I6, 1 dim=1");
  }
  for (unsigned j = 0; j < rows; ++j) {
    if (!one_vector) b.push_back("imov_dim I5, 0 dim=0");
    if (j) b.push_back("iadd_dim I5, 1 dim=1");
    for (unsigned x = 0; x < vectors; ++x) {
      if (x) b.push_back("iadd_dim I5, LANES dim=0");
      b.push_back("st_tnsr I5, 2, " + v(j * vectors + x));
    }
  }
  std::ostringstream src;
  src << ".macro ROW_SETUP\n.endm\n.include \"nest.inc\"\n";
  // Before the nest: the indices of this core's first steps_ahead steps.
  src << "        ispace_offset I6\n        iget_dim S16, I6 dim=1\n        mul.i32 S16, S16, " << r
      << "\n        imov I6, 0\n        imov_dim I6, S16 dim=1\n        mov S16, 0\n        mov S17, "
      << steps_ahead * rows << "\n        loop S16, S17, indices_ahead\n"
      << "indices_ahead: prefetch I6, 1; iadd_dim I6, 1 dim=1\n        NEST_BEGIN\n";
  const std::vector<std::string> bundles = schedule::list_schedule(b, "iadd_dim I2, LANES dim=0", schedule::kPrefetchHitLatency);
  src << schedule::loop_body(bundles);
  src << "        NEST_END\n";
  return src.str();
}

std::string gather_step(unsigned elements, unsigned gdim) {
  const auto s = [](unsigned n) { return "S" + std::to_string(n); };   // index j: S<j>, element j: S<8 + j>
  std::ostringstream src;
  src << ".macro ROW_SETUP\n        imov I3, I2\n";
  for (unsigned j = 0; j < elements; ++j) src << "        ld_tnsr_s " << s(j) << ", I3, 1; iadd_dim I3, 1 dim=0\n";
  src << ".endm\n";
  std::vector<std::string> b = {"imov I4, I2"};
  for (unsigned j = 0; j < elements; ++j) {
    if (j && gdim != 0) b.push_back("iadd_dim I4, 1 dim=0");
    b.push_back("imov_dim I4, " + s(j) + " dim=" + std::to_string(gdim));
    b.push_back("ld_tnsr_s " + s(8 + j) + ", I4, 0");
  }
  b.insert(b.end(), {"imov I3, I2", "iadd_dim I3, LANES dim=0"});
  for (unsigned j = 0; j < elements; ++j) {
    b.push_back("ld_tnsr_s " + s(j) + ", I3, 1");
    b.push_back("iadd_dim I3, 1 dim=0");
  }
  b.push_back("imov I5, I2");
  for (unsigned j = 0; j < elements; ++j) {
    if (j) b.push_back("iadd_dim I5, 1 dim=0");
    b.push_back("st_tnsr_s I5, 2, " + s(8 + j));
  }
  src << ".macro GATHER_STEP\n";
  for (const std::string& bundle : schedule::list_schedule(b, "", 16)) src << "        " << bundle << "\n";
  src << ".endm\n";
  return src.str();
}

}  // namespace hpusim::synapse::tpc_kernels::glue
