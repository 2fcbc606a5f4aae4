// The TPC assembler (arch/tpc/ASSEMBLY.md): what each construct assembles to, the errors it reports
// (file, line, column, message), includes and macros, and that no input text crashes it.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "arch/tpc/asm/assembler.h"
#include "arch/tpc/asm/disassembler.h"
#include "arch/tpc/asm/program.h"

namespace hpusim::tpc {
namespace {

// Sources in memory: file name -> text.
using Files = std::map<std::string, std::string>;

AssembleOptions in_memory(const Files& files) {
  AssembleOptions options;
  options.read_file = [files](const std::string& path) -> std::optional<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  };
  return options;
}

Program ok(const std::string& source, const Files& files = {}) {
  AssembleResult r = assemble(source, "test.s", in_memory(files));
  EXPECT_TRUE(r.ok()) << r.error_text() << "in:\n" << source;
  return r.program;
}

// The first diagnostic of a source that must fail.
AsmDiagnostic first_error(const std::string& source, const Files& files = {}) {
  AssembleResult r = assemble(source, "test.s", in_memory(files));
  EXPECT_FALSE(r.ok()) << "assembled:\n" << source;
  return r.errors.empty() ? AsmDiagnostic{} : r.errors.front();
}

uint32_t f32(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

SlotInstr slot_of(const std::string& source, Slot slot) {
  Program p = ok(source);
  return p.bundles.empty() ? SlotInstr{} : p.bundles[0][slot];
}

TEST(TpcAssembler, GoldenProgramFileBytes) {
  // The same instructions as the encoding test's golden bundles, through the text form and the
  // program file: header "HPTPC\0", version 1, 5 bundles, reserved 0.
  Program p = ok(
      "add.f32 V1, V2, V3\n"
      "add.i32 S1, S2, 100\n"
      "ld_tnsr V5, I2, 3 @!VP1\n"
      "st_tnsr I2, 3, V7 @SP4\n"
      "loop S32, S1, 7 step=-2; cmp.lt.f32 VP2, V4, S6\n");
  const std::vector<uint8_t> file = program_to_binary(p);
  ASSERT_EQ(file.size(), 16u + 5 * 32);
  const uint8_t header[16] = {'H', 'P', 'T', 'P', 'C', 0, 1, 0, 5, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(std::vector<uint8_t>(file.begin(), file.begin() + 16), std::vector<uint8_t>(header, header + 16));
  auto bundle_bytes = [&](unsigned i) { return std::vector<uint8_t>(file.begin() + 16 + 32 * i, file.begin() + 48 + 32 * i); };
  std::vector<uint8_t> expected(32, 0);
  auto put = [&](unsigned slot, std::vector<uint8_t> bytes) {
    for (unsigned i = 0; i < 7; ++i) expected[slot * 7 + i] = bytes[i];
  };
  put(2, {0x41, 0x81, 0x30, 0x00, 0x00, 0x00, 0x00});
  EXPECT_EQ(bundle_bytes(0), expected);
  expected.assign(32, 0);
  put(1, {0x02, 0x81, 0x00, 0x00, 0x02, 0x02, 0x00});
  expected[28] = 100;
  EXPECT_EQ(bundle_bytes(1), expected);
  expected.assign(32, 0);
  put(0, {0x80, 0x85, 0x00, 0x0C, 0x88, 0x01, 0x00});
  EXPECT_EQ(bundle_bytes(2), expected);
  expected.assign(32, 0);
  put(3, {0xC0, 0x80, 0x70, 0x0C, 0x20, 0x00, 0x00});
  EXPECT_EQ(bundle_bytes(3), expected);
  expected.assign(32, 0);
  put(1, {0x1E, 0x60, 0x00, 0x00, 0x00, 0xFA, 0x03});
  put(2, {0x4F, 0x02, 0x61, 0x00, 0x00, 0x08, 0x02});
  expected[28] = 7;
  EXPECT_EQ(bundle_bytes(4), expected);
}

TEST(TpcAssembler, SlotsInAnyOrderOneBundlePerLine) {
  Program a = ok("ld_tnsr V4, I1, 1; add.i32 S1, S1, 1; add.f32 V1, V2, V3; st_tnsr I1, 0, V1\n");
  Program b = ok("st_tnsr I1, 0, V1 ; add.f32 V1, V2, V3;ld_tnsr V4, I1, 1;add.i32 S1, S1, 1;\n");
  ASSERT_EQ(a.bundles.size(), 1u);
  EXPECT_TRUE(a.bundles == b.bundles);
  EXPECT_EQ(a.bundles[0][Slot::Load].op, Op::LdTnsr);
  EXPECT_EQ(a.bundles[0][Slot::Spu].op, Op::SAdd);
  EXPECT_EQ(a.bundles[0][Slot::Vpu].op, Op::VAdd);
  EXPECT_EQ(a.bundles[0][Slot::Store].op, Op::StTnsr);
}

TEST(TpcAssembler, CommentsEmptyLinesLabelOnlyLinesAndNop) {
  Program p = ok(
      "// a comment\n"
      "\n"
      "   # another comment\n"
      "start:\n"
      "        nop                  // an empty bundle\n"
      "middle:  // a label on its own line is no bundle\n"
      "\n"
      "        nop; halt            # nop takes no slot\n"
      "end:\n");
  ASSERT_EQ(p.bundles.size(), 2u);
  EXPECT_TRUE(p.bundles[0] == Bundle{});
  EXPECT_EQ(p.bundles[1][Slot::Spu].op, Op::Halt);
  EXPECT_EQ(p.labels, (std::map<std::string, uint32_t>{{"start", 0}, {"middle", 1}, {"end", 2}}));
}

TEST(TpcAssembler, MnemonicsRegistersAndSuffixesAreCaseInsensitive) {
  Program a = ok("ADD.F32 v1, v2, s3 @!sp2\n");
  Program b = ok("add.f32 V1, V2, S3 @!SP2\n");
  EXPECT_TRUE(a.bundles == b.bundles);
}

TEST(TpcAssembler, SharedMnemonicsPickTheSlotFromTheOperands) {
  EXPECT_EQ(slot_of("mov S1, S2", Slot::Spu).op, Op::SMov);
  EXPECT_EQ(slot_of("mov.f32 V1, V2", Slot::Vpu).op, Op::VMov);
  EXPECT_EQ(slot_of("mov.i32 V1, S2", Slot::Vpu).op, Op::VMov);
  EXPECT_EQ(slot_of("cmp.eq.i32 SP1, S2, S3", Slot::Spu).op, Op::SCmp);
  EXPECT_EQ(slot_of("cmp.eq.i32 VP1, V2, V3", Slot::Vpu).op, Op::VCmp);
  EXPECT_EQ(slot_of("pmov SP1, SP2", Slot::Spu).op, Op::SPMov);
  EXPECT_EQ(slot_of("pmov VP1, VP2", Slot::Vpu).op, Op::VPMov);
  EXPECT_EQ(slot_of("convert.f32.i32 S1, S2", Slot::Spu).op, Op::SConvert);
  EXPECT_EQ(slot_of("convert.f32.i32 V1, V2", Slot::Vpu).op, Op::VConvert);
  Program p = ok("mov S1, 3; mov.i32 V1, 3\n");   // one of each, sharing the immediate
  EXPECT_EQ(p.bundles[0][Slot::Spu].op, Op::SMov);
  EXPECT_EQ(p.bundles[0][Slot::Vpu].op, Op::VMov);
  EXPECT_EQ(p.bundles[0].imm, 3u);
}

TEST(TpcAssembler, RegistersFieldsAndTheScalarSourceSwitch) {
  SlotInstr s = slot_of("mac.bf16 V39, V38, S35 @VP7", Slot::Vpu);
  EXPECT_EQ(s.op, Op::VMac);
  EXPECT_EQ(s.dtype, DType::BF16);
  EXPECT_EQ(s.dst, 39);
  EXPECT_EQ(s.src0, 38);
  EXPECT_EQ(s.src1, 35);
  EXPECT_EQ(s.switches, kSwScalarSrc);
  EXPECT_EQ(s.pred, 7);
  EXPECT_TRUE(s.pred_vector);
  EXPECT_FALSE(s.pred_invert);
  s = slot_of("sel.i16 V1, V2, V3, VP4", Slot::Vpu);
  EXPECT_EQ(s.src2, 4);
  s = slot_of("sel S1, S2, S3, SP15", Slot::Spu);
  EXPECT_EQ(s.src2, 15);
  s = slot_of("st_tnsr_s I7, 15, S9", Slot::Store);
  EXPECT_EQ(s.src0, 7);
  EXPECT_EQ(s.src2, 15);
  EXPECT_EQ(s.src1, 9);
  s = slot_of("iget_dim S3, I4 dim=2", Slot::Spu);
  EXPECT_EQ(s.dst, 3);
  EXPECT_EQ(s.src0, 4);
  EXPECT_EQ(s.switches, 2);
}

TEST(TpcAssembler, Immediates) {
  struct Case {
    const char* source;
    uint32_t imm;
  };
  const Case cases[] = {
      {"mov S1, 42", 42},
      {"mov S1, -1", 0xFFFFFFFFu},
      {"mov S1, 0xDEADbeef", 0xDEADBEEFu},
      {"mov S1, 0b1011", 11},
      {"mov S1, 4294967295", 0xFFFFFFFFu},
      {"mov S1, -2147483648", 0x80000000u},
      {"mov S1, 1.5f", f32(1.5f)},
      {"mov S1, 1.5", f32(1.5f)},
      {"mov S1, -2e3", f32(-2000.0f)},
      {"mov S1, .25", f32(0.25f)},
      {"mov S1, 1f", f32(1.0f)},
      {"mov S1, -0.0", 0x80000000u},
      {"mov S1, 0.1", f32(0.1f)},                         // rounded once, to nearest f32
      {"mov S1, (1 << 20) | 3", (1u << 20) | 3},
      {"mov S1, 7 * (2 + 3) - 10 / 3 % 2", 34},
      {"mov S1, ~0 ^ 0xF0", 0xFFFFFF0Fu},
      {"add.f32 S1, S2, 0x3f800000", 0x3F800000u},       // f32 bit pattern
      {"add.f32 S1, S2, 0", 0},
      {"add.f32 S1, S2, 1.0e-45", 1},                     // the smallest denormal
      {"add.bf16 V1, V2, -1.5f", f32(-1.5f)},
      {"add.i32 V1, V2, -7", static_cast<uint32_t>(-7)},
      {"add.u8 V1, V2, 255", 255},
      {"mov.f32 V1, 2.5", f32(2.5f)},
      {"imov I3, 5", 5},
      {"cmp.lt.f32 VP1, V2, 0.5", f32(0.5f)},
      {"ld_slm S1, 64", 64},
      {"st_vlm 256, V3", 256},
  };
  for (const Case& c : cases) {
    Program p = ok(c.source);
    ASSERT_EQ(p.bundles.size(), 1u) << c.source;
    EXPECT_EQ(p.bundles[0].imm, c.imm) << c.source;
    bool uses = false;
    for (const SlotInstr& s : p.bundles[0].slot) uses = uses || s.use_imm;
    EXPECT_TRUE(uses) << c.source;
  }
}

TEST(TpcAssembler, SwitchNamesAndOptions) {
  const char* cmps[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  for (unsigned i = 0; i < 6; ++i) {
    EXPECT_EQ(slot_of(std::string("cmp.") + cmps[i] + ".f32 SP1, S2, S3", Slot::Spu).switches, i);
    EXPECT_EQ(slot_of(std::string("cmp.f32.") + cmps[i] + " VP1, V2, V3", Slot::Vpu).switches, i);   // any order
  }
  const char* reduces[] = {"add", "max", "min"};
  for (unsigned i = 0; i < 3; ++i) {
    EXPECT_EQ(slot_of(std::string("reduce.") + reduces[i] + ".f32 V1, V2", Slot::Vpu).switches, i);
  }
  const char* specials[] = {"exp", "log", "rsqrt", "rcp", "sqrt", "tanh", "sigmoid"};
  for (unsigned i = 0; i < 7; ++i) {
    EXPECT_EQ(slot_of(std::string("special.") + specials[i] + ".bf16 V1, V2", Slot::Vpu).switches, i);
  }
  SlotInstr s = slot_of("convert.f32.bf16 V1, V2 part=1 rnd=rz", Slot::Vpu);
  EXPECT_EQ(s.dtype, DType::F32);
  EXPECT_EQ(s.switches, static_cast<uint8_t>(static_cast<uint8_t>(DType::BF16) | 1 << 3 | 1 << 5));
  s = slot_of("convert.f32.i8 rnd=ru part=3 V1, V2", Slot::Vpu);     // options may come first
  EXPECT_EQ(s.switches, static_cast<uint8_t>(static_cast<uint8_t>(DType::I8) | 3 << 3 | 3 << 5));
  s = slot_of("convert.i32.f32 S1, S2 rnd=rd", Slot::Spu);
  EXPECT_EQ(s.dtype, DType::I32);
  EXPECT_EQ(s.switches, static_cast<uint8_t>(static_cast<uint8_t>(DType::F32) | 2 << 3));
  EXPECT_EQ(slot_of("convert.bf16.f32 V1, V2", Slot::Vpu).switches, static_cast<uint8_t>(DType::F32));
  EXPECT_EQ(slot_of("imov_dim I1, S2 dim=4", Slot::Spu).switches, 4);
  EXPECT_EQ(slot_of("iadd_dim I1, -64 dim=0", Slot::Spu).switches, 0);
  EXPECT_EQ(slot_of("pmov SP1, true", Slot::Spu).switches, 3);
  EXPECT_EQ(slot_of("pmov VP1, false", Slot::Vpu).switches, 2);
  s = slot_of("pmov VP1, VP2", Slot::Vpu);
  EXPECT_EQ(s.switches, 0);
  EXPECT_EQ(s.src0, 2);
  Program p = ok("loop S1, S2, end step=-128\nend: loop S1, S2, end2\nend2: nop\n");
  EXPECT_EQ(p.bundles[0][Slot::Spu].switches, 0x80);
  EXPECT_EQ(p.bundles[1][Slot::Spu].switches, 1);    // step 1 by default
}

TEST(TpcAssembler, LabelsResolveToBundleIndicesInTheImmediate) {
  Program p = ok(
      "top:    mov S1, 0\n"
      "        loop S1, S2, body_end step=2   // forward reference\n"
      "        add.f32 V1, V1, V2\n"
      "body_end: add.f32 V3, V3, V1\n"
      "        jmp top @!SP3\n"
      "        jmp 2\n"
      "        jmp past_the_end\n"
      "past_the_end:\n");
  ASSERT_EQ(p.bundles.size(), 7u);
  EXPECT_EQ(p.bundles[1][Slot::Spu].op, Op::Loop);
  EXPECT_TRUE(p.bundles[1][Slot::Spu].use_imm);
  EXPECT_EQ(p.bundles[1].imm, 3u);
  EXPECT_EQ(p.bundles[1][Slot::Spu].dst, 1);
  EXPECT_EQ(p.bundles[1][Slot::Spu].src0, 2);
  EXPECT_EQ(p.bundles[1][Slot::Spu].src1, 0);
  EXPECT_EQ(p.bundles[4].imm, 0u);
  EXPECT_TRUE(p.bundles[4][Slot::Spu].pred_invert);
  EXPECT_EQ(p.bundles[4][Slot::Spu].pred, 3);
  EXPECT_EQ(p.bundles[5].imm, 2u);
  EXPECT_EQ(p.bundles[6].imm, 7u);
  EXPECT_EQ(p.labels.at("body_end"), 3u);
  EXPECT_EQ(p.labels.at("past_the_end"), 7u);
}

TEST(TpcAssembler, TheSharedImmediate) {
  // Two slots may use the immediate when they agree on its 32 bits.
  Program p = ok("add.f32 V1, V2, 1.0; add.i32 S1, S2, 0x3f800000\n");
  EXPECT_EQ(p.bundles[0].imm, 0x3F800000u);
  p = ok("x: jmp x; ld_slm S1, 0\n");
  EXPECT_EQ(p.bundles[0].imm, 0u);
  AsmDiagnostic e = first_error("add.i32 S1, S2, 5; add.i32 V1, V2, 6\n");
  EXPECT_EQ(e.line, 1u);
  EXPECT_NE(e.message.find("conflicting immediates"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("'5'"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("'6'"), std::string::npos) << e.message;
  // A label and a different constant.
  e = first_error("nop\nloop S1, S2, end; ld_slm S3, 8\nend: nop\n");
  EXPECT_EQ(e.line, 2u);
  EXPECT_NE(e.message.find("conflicting immediates"), std::string::npos) << e.message;
}

TEST(TpcAssembler, ConstantsAndExpressions) {
  Program p = ok(
      ".equ LANES 64\n"
      ".equ BYTES, LANES * 4\n"           // a comma is allowed
      ".equ ONE 0x3f800000\n"
      ".equ HALF 0.5\n"
      ".equ T 3\n"
      "ld_vlm.f32 V1, BYTES * 2\n"
      "add.f32 V1, V1, ONE\n"
      "mul.f32 V1, V1, HALF\n"
      "ld_tnsr V2, I0, T\n"
      "a: loop S1, S2, b step=LANES\n"
      "b: nop\n");
  EXPECT_EQ(p.bundles[0].imm, 512u);
  EXPECT_EQ(p.bundles[1].imm, 0x3F800000u);
  EXPECT_EQ(p.bundles[2].imm, f32(0.5f));
  EXPECT_EQ(p.bundles[3][Slot::Load].src2, 3);
  EXPECT_EQ(p.bundles[4][Slot::Spu].switches, 64);
  // -D style definitions come before the source.
  AssembleOptions options;
  options.defines = {{"N", "12"}, {"SCALE", "2.0"}};
  AssembleResult r = assemble("mov S1, N + 1\nmul.f32 V1, V1, SCALE\n", "d.s", options);
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_EQ(r.program.bundles[0].imm, 13u);
  EXPECT_EQ(r.program.bundles[1].imm, f32(2.0f));
}

TEST(TpcAssembler, IncludesAreRelativeToTheIncludingFile) {
  const Files files = {
      {"src/main.s", ".include \"lib/defs.inc\"\nmov S1, A + B\n"},
      {"src/lib/defs.inc", ".equ A 1\n.include \"more.inc\"\n"},      // relative to src/lib
      {"src/lib/more.inc", ".equ B 2\nadd.i32 S2, S2, A\n"},
      {"common/extra.inc", ".equ C 40\n"},
  };
  AssembleOptions options = in_memory(files);
  AssembleResult r = assemble_file("src/main.s", options);
  ASSERT_TRUE(r.ok()) << r.error_text();
  ASSERT_EQ(r.program.bundles.size(), 2u);
  EXPECT_EQ(r.program.bundles[0].imm, 1u);   // from more.inc
  EXPECT_EQ(r.program.bundles[1].imm, 3u);
  // A search directory, for includes not found next to the including file.
  options.include_dirs = {"common"};
  r = assemble(".include \"extra.inc\"\nmov S1, C\n", "src/x.s", options);
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_EQ(r.program.bundles[0].imm, 40u);
}

TEST(TpcAssembler, IncludeErrors) {
  AsmDiagnostic e = first_error("nop\n  .include \"missing.inc\"\n");
  EXPECT_EQ(e.file, "test.s");
  EXPECT_EQ(e.line, 2u);
  EXPECT_EQ(e.column, 12u);
  EXPECT_NE(e.message.find("include file 'missing.inc' not found"), std::string::npos) << e.message;
  // a.inc includes b.inc includes a.inc.
  const Files files = {{"a.inc", "nop\n.include \"b.inc\"\n"}, {"b.inc", ".include \"a.inc\"\n"}};
  AssembleResult r = assemble(".include \"a.inc\"\n", "main.s", in_memory(files));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors[0].file, "b.inc");
  EXPECT_EQ(r.errors[0].line, 1u);
  EXPECT_NE(r.errors[0].message.find("recursive include of 'a.inc'"), std::string::npos) << r.errors[0].message;
  EXPECT_NE(r.errors[0].message.find("included from a.inc:2"), std::string::npos) << r.errors[0].message;
  // Including itself.
  r = assemble(".include \"self.s\"\n", "self.s", in_memory({{"self.s", ""}}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors[0].message.find("recursive include"), std::string::npos);
  // An error inside an included file names that file and line.
  r = assemble("nop\n.include \"bad.inc\"\n", "main.s", in_memory({{"bad.inc", "nop\nbogus V1\n"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors[0].to_string(), "bad.inc:2:1: unknown mnemonic 'bogus' (included from main.s:2)");
}

TEST(TpcAssembler, Macros) {
  Program p = ok(
      ".macro ZERO reg\n"
      "        mov \\reg, 0\n"
      ".endm\n"
      ".macro COUNT it, n, scratch\n"
      "        ZERO \\it\n"
      "        loop \\it, \\n, done\\@      // \\@ makes the label unique per call\n"
      "done\\@: add.i32 \\scratch, \\scratch, 1\n"
      ".endm\n"
      "start:  COUNT S1, S2, S3\n"
      "        COUNT S4, S5, S6\n");
  ASSERT_EQ(p.bundles.size(), 6u);
  EXPECT_EQ(p.labels.at("start"), 0u);
  EXPECT_EQ(p.labels.at("done0"), 2u);
  EXPECT_EQ(p.labels.at("done2"), 5u);
  EXPECT_EQ(p.bundles[0][Slot::Spu].op, Op::SMov);
  EXPECT_EQ(p.bundles[1].imm, 2u);
  EXPECT_EQ(p.bundles[4].imm, 5u);
  EXPECT_EQ(p.bundles[4][Slot::Spu].dst, 4);
}

TEST(TpcAssembler, MacroErrors) {
  AsmDiagnostic e = first_error(".macro M a\n  add.i32 \\a, \\a, \\b\n.endm\nnop\nM S1\n");
  EXPECT_EQ(e.line, 2u);
  EXPECT_NE(e.message.find("unknown macro parameter '\\b'"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("in macro 'M' called at test.s:5"), std::string::npos) << e.message;
  e = first_error(".macro M a\n  nop\n.endm\nM S1, S2\n");
  EXPECT_EQ(e.line, 4u);
  EXPECT_NE(e.message.find("takes 1 argument(s), got 2"), std::string::npos) << e.message;
  e = first_error(".macro M\n  nop\n");
  EXPECT_EQ(e.line, 1u);
  EXPECT_NE(e.message.find("missing .endm"), std::string::npos) << e.message;
  e = first_error(".macro R\n  R\n.endm\nR\n");
  EXPECT_NE(e.message.find("nested too deeply"), std::string::npos) << e.message;
  e = first_error(".macro add x\n.endm\n");
  EXPECT_NE(e.message.find("is a mnemonic"), std::string::npos) << e.message;
  e = first_error(".macro M\n.endm\n.macro M\n.endm\n");
  EXPECT_EQ(e.line, 3u);
  EXPECT_NE(e.message.find("already defined"), std::string::npos) << e.message;
  e = first_error(".macro M\n.endm\nM; nop\n");
  EXPECT_NE(e.message.find("alone on its line"), std::string::npos) << e.message;
  e = first_error(".macro M x\n  mov S1, \\x\n.endm\nM bogus\n");
  EXPECT_EQ(e.line, 2u);
  EXPECT_NE(e.message.find("undefined constant 'bogus'"), std::string::npos) << e.message;
}

struct ErrorCase {
  const char* source;
  unsigned line;
  unsigned column;   // 0: not checked
  const char* message;
};

TEST(TpcAssembler, ErrorsNameTheLineColumnAndProblem) {
  const ErrorCase cases[] = {
      {"nop\nfoo V1, V2\n", 2, 1, "unknown mnemonic 'foo'"},
      {"add.f32 V1, V2\n", 1, 0, "'add' takes 3 operands, got 2"},
      {"add.f32 V1, V2, V3, V4\n", 1, 21, "'add' takes 3 operands, got 4"},
      {"add.f32 V1, S2, V3\n", 1, 13, "operand 2 of 'add' must be a vector register"},
      {"ld_tnsr V1, S1, 0\n", 1, 13, "operand 2 of 'ld_tnsr' must be an index register"},
      {"jmp V1\n", 1, 5, "operand 1 of 'jmp' must be a label"},
      {"add.f32 V40, V1, V2\n", 1, 9, "V40 is out of range (V0..V39)"},
      {"mov S36, 1\n", 1, 5, "S36 is out of range (S0..S35)"},
      {"imov I8, I1\n", 1, 6, "I8 is out of range (I0..I7)"},
      {"cmp.eq.i32 SP16, S1, S2\n", 1, 12, "SP16 is out of range"},
      {"add.f32 V1, V2, V3 @VP8\n", 1, 21, "VP8 is out of range (VP0..VP7)"},
      {"ld_tnsr V1, I1, 16\n", 1, 17, "tensor number '16' is not in 0..15"},
      {"jmp nowhere\n", 1, 5, "undefined label 'nowhere'"},
      {"add.i32 S1, S2, N\n", 1, 17, "undefined constant 'N'"},
      {"x: nop\nadd.i32 S1, S2, x\n", 2, 17, "'x' is a label"},
      {"a: nop\n\na: nop\n", 3, 1, "duplicate label 'a' (defined at test.s:1)"},
      {".equ A 1\n.equ A 2\n", 2, 6, "'A' is already defined"},
      {"add.f32 V1, V2, V3; sub.f32 V4, V5, V6\n", 1, 21, "two instructions for the VPU slot"},
      {"ld_tnsr V1, I0, 0; ld_slm S1, 0\n", 1, 20, "two instructions for the Load slot"},
      {"add S1, S2, S3\n", 1, 1, "'add' needs a data type"},
      {"mov.i32 S1, S2\n", 1, 1, "'mov' (SPU slot) takes no data type"},
      {"convert.f32 V1, V2\n", 1, 1, "needs a source and a target type"},
      {"cmp.f32 SP1, S1, S2\n", 1, 1, "'cmp' needs a kind"},
      {"cmp.lt.gt.f32 SP1, S1, S2\n", 1, 1, "two kinds"},
      {"add.q7 V1, V2, V3\n", 1, 1, "unknown suffix '.q7'"},
      {"add.f32 S1, S2, 1\n", 1, 17, "integer '1' for a f32 operation"},
      {"add.i32 S1, S2, 1.5\n", 1, 17, "float literal '1.5' for an i32 operation"},
      {"add.f32 S1, S2, S3 @VP1\n", 1, 20, "a vector predicate can't predicate the SPU slot"},
      {"st_slm 0, S1 @!VP1\n", 1, 14, "a vector predicate can't predicate the Store slot"},
      {"add.f32 V1, V2, V3 @S1\n", 1, 21, "expected a predicate register"},
      {"add.f32 V1, V2, V3 @SP1 @SP2\n", 1, 25, "more than one predicate"},
      {"add.bf16 S1, S2, S3\n", 1, 1, "SPU arithmetic takes f32, i32 or u32, not bf16"},
      {"shl.f32 V1, V2, V3\n", 1, 1, "shifts take an integer type, not f32"},
      {"div.i32 V1, V2, V3\n", 1, 1, "vector div takes f32 or bf16"},
      {"special.exp.i32 V1, V2\n", 1, 1, "special functions take f32 or bf16"},
      {"lane_id.f32 V1\n", 1, 1, "lane_id takes an integer type"},
      {"convert.f32.i32 V1, V2 part=1\n", 1, 1, "part=1 is beyond convert.f32.i32 (parts 0..0)"},
      {"ld_slm S1, 0 @VP1\n", 1, 1, "a vector predicate can't predicate a scalar load"},
      {"imov_dim I1, S1\n", 1, 1, "needs dim=0..4"},
      {"imov_dim I1, S1 dim=5\n", 1, 17, "dim= must be an integer in 0..4"},
      {"x: nop\nloop S1, S2, x\n", 2, 14, "a loop's body must end after the loop"},
      {"loop S1, S2, x step=0\nx: nop\n", 1, 16, "a loop step can't be 0"},
      {"loop S1, S2, x step=200\nx: nop\n", 1, 16, "step= must be an integer in -128..127"},
      {"convert.f32.i32 S1, S2 part=1\n", 1, 24, "has no option 'part'"},
      {"convert.f32.i32 V1, V2 rnd=up\n", 1, 24, "rnd= must be one of rne, rz, rd, ru"},
      {"add.f32 V1, V2, V3 dim=1\n", 1, 20, "has no option 'dim'"},
      {"mov S1, 5000000000\n", 1, 9, "does not fit 32 bits"},
      {"mov S1, 1 / 0\n", 1, 11, "division by zero"},
      {"mov S1, 1 << 64\n", 1, 11, "shift count 64 is not in 0..63"},
      {"mov S1, (1 + 2\n", 1, 15, "missing ')'"},
      {"mov S1, 1.5 + 1\n", 1, 13, "a float literal can't be used in arithmetic"},
      {"mov S1, 0x\n", 1, 9, "bad number '0x'"},
      {"mov S1, 12ab\n", 1, 9, "bad number '12ab'"},
      {"mov S1, 99999999999999999999\n", 1, 9, "number too large"},
      {"mov S1, 1e99\n", 1, 9, "out of range"},
      {"mov S1, $\n", 1, 9, "unexpected character '$'"},
      {"add.f32 V1, V2 V3\n", 1, 16, "unexpected 'V3' (a missing ','?)"},
      {"add.f32 V1, V2,\n", 1, 0, "missing operand after ','"},
      {"add.f32 V1, V2 + 1, V3\n", 1, 16, "a register can't be part of an expression"},
      {"; halt\n", 1, 1, "empty instruction"},
      {"halt;; nop\n", 1, 6, "empty instruction"},
      {"nop V1\n", 1, 1, "'nop' takes no operands"},
      {"mov S1, \"x\"\n", 1, 9, "expected a value"},
      {".include missing.inc\n", 1, 10, "expected a \"file name\""},
      {".include \"x.inc\n", 1, 10, "unterminated string"},
      {".frobnicate\n", 1, 1, "unknown directive '.frobnicate'"},
      {".endm\n", 1, 1, ".endm without .macro"},
      {"V1: nop\n", 1, 1, "'V1' is a register name"},
      {".equ true 1\n", 1, 6, "can't be a constant name"},
      {"jmp 1.5\n", 1, 5, "bundle number '1.5'"},
      {".bundle 1, 2\n", 1, 0, ".bundle takes 5 values"},
      {".bundle 0x41, 0, 0, 0, 0\n", 1, 0, "Load slot, opcode: 65 is not defined in the Load slot"},
  };
  for (const ErrorCase& c : cases) {
    AsmDiagnostic e = first_error(c.source);
    EXPECT_EQ(e.file, "test.s") << c.source;
    EXPECT_EQ(e.line, c.line) << c.source << e.to_string();
    if (c.column) {
      EXPECT_EQ(e.column, c.column) << c.source << e.to_string();
    }
    EXPECT_NE(e.message.find(c.message), std::string::npos) << c.source << "gave: " << e.to_string();
  }
}

TEST(TpcAssembler, DiagnosticTextAndSeveralErrorsInOneFile) {
  AssembleResult r = assemble("nop\nfoo\nadd.f32 V1, V2, V99\njmp nowhere\n", "k.s");
  ASSERT_EQ(r.errors.size(), 3u);
  EXPECT_EQ(r.errors[0].to_string(), "k.s:2:1: unknown mnemonic 'foo'");
  EXPECT_EQ(r.errors[1].to_string(), "k.s:3:17: V99 is out of range (V0..V39)");
  EXPECT_EQ(r.errors[2].to_string(), "k.s:4:5: undefined label 'nowhere'");
  EXPECT_EQ(r.error_text(), r.errors[0].to_string() + "\n" + r.errors[1].to_string() + "\n" +
                                r.errors[2].to_string() + "\n");
  // A bad line still counts as a bundle, so later labels keep their numbers.
  r = assemble("foo\nx: halt\n", "k.s");
  EXPECT_EQ(r.program.labels.at("x"), 1u);
  // The error limit.
  std::string many;
  for (int i = 0; i < 50; ++i) many += "bogus\n";
  AssembleOptions options;
  options.max_errors = 5;
  r = assemble(many, "k.s", options);
  ASSERT_EQ(r.errors.size(), 6u);
  EXPECT_EQ(r.errors.back().message, "too many errors; stopping");
  // A file that can't be read.
  r = assemble_file("/nonexistent/dir/k.s");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].to_string(), "/nonexistent/dir/k.s: cannot read the file");
}

TEST(TpcAssembler, RawBundles) {
  // .bundle takes the four slots and the immediate as numbers (what the disassembler writes for a
  // bundle with no instruction form); it is decoded, so it must be legal.
  Program p = ok(".bundle 0, 0, 0x308141, 0, 0x12345678\n");
  ASSERT_EQ(p.bundles.size(), 1u);
  EXPECT_EQ(p.bundles[0][Slot::Load].op, Op::Nop);
  EXPECT_EQ(p.bundles[0][Slot::Vpu].op, Op::VAdd);
  EXPECT_EQ(p.bundles[0][Slot::Vpu].src1, 3);
  EXPECT_EQ(p.bundles[0].imm, 0x12345678u);   // no slot reads it: only .bundle can say so
  p = ok(".equ VADD 65\n.bundle 0, 0, VADD | 3 << 20, 0, -1\n");
  EXPECT_EQ(p.bundles[0][Slot::Vpu].src1, 3);
  EXPECT_EQ(p.bundles[0].imm, 0xFFFFFFFFu);
}

TEST(TpcAssembler, TheFirstExampleOfAssemblyMdAssembles) {
  std::ifstream in(std::string(HPUSIM_SOURCE_DIR) + "/arch/tpc/ASSEMBLY.md");
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string text = doc.str();
  const size_t begin = text.find("```asm\n");
  ASSERT_NE(begin, std::string::npos);
  const size_t end = text.find("```", begin + 7);
  Program p = ok(text.substr(begin + 7, end - begin - 7));
  ASSERT_EQ(p.bundles.size(), 7u);
  EXPECT_EQ(p.labels.at("body_end"), 5u);
  EXPECT_EQ(format_bundle(p.bundles[5]), "add.f32 V2, V1, V1 @!SP2; st_tnsr I1, 1, V3");
}

// ---- robustness ----

const char* const kCorpus[] = {
    // A feature tour.
    ".equ N 16\n"
    ".macro BUMP r, by\n"
    "  add.i32 \\r, \\r, \\by\n"
    ".endm\n"
    ".include \"defs.inc\"\n"
    "start: mov S1, S0; ld_tnsr V1, I0, 0; mov.f32 V2, 1.5f; st_tnsr I0, 1, V3\n"
    "  loop S1, S2, end step=-3\n"
    "  cmp.lt.f32 VP1, V1, S3 @!VP2\n"
    "  sel.f32 V3, V1, V2, VP1\n"
    "  convert.f32.bf16 V4, V3 part=1 rnd=rz\n"
    "  BUMP S4, N\n"
    "  special.exp.f32 V5, V4; iget_dim S6, I1 dim=3\n"
    "end: reduce.max.f32 V6, V5 @SP2 // comment\n"
    "  pmov SP3, true; pmov VP3, VP1\n"
    "  jmp start @!SP3\n"
    "  .bundle 0, 0, 0x308141, 0, 0\n"
    "  halt\n",
    // Slots and immediates.
    "ld_slm S1, 0x40; mov S2, 64 # shared\n"
    "imov I1, 0\n"
    "iadd_dim I1, -1 dim=0; \n"
    "ld_vlm.f32 V1, S1; shuffle.i32 V2, V1, V3; st_vlm 256, V2\n"
    "lane_id.u16 V7\n"
    "div.f32 S1, S2, -0.0\n",
};

const Files kCorpusFiles = {{"defs.inc", ".equ T 3\nnop\n"}};

std::string mutate(std::string text, std::mt19937& rng) {
  static const std::string alphabet =
      "abcdefghijklmnopqrstuvwxyzVSIP0123456789 \t\n;,:@!=()+-*/%&|^~.#\"\\'$xX_fe";
  static const std::vector<std::string> words = {
      "V39", "V40", "S35", "S36", "SP15", "VP8", "I7", "I9", "@!VP1", "@SP1", ".include \"defs.inc\"", ".include \"test.s\"",
      ".macro", ".endm", ".equ", ".bundle", "\\@", "\\r", "step=0", "dim=9", "part=4", "rnd=zz", "0x", "1e40", "-",
      "99999999999999999999999", "((((((((((", "loop", "jmp", "halt", "cmp.lt", ".f32", "nop", "BUMP", ";", ",", "end"};
  auto line_start = [&](size_t at) {
    const size_t nl = text.rfind('\n', at == 0 ? 0 : at - 1);
    return nl == std::string::npos ? 0 : nl + 1;
  };
  const unsigned edits = 1 + rng() % 3;
  for (unsigned e = 0; e < edits && !text.empty(); ++e) {
    const size_t at = rng() % (text.size() + 1);
    switch (rng() % 9) {
      case 6: {   // delete a line
        const size_t begin = line_start(at), end = text.find('\n', begin);
        text.erase(begin, end == std::string::npos ? std::string::npos : end - begin + 1);
        break;
      }
      case 7: {   // duplicate a line
        const size_t begin = line_start(at), end = text.find('\n', begin);
        text.insert(begin, end == std::string::npos ? text.substr(begin) + "\n" : text.substr(begin, end - begin + 1));
        break;
      }
      case 8: {   // join a line with the next one as more slots of one bundle
        const size_t nl = text.find('\n', at);
        if (nl != std::string::npos) text[nl] = ';';
        break;
      }
      case 0: text.erase(at, 1 + rng() % 8); break;
      case 1: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      case 2: if (at < text.size()) text[at] = alphabet[rng() % alphabet.size()]; break;
      case 3: text.insert(at, words[rng() % words.size()]); break;
      case 4: {   // duplicate a slice (lines, macro bodies...)
        const size_t from = rng() % text.size(), length = rng() % 80;
        text.insert(at, text.substr(from, length));
        break;
      }
      case 5: text.insert(at, 1, static_cast<char>(rng() % 256)); break;
    }
  }
  return text;
}

TEST(TpcAssembler, NeverCrashesOnMutatedSources) {
  // Both corpus programs assemble; thousands of mutations of them either assemble (and then
  // round-trip through the disassembler) or give diagnostics with a location.
  std::mt19937 rng(424242);
  for (const char* source : kCorpus) ok(source, kCorpusFiles);
  Files files = kCorpusFiles;
  files["test.s"] = kCorpus[0];
  int assembled = 0, failed = 0;
  for (int i = 0; i < 6000; ++i) {
    const std::string source = mutate(kCorpus[i % 2], rng);
    AssembleResult r = assemble(source, "test.s", in_memory(files));
    if (!r.ok()) {
      ++failed;
      for (const AsmDiagnostic& d : r.errors) {
        ASSERT_FALSE(d.message.empty());
        ASSERT_FALSE(d.file.empty());
      }
      continue;
    }
    ++assembled;
    const std::string text = disassemble(r.program);
    AssembleResult again = assemble(text, "dis.s");
    ASSERT_TRUE(again.ok()) << again.error_text() << "\nsource:\n" << source << "\ndisassembly:\n" << text;
    ASSERT_TRUE(again.program.bundles == r.program.bundles) << source << "\n" << text;
  }
  EXPECT_GT(assembled, 300);
  EXPECT_GT(failed, 1000);
}

TEST(TpcAssembler, NeverCrashesOnRandomBytes) {
  std::mt19937 rng(99);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 400, '\0');
    for (char& c : junk) c = static_cast<char>(rng() % 4 == 0 ? "\n;,@:.\\\""[rng() % 8] : rng() % 256);
    AssembleResult r = assemble(junk, "junk.s", in_memory({}));
    for (const AsmDiagnostic& d : r.errors) ASSERT_FALSE(d.message.empty());
  }
  // Deep nesting is refused, not a stack overflow.
  AsmDiagnostic e = first_error("mov S1, " + std::string(100000, '(') + "1\n");
  EXPECT_NE(e.message.find("nested too deeply"), std::string::npos) << e.message;
  e = first_error("mov S1, " + std::string(100000, '-') + "1\n");
  EXPECT_NE(e.message.find("nested too deeply"), std::string::npos) << e.message;
}

}  // namespace
}  // namespace hpusim::tpc
