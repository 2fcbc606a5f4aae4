// embedding_fwd over rows of at most kEmbeddingRowVectors vectors, software-pipelined: a step is
// `depth` + 1 groups of `rows` rows. A group's rows were prefetched `depth` groups before (their
// loads hit), its indices read then and staged in the SLM, and those indices prefetched
// `index_ahead` groups before that; so about depth x rows rows stay in flight while the core
// issues, and no load waits a memory latency in the steady state. (Waiting one latency a step for
// its rows, as a plain unrolled step does, reached 36 % of the HBM roofline on hl225's random
// 256 B rows; this, 54 %.) Elements move as raw bits, as the kernel file's.
#include <sstream>

#include "synapse/tpc_kernels/body_schedule.h"
#include "synapse/tpc_kernels/glue_util.h"

namespace hpusim::synapse::tpc_kernels::glue {

std::string embedding_fwd_pipelined(unsigned rows, unsigned vectors, unsigned depth, unsigned index_ahead) {
  const unsigned groups = depth + 1;   // a nest step: this many groups of `rows` rows
  const std::string per_step = std::to_string(groups * rows);
  const auto v = [](unsigned n) { return "V" + std::to_string(n); };
  const auto fetched = [](unsigned j) { return "S" + std::to_string(8 + j % 8); };   // an index read for its prefetch
  const auto staged = [](unsigned j) { return "S" + std::to_string(j % 8); };       // an index read back from the SLM
  const auto slot = [&](unsigned group, unsigned j) { return std::to_string(((group % groups) * rows + j) * 4); };
  const bool one_vector = vectors == 1;
  // The vectors of the row `index` through index register `reg`: loaded from `first_vector` on, or
  // (first_vector < 0) prefetched.
  const auto row_reads = [&](const std::string& reg, const std::string& index, int first_vector,
                             std::vector<std::string>& b) {
    if (!one_vector) b.push_back("imov_dim " + reg + ", 0 dim=0");
    b.push_back("imov_dim " + reg + ", " + index + " dim=1");
    for (unsigned x = 0; x < vectors; ++x) {
      if (x) b.push_back("iadd_dim " + reg + ", LANES dim=0");
      b.push_back(first_vector < 0 ? "prefetch " + reg + ", 0"
                                   : "ld_tnsr " + v(static_cast<unsigned>(first_vector) + x) + ", " + reg + ", 0");
    }
  };
  std::ostringstream src;
  src << ".macro ROW_SETUP\n.endm\n.include \"nest.inc\"\n";
  // Before the nest, from this core's first row: the indices of the first depth + index_ahead
  // groups prefetched, and the first `depth` groups' indices read, staged in the SLM and their
  // rows prefetched.
  src << "        ispace_offset I6\n        iget_dim S16, I6 dim=1\n        mul.i32 S16, S16, " << per_step
      << "\n        imov I6, 0\n        imov_dim I6, S16 dim=1\n        imov I3, I6\n        imov I7, 0\n"
      << "        mov S16, 0\n        mov S17, " << (depth + index_ahead) * rows << "\n        loop S16, S17, indices_ahead\n"
      << "indices_ahead: prefetch I6, 1; iadd_dim I6, 1 dim=1\n"
      << "        mov S18, 0\n        mov S16, 0\n        mov S17, " << depth * rows << "\n        loop S16, S17, rows_ahead\n"
      << "        ld_tnsr_s S8, I3, 1\n        iadd_dim I3, 1 dim=1\n";
  std::vector<std::string> first;
  row_reads("I7", "S8", -1, first);
  for (const std::string& line : first) src << "        " << line << "\n";
  src << "        st_slm S18, S8\nrows_ahead: add.i32 S18, S18, 4\n        NEST_BEGIN\n";
  // The step: I5 walks Y's rows, I3 the indices `depth` groups on, I6 those index_ahead further.
  std::vector<std::string> body;
  for (unsigned g = 0; g < groups; ++g) {
    std::vector<std::string> b;
    if (g == 0) {
      b = {"iget_dim S16, I2 dim=1", "mul.i32 S16, S16, " + per_step, "imov I5, 0", "imov_dim I5, S16 dim=1",
           "imov I3, I5", "iadd_dim I3, " + std::to_string(depth * rows) + " dim=1", "imov I6, I3",
           "iadd_dim I6, " + std::to_string(index_ahead * rows) + " dim=1"};
      if (one_vector) b.insert(b.end(), {"imov I4, 0", "imov I7, 0"});
    }
    // This group's rows, at the indices staged `depth` groups ago (their prefetches hit).
    for (unsigned j = 0; j < rows; ++j) {
      b.push_back("ld_slm " + staged(j) + ", " + slot(g, j));
      row_reads("I4", staged(j), static_cast<int>(j * vectors), b);
    }
    // The indices of the group `depth` on: staged, and their rows prefetched.
    for (unsigned j = 0; j < rows; ++j) {
      b.push_back("ld_tnsr_s " + fetched(j) + ", I3, 1");
      b.push_back("iadd_dim I3, 1 dim=1");
      row_reads("I7", fetched(j), -1, b);
      b.push_back("st_slm " + slot(g + depth, j) + ", " + fetched(j));
    }
    for (unsigned j = 0; j < rows; ++j) {
      b.push_back("prefetch I6, 1");
      b.push_back("iadd_dim I6, 1 dim=1");
    }
    for (unsigned j = 0; j < rows; ++j) {
      if (!one_vector) b.push_back("imov_dim I5, 0 dim=0");
      if (g || j) b.push_back("iadd_dim I5, 1 dim=1");
      for (unsigned x = 0; x < vectors; ++x) {
        if (x) b.push_back("iadd_dim I5, LANES dim=0");
        b.push_back("st_tnsr I5, 2, " + v(j * vectors + x));
      }
    }
    const std::vector<std::string> bundles =
        schedule::list_schedule(b, g + 1 == groups ? "iadd_dim I2, LANES dim=0" : "", schedule::kPrefetchHitLatency);
    body.insert(body.end(), bundles.begin(), bundles.end());
  }
  src << schedule::loop_body(body);
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
