// The disassembler and the program file: text that reassembles to identical bundles (random
// programs, arbitrary decodable bundles, the example kernel), the text form of each construct,
// and the program file format with its errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "arch/tpc/asm/assembler.h"
#include "arch/tpc/asm/disassembler.h"
#include "arch/tpc/asm/program.h"
#include "arch/tpc/asm/syntax.h"
#include "tests/tpc/tpc_random.h"

namespace hpusim::tpc {
namespace {

using syntax::SwitchKind;

// A random instruction as the assembler writes it. `imm_ok`: the slot may use the immediate.
SlotInstr canonical_slot(std::mt19937& rng, const OpInfo& info, bool imm_ok) {
  auto pick = [&](unsigned n) { return static_cast<unsigned>(rng() % n); };
  SlotInstr s;
  s.op = info.op;
  if (info.takes_dtype) s.dtype = static_cast<DType>(pick(8));
  const bool label = syntax::has_label_operand(info);
  s.use_imm = label || (imm_ok && syntax::has_imm_operand(info) && pick(3) == 0);
  switch (syntax::switch_kind(info.op)) {
    case SwitchKind::None: break;
    case SwitchKind::Cmp: s.switches = static_cast<uint8_t>(pick(6)); break;
    case SwitchKind::Reduce: s.switches = static_cast<uint8_t>(pick(3)); break;
    case SwitchKind::Special: s.switches = static_cast<uint8_t>(pick(7)); break;
    case SwitchKind::Convert:
      s.switches = static_cast<uint8_t>(pick(8) | pick(4) << 3 | (info.op == Op::VConvert ? pick(4) << 5 : 0));
      break;
    case SwitchKind::Dim: s.switches = static_cast<uint8_t>(pick(5)); break;
    case SwitchKind::LoopStep: s.switches = static_cast<uint8_t>(1 + pick(255)); break;
    case SwitchKind::PredMov: s.switches = static_cast<uint8_t>(pick(3) == 0 ? 0 : 2 + pick(2)); break;
  }
  for (const auto& field : syntax::text_operands(info)) {
    uint8_t value = 0;
    switch (field.kind) {
      case Operand::V: case Operand::S: case Operand::I: case Operand::SP: case Operand::VP: case Operand::Tensor:
        value = static_cast<uint8_t>(pick(syntax::register_count(field.kind)));
        if (syntax::switch_kind(info.op) == SwitchKind::PredMov && std::string(field.name) == "src0" && s.switches) value = 0;
        break;
      case Operand::SorImm: if (!s.use_imm) value = static_cast<uint8_t>(pick(kScalarRegs)); break;
      case Operand::IorImm: if (!s.use_imm) value = static_cast<uint8_t>(pick(kIndexRegs)); break;
      case Operand::VorS:
        if (!s.use_imm) {
          if (pick(2)) s.switches |= kSwScalarSrc;
          value = static_cast<uint8_t>(pick((s.switches & kSwScalarSrc) ? kScalarRegs : kVectorRegs));
        }
        break;
      case Operand::Label: case Operand::None: break;
    }
    syntax::set_field(s, field.name, value);
  }
  s.pred_invert = pick(4) == 0;
  s.pred_vector = (info.slot == Slot::Vpu || info.slot == Slot::Load) && pick(3) == 0;
  s.pred = static_cast<uint8_t>(pick(2) ? 0 : pick(s.pred_vector ? kVectorPreds : kScalarPreds));
  return s;
}

uint32_t random_imm(std::mt19937& rng) {
  switch (rng() % 4) {
    case 0: return rng() % 100;
    case 1: return static_cast<uint32_t>(-static_cast<int32_t>(rng() % 100000));
    case 2: {   // a "nice" float
      const float f = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 8.0f;
      uint32_t u;
      std::memcpy(&u, &f, 4);
      return u;
    }
    default: return static_cast<uint32_t>(rng());   // anything, NaNs included
  }
}

// A program whose every bundle has an instruction form; label targets lie in 0..count+2.
Program canonical_program(std::mt19937& rng, size_t count) {
  static const std::vector<const OpInfo*> ops[kSlots] = {testing::ops_of(Slot::Load), testing::ops_of(Slot::Spu),
                                                          testing::ops_of(Slot::Vpu), testing::ops_of(Slot::Store)};
  Program p;
  for (size_t i = 0; i < count; ++i) {
    Bundle b;
    std::optional<uint32_t> label_target;
    for (unsigned s = 0; s < kSlots; ++s) {
      if (rng() % 10 < 3) continue;   // NOP
      const OpInfo* info = ops[s][rng() % ops[s].size()];
      if (info->op == Op::Loop) {
        if (i + 1 > count) continue;
        label_target = static_cast<uint32_t>(i + 1 + rng() % (count - i));   // after the loop, up to the end
      } else if (info->op == Op::Jmp) {
        label_target = static_cast<uint32_t>(rng() % (count + 3));
      }
      do {
        b.slot[s] = canonical_slot(rng, *info, true);
      } while (!syntax::type_problem(static_cast<Slot>(s), b.slot[s]).empty());
    }
    bool uses = false;
    for (const SlotInstr& s : b.slot) uses = uses || s.use_imm;
    if (label_target) b.imm = *label_target;
    else if (uses) b.imm = random_imm(rng);
    p.bundles.push_back(b);
  }
  return p;
}

Program reassemble(const std::string& text) {
  AssembleResult r = assemble(text, "dis.s");
  EXPECT_TRUE(r.ok()) << r.error_text() << "\n" << text;
  return r.program;
}

TEST(TpcDisassembler, RandomProgramsRoundTripAsInstructions) {
  std::mt19937 rng(1234);
  size_t bundles = 0;
  for (int n = 0; n < 300; ++n) {
    const Program p = canonical_program(rng, 1 + rng() % 60);
    bundles += p.bundles.size();
    const std::string text = disassemble(p, {true, n % 2 == 0});
    ASSERT_EQ(text.find(".bundle"), std::string::npos) << "every bundle has an instruction form:\n" << text;
    const Program back = reassemble(text);
    ASSERT_EQ(back.bundles.size(), p.bundles.size());
    for (size_t i = 0; i < p.bundles.size(); ++i) {
      ASSERT_TRUE(back.bundles[i] == p.bundles[i]) << "bundle " << i << ": " << format_bundle(p.bundles[i]) << "\n"
                                                   << text;
    }
    ASSERT_EQ(program_to_binary(back), program_to_binary(p));
  }
  EXPECT_GT(bundles, 8000u);
}

TEST(TpcDisassembler, AnyDecodableBundleRoundTrips) {
  // Random bundles with arbitrary unused fields, switches and immediates: the ones with no
  // instruction form come out as .bundle lines, and everything reassembles bit for bit.
  std::mt19937 rng(5678);
  Program p;
  for (int i = 0; i < 5000; ++i) p.bundles.push_back(testing::random_valid_bundle(rng));
  const std::string text = disassemble(p);
  EXPECT_NE(text.find(".bundle"), std::string::npos);
  const Program back = reassemble(text);
  ASSERT_EQ(back.bundles.size(), p.bundles.size());
  for (size_t i = 0; i < p.bundles.size(); ++i) ASSERT_TRUE(back.bundles[i] == p.bundles[i]) << i;
}

TEST(TpcDisassembler, TheTextForm) {
  auto line = [](const std::string& source) {
    AssembleResult r = assemble(source, "t.s");
    EXPECT_TRUE(r.ok()) << r.error_text();
    return r.program.bundles.empty() ? std::string() : format_bundle(r.program.bundles[0]);
  };
  // Slots in the order Load, SPU, VPU, Store; canonical spelling.
  EXPECT_EQ(line("ST_TNSR I1, 2, V3; ADD.F32 v1, v2, s4 @!vp1; LD_TNSR V5, I1, 0; MOV S1, 0x10"),
            "ld_tnsr V5, I1, 0; mov S1, 16; add.f32 V1, V2, S4 @!VP1; st_tnsr I1, 2, V3");
  EXPECT_EQ(line("nop"), "nop");
  EXPECT_EQ(line("mov.f32 V1, 1.5f"), "mov.f32 V1, 1.5");
  EXPECT_EQ(line("mov.f32 V1, 0x3f800000"), "mov.f32 V1, 1.0");
  EXPECT_EQ(line("mov.f32 V1, 0x7fc00000"), "mov.f32 V1, 0x7fc00000");        // NaN: bits
  EXPECT_EQ(line("mov.f32 V1, -0.0"), "mov.f32 V1, -0.0");
  EXPECT_EQ(line("mov.f32 V1, 0.1"), "mov.f32 V1, 0.1");
  EXPECT_EQ(line("mov.f32 V1, 1e-45"), "mov.f32 V1, 1e-45");
  EXPECT_EQ(line("mov.i32 V1, -5"), "mov.i32 V1, -5");
  EXPECT_EQ(line("mov.u32 V1, -5"), "mov.u32 V1, 0xfffffffb");
  EXPECT_EQ(line("mov S1, 1.5"), "mov S1, 0x3fc00000");                       // no type: plain bits
  EXPECT_EQ(line("cmp.f32.ge VP1, V2, 0.5"), "cmp.ge.f32 VP1, V2, 0.5");
  EXPECT_EQ(line("convert.f32.bf16 V1, V2 rnd=rz part=1"), "convert.f32.bf16 V1, V2 rnd=rz part=1");
  EXPECT_EQ(line("convert.i32.f32 S1, S2"), "convert.i32.f32 S1, S2");
  EXPECT_EQ(line("special.sigmoid.bf16 V1, V2"), "special.sigmoid.bf16 V1, V2");
  EXPECT_EQ(line("reduce.min.i8 V1, V2 @VP0"), "reduce.min.i8 V1, V2 @VP0");
  EXPECT_EQ(line("imov_dim I1, S2 dim=4; ld_smov S3, 7"), "ld_smov S3, 7; imov_dim I1, S2 dim=4");
  EXPECT_EQ(line("pmov VP1, true; pmov SP2, SP3"), "pmov SP2, SP3; pmov VP1, true");
  EXPECT_EQ(line("loop S1, S2, 5 step=-1"), "loop S1, S2, 5 step=-1");
  EXPECT_EQ(line("loop S1, S2, 5 step=1"), "loop S1, S2, 5");
  EXPECT_EQ(line("halt @SP0"), "halt");
  EXPECT_EQ(line("halt @!SP0"), "halt @!SP0");
  EXPECT_EQ(line(".bundle 0, 0, 0x308141, 0, 9"),
            ".bundle 0x00000000000000, 0x00000000000000, 0x00000000308141, 0x00000000000000, 0x00000009  "
            "// an immediate no slot reads");
  EXPECT_EQ(format_slot(Slot::Vpu, SlotInstr{}, 0), "");
}

TEST(TpcDisassembler, LabelsAreKeptOrGenerated) {
  AssembleResult r = assemble(
      "start: mov S1, 0\n"
      "       loop S1, S2, 3\n"
      "       nop\n"
      "       jmp start\n"
      "       jmp 6\n"
      "       jmp 9\n",
      "l.s");
  ASSERT_TRUE(r.ok()) << r.error_text();
  const std::string text = disassemble(r.program);
  EXPECT_EQ(text,
            "// hpusim TPC program: 6 bundles\n"
            "start:\n"
            "    mov S1, 0\n"
            "    loop S1, S2, L3\n"
            "    nop\n"
            "L3:\n"
            "    jmp start\n"
            "    jmp L6\n"
            "    jmp 9\n"
            "L6:\n");
  const Program back = reassemble(text);
  EXPECT_TRUE(back.bundles == r.program.bundles);
  EXPECT_EQ(back.labels.at("L3"), 3u);
  // A generated name never takes an existing label's name.
  Program p = r.program;
  p.labels["L3"] = 0;
  const std::string renamed = disassemble(p, {false, true});
  EXPECT_NE(renamed.find("L3_:"), std::string::npos) << renamed;
  EXPECT_NE(renamed.find("loop S1, S2, L3_  // 1"), std::string::npos) << renamed;
  EXPECT_NE(renamed.find("jmp L3  // 3"), std::string::npos) << renamed;   // the first name of bundle 0
  EXPECT_TRUE(reassemble(renamed).bundles == r.program.bundles);
}

TEST(TpcProgramFile, RoundTripAndHeader) {
  std::mt19937 rng(77);
  Program p = canonical_program(rng, 40);
  const std::vector<uint8_t> bytes = program_to_binary(p);
  ASSERT_EQ(bytes.size(), 16u + 40 * 32);
  std::string error;
  auto back = program_from_binary(bytes, &error);
  ASSERT_TRUE(back) << error;
  EXPECT_TRUE(back->bundles == p.bundles);
  EXPECT_TRUE(back->labels.empty());
  // Files.
  const std::string path = ::testing::TempDir() + "tpc_program_file_test.bin";
  ASSERT_TRUE(write_program_file(path, p, &error)) << error;
  auto read = read_program_file(path, &error);
  ASSERT_TRUE(read) << error;
  EXPECT_TRUE(read->bundles == p.bundles);
  // An empty program is a bare header.
  EXPECT_EQ(program_to_binary(Program{}).size(), 16u);
  EXPECT_TRUE(program_from_binary(program_to_binary(Program{})));
}

TEST(TpcProgramFile, Errors) {
  Program p;
  p.bundles.resize(3);
  p.bundles[2][Slot::Vpu].op = Op::VAdd;
  std::vector<uint8_t> good = program_to_binary(p);
  auto error_of = [](const std::vector<uint8_t>& bytes) {
    std::string error;
    EXPECT_FALSE(program_from_binary(bytes, &error));
    return error;
  };
  EXPECT_NE(error_of({1, 2, 3}).find("shorter than the 16-byte header"), std::string::npos);
  std::vector<uint8_t> bad = good;
  bad[0] = 'X';
  EXPECT_NE(error_of(bad).find("does not start with"), std::string::npos);
  bad = good;
  bad[6] = 2;
  EXPECT_NE(error_of(bad).find("unsupported TPC program version 2"), std::string::npos);
  bad = good;
  bad[12] = 1;
  EXPECT_NE(error_of(bad).find("reserved word"), std::string::npos);
  bad = good;
  bad.pop_back();
  EXPECT_NE(error_of(bad).find("the header says 3 bundles (112 bytes) but the file has 111 bytes"), std::string::npos)
      << error_of(bad);
  bad = good;
  bad[16 + 2 * 32 + 14 + 1] = 0xFF;   // bundle 2's VPU dst = 63 (and src0 bits)
  const std::string e = error_of(bad);
  EXPECT_NE(e.find("bundle 2: VPU slot, dst: V63"), std::string::npos) << e;
  std::string error;
  EXPECT_FALSE(read_program_file("/nonexistent/x.bin", &error));
  EXPECT_NE(error.find("cannot read '/nonexistent/x.bin'"), std::string::npos);
  EXPECT_FALSE(write_program_file("/nonexistent/x.bin", p, &error));
  EXPECT_NE(error.find("cannot write output file '/nonexistent/x.bin'"), std::string::npos);
}

TEST(TpcKernels, ElementwiseAddAssemblesAndRoundTrips) {
  const std::string path = std::string(HPUSIM_SOURCE_DIR) + "/tests/tpc/kernels/eltwise_add.s";
  AssembleResult r = assemble_file(path);
  ASSERT_TRUE(r.ok()) << r.error_text();
  const Program& p = r.program;
  ASSERT_EQ(p.bundles.size(), 39u);
  EXPECT_EQ(p.labels.at("next_d4"), 18u);
  EXPECT_EQ(p.labels.at("end_d0"), 32u);
  EXPECT_EQ(p.labels.at("done"), 38u);
  // The innermost loop steps one f32 vector along dim 0 and ends at the store.
  const Bundle& inner = p.bundles[27];
  EXPECT_EQ(inner[Slot::Spu].op, Op::Loop);
  EXPECT_EQ(inner[Slot::Spu].switches, 64);
  EXPECT_EQ(inner.imm, 32u);
  EXPECT_EQ(format_bundle(p.bundles[31]), "add.f32 V3, V1, V2");
  EXPECT_EQ(format_bundle(p.bundles[32]), "st_tnsr I2, 2, V3");
  EXPECT_EQ(format_bundle(p.bundles[20]), "ld_smov S24, S22; imov_dim I2, S20 dim=4");
  EXPECT_EQ(format_bundle(p.bundles[19]), "jmp 38 @SP1");
  // Text and binary round trips.
  const std::string text = disassemble(p);
  const Program back = reassemble(text);
  EXPECT_TRUE(back.bundles == p.bundles);
  EXPECT_EQ(back.labels, p.labels);
  EXPECT_EQ(program_to_binary(back), program_to_binary(p));
  auto from_file = program_from_binary(program_to_binary(p));
  ASSERT_TRUE(from_file);
  EXPECT_TRUE(from_file->bundles == p.bundles);
}

}  // namespace
}  // namespace hpusim::tpc
