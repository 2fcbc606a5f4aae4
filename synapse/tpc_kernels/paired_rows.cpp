// Softmax and its backward over short rows, six rows a step where the registers hold them, else
// four (two where neither divides the rows; BERT's attention rows: 128 elements): f32 rows of one
// or two vectors, bf16 rows of one vector (its two f32 halves, as io_bf16.inc widens it, in place
// of two f32 vectors). softmax_short.s keeps a row in registers, but
// its chain (max, exp, sum, scale) has little to overlap within one row; rows side by side give
// the list schedule (body_schedule.h) independent chains. The tensors are viewed as rows of a
// step's rows each;
// every row runs softmax_short.s's / softmax_bwd_short.s's operations in their order, so the
// results are bit-identical.
#include "synapse/tpc_kernels/body_schedule.h"
#include "synapse/tpc_kernels/glue_util.h"
#include "synapse/tpc_kernels/kernel_def.h"
#include "synapse/tpc_kernels/kernel_library.h"

#include <sstream>

namespace hpusim::synapse::tpc_kernels {

using namespace glue;

namespace {

// V0..V39 but V8 (the shuffle's all-zero lane index).
constexpr unsigned kBodyRegisters = 39;

// The registers paired_body takes for one row of `vectors` f32 vectors.
unsigned registers_per_row(bool backward, bool log, unsigned vectors, bool bf16) {
  if (backward) return 2 * vectors + 3 + (bf16 ? 1 : 0);   // x, e, acc, s, t (bf16: a second acc)
  return (log ? 2 * vectors : vectors) + 4;                 // x (log: the exps too), acc, s, m, sum
}

// The body of one step: `rows` rows of `vectors` f32 vectors each (bf16: one bf16 vector, its
// halves the two f32 vectors). Registers come from every V but V8 (the shuffle's all-zero lane
// index); the vectors' coordinates step along dim 0 in I3 (loads) and I4 (stores), a row after the
// other. A bf16 vector is loaded into its hi half's register and widened in place; the result
// is narrowed into its lo half's register and stored from there. The halves' sums are io_bf16.inc's:
// each half on an accumulator of its own, then added (the forward's max and sum of two vectors
// are that already).
std::vector<std::string> paired_body(bool backward, bool log, unsigned vectors, unsigned rows, bool bf16) {
  std::vector<std::string> b;
  unsigned next = 0;
  auto reg = [&]() {
    if (next == 8) ++next;
    return "V" + std::to_string(next++);
  };
  b.push_back("imov I3, I2");
  b.push_back("imov I4, I2");
  const std::string vector_lanes = bf16 ? "(2 * F32_LANES)" : "F32_LANES";
  // f32: `v` one vector. bf16: v[0], v[1] the halves of one.
  const auto load = [&](const std::vector<std::string>& v, unsigned tensor, bool step) {
    b.push_back("ld_tnsr " + v.back() + ", I3, " + std::to_string(tensor));
    if (bf16) {
      b.push_back("convert.bf16.f32 " + v[0] + ", " + v[1] + " part=0");
      b.push_back("convert.bf16.f32 " + v[1] + ", " + v[1] + " part=1");
    }
    if (step) b.push_back("iadd_dim I3, " + vector_lanes + " dim=0");
  };
  const auto store = [&](const std::vector<std::string>& v) {
    if (bf16) {
      b.push_back("convert.f32.bf16 " + v[0] + ", " + v[0] + " part=0");
      b.push_back("convert.f32.bf16 " + v[0] + ", " + v[1] + " part=1");
    }
    b.push_back("st_tnsr I4, " + std::string(backward ? "2" : "1") + ", " + v[0]);
    b.push_back("iadd_dim I4, " + vector_lanes + " dim=0");
  };
  // The row's values as the vectors of its tensors: f32 one register each, bf16 two.
  const unsigned per_vector = bf16 ? 2 : 1;
  const auto tensor_vectors = [&](const std::vector<std::string>& v) {
    std::vector<std::vector<std::string>> out;
    for (unsigned r = 0; r < vectors; r += per_vector) out.emplace_back(v.begin() + r, v.begin() + r + per_vector);
    return out;
  };
  for (unsigned row = 0; row < rows; ++row) {
    std::vector<std::string> x, e;
    for (unsigned r = 0; r < vectors; ++r) {
      x.push_back(reg());
      e.push_back(backward ? reg() : x.back());   // the forward's exp overwrites x
    }
    for (unsigned r = 0; r < vectors; r += per_vector) {
      load({x.begin() + r, x.begin() + r + per_vector}, 0, !backward);
      if (backward) load({e.begin() + r, e.begin() + r + per_vector}, 1, true);
    }
    const std::string acc = reg(), s = reg();
    if (backward) {   // x = grad, e = y: softmax_bwd_short.s
      const std::string t = reg();
      const std::vector<std::string> accs = bf16 ? std::vector<std::string>{acc, reg()} : std::vector<std::string>{acc};
      for (const std::string& a : accs) b.push_back("mov.f32 " + a + ", 0.0");
      for (unsigned r = 0; r < vectors; ++r) {
        const std::string& a = accs[r % accs.size()];
        if (log) {
          b.push_back("add.f32 " + a + ", " + a + ", " + x[r]);
        } else {
          b.push_back("mul.f32 " + t + ", " + x[r] + ", " + e[r]);
          b.push_back("add.f32 " + a + ", " + a + ", " + t);
        }
      }
      if (bf16) b.push_back("add.f32 " + acc + ", " + acc + ", " + accs[1]);   // COMBINE
      b.push_back("reduce.add.f32 " + acc + ", " + acc);
      b.push_back("shuffle.f32 " + s + ", " + acc + ", V8");
      for (unsigned r = 0; r < vectors; ++r) {
        if (log) {
          b.push_back("special.exp.f32 " + e[r] + ", " + e[r]);
          b.push_back("mul.f32 " + e[r] + ", " + e[r] + ", " + s);
          b.push_back("sub.f32 " + x[r] + ", " + x[r] + ", " + e[r]);
        } else {
          b.push_back("sub.f32 " + x[r] + ", " + x[r] + ", " + s);
          b.push_back("mul.f32 " + x[r] + ", " + e[r] + ", " + x[r]);
        }
      }
      for (const auto& v : tensor_vectors(x)) store(v);
      continue;
    }
    // softmax_short.s starts the max from -inf and the sum from 0: max(-inf, a) is a (NaN too)
    // and 0 + e is e (an exp is never -0), so both start from the first vector here. (bf16: each
    // half's accumulator is then its half, and COMBINE the fold's one operation.)
    const auto fold = [&](const std::string& op, const std::string& d, const std::vector<std::string>& v) {
      std::string from = v[0];
      for (unsigned r = 1; r < vectors; ++r) {
        b.push_back(op + ".f32 " + d + ", " + from + ", " + v[r]);
        from = d;
      }
      b.push_back("reduce." + op + ".f32 " + d + ", " + from);
    };
    const std::string m = reg();
    fold("max", acc, x);
    b.push_back("shuffle.f32 " + m + ", " + acc + ", V8");
    // log_softmax's output is x - max - log(sum): x is kept, the exps go to registers of their own.
    if (log)
      for (unsigned r = 0; r < vectors; ++r) e[r] = reg();
    for (unsigned r = 0; r < vectors; ++r) b.push_back("sub.f32 " + e[r] + ", " + x[r] + ", " + m);
    for (unsigned r = 0; r < vectors; ++r) b.push_back("special.exp.f32 " + e[r] + ", " + e[r]);
    const std::string sum = reg();
    fold("add", sum, e);
    b.push_back("shuffle.f32 " + s + ", " + sum + ", V8");
    if (log) b.push_back("special.log.f32 " + s + ", " + s);
    for (unsigned r = 0; r < vectors; ++r) {
      if (log) {
        b.push_back("sub.f32 " + x[r] + ", " + x[r] + ", " + m);
        b.push_back("sub.f32 " + x[r] + ", " + x[r] + ", " + s);
      } else {
        b.push_back("div.f32 " + e[r] + ", " + e[r] + ", " + s);
      }
    }
    for (const auto& v : tensor_vectors(log ? x : e)) store(v);
  }
  return b;
}

}  // namespace

std::optional<InstantiateResult> KernelLibrary::instantiate_paired_rows(const std::string& guid, const KernelParams& p) {
  const auto it = defs_.find(guid);
  if (it == defs_.end()) return std::nullopt;
  const KernelDef& def = *it->second;
  const bool backward = def.kind == Kind::SoftmaxBwd;
  const DType io = def.out;
  const bool bf16 = io == DType::BF16;
  if ((def.kind != Kind::Softmax && !backward) || def.in != io || (io != DType::F32 && !bf16) || !p.scalars.empty() ||
      p.inputs.size() != (backward ? 2u : 1u) || p.outputs.size() != 1)
    return std::nullopt;
  const auto shape = padded(p.outputs[0].shape);
  for (const auto* list : {&p.inputs, &p.outputs})
    for (const TensorParams& t : *list)
      if (t.dtype != io || padded(t.shape) != shape || flattened(t).shape.size() != 1) return std::nullopt;
  const unsigned lanes = lanes_of(io);
  const uint64_t rows = elements(p.outputs[0]) / shape[0];
  const unsigned io_vectors = shape[0] / lanes;
  const unsigned vectors = bf16 ? 2 * io_vectors : io_vectors;   // f32 vectors (bf16: halves)
  // Whole vectors (a vector never spans two rows), rows of at most two f32 vectors (one bf16),
  // rows in pairs.
  if (shape[0] % lanes != 0 || vectors == 0 || vectors > 2 || rows < 2 || rows % 2 != 0 || rows / 2 > INT32_MAX)
    return std::nullopt;
  const bool log = def.op_macro == "log_softmax";
  // As many rows a step as the registers hold, of six or four, where they divide the rows: the
  // rows' chains overlap (a pair's chain, about 60 cycles of dependent max, exp, sum and
  // division, was most of its step).
  unsigned step_rows = 2;
  for (const unsigned k : {6u, 4u}) {
    if (rows % k == 0 && k * registers_per_row(backward, log, vectors, bf16) <= kBodyRegisters) {
      step_rows = k;
      break;
    }
  }

  Instantiation inst;
  inst.guid = def.guid;
  const uint32_t pair = step_rows * shape[0];
  inst.ispace_geometry = {1, static_cast<int32_t>(rows / step_rows), 1, 1, 1};
  const TensorParams view{io, {pair, static_cast<uint32_t>(rows / step_rows)}, {}};
  TensorAccessPattern pattern = pattern_of(AccessPatternDim{0, 0, 0, static_cast<int32_t>(pair) - 1}, padded(view.shape), false);
  for (size_t k = 0; k < p.inputs.size(); ++k) {
    DescriptorTemplate d = descriptor_of(view);
    if (!backward) d.padding = bf16 ? 0xFF80u : 0xFF800000u;   // -inf as softmax's X (no lane reads it: whole vectors)
    inst.inputs.push_back(d);
    inst.input_patterns.push_back(pattern);
  }
  inst.outputs.push_back(descriptor_of(view));
  inst.output_patterns.push_back(pattern);
  inst.srf[0] = shape[0];

  std::vector<unsigned> prefetched;
  for (size_t k = 0; k < p.inputs.size(); ++k) prefetched.push_back(static_cast<unsigned>(k));
  const std::vector<std::string> bundles = schedule::list_schedule(paired_body(backward, log, vectors, step_rows, bf16), "iadd_dim I2, LANES dim=0",
                                                                  schedule::kPrefetchHitLatency);
  std::ostringstream src;
  src << "// " << def.guid << ": " << step_rows << " rows of " << io_vectors << " " << tpc::dtype_name(io)
      << " vectors a step\n"
      << width_prelude(prefetched, step_rows * io_vectors, 1) << ".equ LANES " << lanes << "\n"
      << ".macro ROW_SETUP\n.endm\n.include \"nest.inc\"\n        mov.f32 V8, 0.0\n        NEST_BEGIN\n";
  src << schedule::loop_body(bundles);
  src << "        NEST_END\n";
  inst.variant = def.op_macro + (backward ? " bwd " : " fwd ") + tpc::dtype_name(io) + " " + std::to_string(step_rows) +
                 " rows a step of " + std::to_string(io_vectors);
  return assembled(std::move(inst), src.str(), def.guid);
}

}  // namespace hpusim::synapse::tpc_kernels
