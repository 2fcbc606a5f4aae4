// The 256-bit bundle encoding (ISA.md "Bundles and encoding"): golden bytes computed by hand pin
// the layout, randomized bundles round-trip, and decode() refuses every illegal form with a
// message that names the slot, the field and the value.
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <stdexcept>
#include <string>

#include "arch/tpc/isa.h"
#include "tests/tpc/tpc_random.h"

namespace hpusim::tpc {
namespace {

using Bytes = std::array<uint8_t, kBundleBytes>;

// A bundle image with `slot_bytes` (7 bytes, little-endian) at the slot's offset.
Bytes with_slot(Slot slot, std::array<uint8_t, 7> slot_bytes, uint32_t imm = 0, Bytes base = {}) {
  for (unsigned i = 0; i < 7; ++i) base[static_cast<unsigned>(slot) * 7 + i] = slot_bytes[i];
  for (unsigned i = 0; i < 4; ++i) base[28 + i] = static_cast<uint8_t>(imm >> (8 * i));
  return base;
}

SlotInstr instr(Op op, uint8_t dst, uint8_t src0, uint8_t src1, uint8_t src2, DType dtype = DType::F32) {
  SlotInstr s;
  s.op = op;
  s.dst = dst;
  s.src0 = src0;
  s.src1 = src1;
  s.src2 = src2;
  s.dtype = dtype;
  return s;
}

void expect_golden(const Bundle& b, const Bytes& expected) {
  EXPECT_EQ(encode(b), expected);
  std::string error;
  auto back = decode(expected.data(), &error);
  ASSERT_TRUE(back) << error;
  EXPECT_TRUE(*back == b);
}

TEST(TpcEncoding, GoldenVpuAdd) {
  // add.f32 V1, V2, V3 in the VPU slot (bits 167:112 = bytes 14..20):
  // opcode 65 = 0x41 | dst 1 << 8 | src0 2 << 14 | src1 3 << 20 = 0x308141.
  Bundle b;
  b[Slot::Vpu] = instr(Op::VAdd, 1, 2, 3, 0);
  expect_golden(b, with_slot(Slot::Vpu, {0x41, 0x81, 0x30, 0x00, 0x00, 0x00, 0x00}));
}

TEST(TpcEncoding, GoldenSpuAddImmediate) {
  // add.i32 S1, S2, 100: opcode 2 | 1 << 8 | 2 << 14 | dtype 2 << 32 | imm flag 1 << 41
  // = 0x020200008102 in bytes 7..13; the immediate 100 in bytes 28..31.
  Bundle b;
  b[Slot::Spu] = instr(Op::SAdd, 1, 2, 0, 0, DType::I32);
  b[Slot::Spu].use_imm = true;
  b.imm = 100;
  expect_golden(b, with_slot(Slot::Spu, {0x02, 0x81, 0x00, 0x00, 0x02, 0x02, 0x00}, 100));
}

TEST(TpcEncoding, GoldenLoadTensorWithInvertedVectorPredicate) {
  // ld_tnsr V5, I2, 3 @!VP1: opcode 128 | 5 << 8 | 2 << 14 | tensor 3 << 26 | pred 1 << 35 |
  // vector bit 39 | invert bit 40 = 0x01880C008580 in bytes 0..6.
  Bundle b;
  b[Slot::Load] = instr(Op::LdTnsr, 5, 2, 0, 3);
  b[Slot::Load].pred = 1;
  b[Slot::Load].pred_vector = true;
  b[Slot::Load].pred_invert = true;
  expect_golden(b, with_slot(Slot::Load, {0x80, 0x85, 0x00, 0x0C, 0x88, 0x01, 0x00}));
}

TEST(TpcEncoding, GoldenStoreTensor) {
  // st_tnsr I2, 3, V7 @SP4: opcode 192 | 2 << 14 | 7 << 20 | 3 << 26 | pred 4 << 35
  // = 0x200C7080C0 in bytes 21..27.
  Bundle b;
  b[Slot::Store] = instr(Op::StTnsr, 0, 2, 7, 3);
  b[Slot::Store].pred = 4;
  expect_golden(b, with_slot(Slot::Store, {0xC0, 0x80, 0x70, 0x0C, 0x20, 0x00, 0x00}));
}

TEST(TpcEncoding, GoldenLoopWithNegativeStepAndVectorCompareOfAScalar) {
  // loop S32, S1, 7 step=-2: opcode 30 | 32 << 8 | 1 << 14 | imm flag 1 << 41 | switches 0xFE << 42
  // = 0x3FA000000601E; cmp.lt.f32 VP2, V4, S6: opcode 79 | 2 << 8 | 4 << 14 | 6 << 20 |
  // switches (Lt 2 | kSwScalarSrc 0x80) << 42 = 0x20800061024F.
  Bundle b;
  b[Slot::Spu] = instr(Op::Loop, 32, 1, 0, 0);
  b[Slot::Spu].use_imm = true;
  b[Slot::Spu].switches = 0xFE;
  b[Slot::Vpu] = instr(Op::VCmp, 2, 4, 6, 0);
  b[Slot::Vpu].switches = static_cast<uint8_t>(static_cast<uint8_t>(Cmp::Lt) | kSwScalarSrc);
  b.imm = 7;
  Bytes expected = with_slot(Slot::Spu, {0x1E, 0x60, 0x00, 0x00, 0x00, 0xFA, 0x03}, 7);
  expected = with_slot(Slot::Vpu, {0x4F, 0x02, 0x61, 0x00, 0x00, 0x08, 0x02}, 7, expected);
  expect_golden(b, expected);
}

TEST(TpcEncoding, EmptyBundleIsAllZero) {
  expect_golden(Bundle{}, Bytes{});
}

TEST(TpcEncoding, RandomValidBundlesRoundTrip) {
  std::mt19937 rng(20240611);
  for (int i = 0; i < 20000; ++i) {
    const Bundle b = testing::random_valid_bundle(rng);
    const Bytes bytes = encode(b);
    std::string error;
    auto back = decode(bytes.data(), &error);
    ASSERT_TRUE(back) << "bundle " << i << ": " << error;
    ASSERT_TRUE(*back == b) << "bundle " << i;
    ASSERT_EQ(encode(*back), bytes);
  }
}

TEST(TpcEncoding, AnyAcceptedImageReencodesToTheSameBytes) {
  // Random images with legal opcodes and clear reserved bits: whatever decode accepts must encode
  // back bit for bit (no field is dropped or normalized).
  std::mt19937 rng(7);
  const std::vector<const OpInfo*> ops[kSlots] = {testing::ops_of(Slot::Load), testing::ops_of(Slot::Spu),
                                                   testing::ops_of(Slot::Vpu), testing::ops_of(Slot::Store)};
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    Bytes bytes;
    for (auto& byte : bytes) byte = static_cast<uint8_t>(rng());
    for (unsigned s = 0; s < kSlots; ++s) {
      uint64_t v = 0;
      for (unsigned b = 0; b < 7; ++b) v |= uint64_t{bytes[s * 7 + b]} << (8 * b);
      v = (v & ~uint64_t{0xFF}) | static_cast<uint8_t>(ops[s][rng() % ops[s].size()]->op);
      v &= (uint64_t{1} << 50) - 1;                                  // bits 55:50 are reserved
      if (rng() % 4 != 0) v &= ~uint64_t{0xE38E3800};                 // most registers < 8
      if (s == 1 || s == 3) v &= ~(uint64_t{1} << 39);               // no VP in SPU / Store
      for (unsigned b = 0; b < 7; ++b) bytes[s * 7 + b] = static_cast<uint8_t>(v >> (8 * b));
    }
    auto b = decode(bytes.data());
    if (!b) continue;
    ++accepted;
    ASSERT_EQ(encode(*b), bytes);
  }
  EXPECT_GT(accepted, 2000);
}

std::string rejection(const Bytes& bytes) {
  std::string error;
  auto b = decode(bytes.data(), &error);
  EXPECT_FALSE(b.has_value());
  return error;
}

Bytes encoded(Slot slot, const SlotInstr& s) {
  Bundle b;
  b[slot] = s;
  return encode(b);
}

TEST(TpcEncoding, RejectsOpcodesNotDefinedInTheSlot) {
  // An opcode of another slot.
  std::string e = rejection(encoded(Slot::Spu, instr(Op::VAdd, 0, 0, 0, 0)));
  EXPECT_NE(e.find("SPU slot"), std::string::npos) << e;
  EXPECT_NE(e.find("opcode"), std::string::npos) << e;
  EXPECT_NE(e.find("65"), std::string::npos) << e;
  e = rejection(encoded(Slot::Store, instr(Op::LdTnsr, 0, 0, 0, 0)));
  EXPECT_NE(e.find("Store slot"), std::string::npos) << e;
  EXPECT_NE(e.find("128"), std::string::npos) << e;
  // Undefined values inside each slot's range.
  for (unsigned v : {33u, 63u, 91u, 127u, 135u, 191u, 196u, 255u}) {
    e = rejection(encoded(v < 64 ? Slot::Spu : v < 128 ? Slot::Vpu : v < 192 ? Slot::Load : Slot::Store,
                          instr(static_cast<Op>(v), 0, 0, 0, 0)));
    EXPECT_NE(e.find("opcode: " + std::to_string(v)), std::string::npos) << e;
  }
  // Every opcode is accepted in its own slot and refused in the three others.
  for (unsigned v = 1; v < 256; ++v) {
    const OpInfo* info = op_info(static_cast<Op>(v));
    for (unsigned s = 0; s < kSlots; ++s) {
      auto b = decode(encoded(static_cast<Slot>(s), instr(static_cast<Op>(v), 0, 0, 0, 0)).data());
      EXPECT_EQ(b.has_value(), info != nullptr && info->slot == static_cast<Slot>(s)) << "opcode " << v << " slot " << s;
    }
  }
}

TEST(TpcEncoding, RejectsRegistersBeyondTheirFile) {
  struct Case {
    Slot slot;
    SlotInstr s;
    const char* field;
    const char* value;
  };
  SlotInstr vors_scalar = instr(Op::VAdd, 0, 0, 36, 0);
  vors_scalar.switches = kSwScalarSrc;
  const Case cases[] = {
      {Slot::Vpu, instr(Op::VAdd, 40, 0, 0, 0), "dst", "V40"},
      {Slot::Vpu, instr(Op::VAdd, 0, 63, 0, 0), "src0", "V63"},
      {Slot::Spu, instr(Op::SAdd, 36, 0, 0, 0), "dst", "S36"},
      {Slot::Spu, instr(Op::SAdd, 0, 0, 36, 0), "src1", "S36"},          // SorImm without the imm flag
      {Slot::Vpu, vors_scalar, "src1", "S36"},                            // VorS naming a scalar
      {Slot::Load, instr(Op::LdTnsr, 0, 8, 0, 0), "src0", "I8"},
      {Slot::Spu, instr(Op::IMov, 0, 8, 0, 0), "src0", "I8"},             // IorImm without the imm flag
      {Slot::Spu, instr(Op::SCmp, 16, 0, 0, 0), "dst", "SP16"},
      {Slot::Spu, instr(Op::SSel, 0, 0, 0, 16), "src2", "SP16"},
      {Slot::Vpu, instr(Op::VCmp, 8, 0, 0, 0), "dst", "VP8"},
      {Slot::Vpu, instr(Op::VSel, 0, 0, 0, 8), "src2", "VP8"},
      {Slot::Load, instr(Op::LdTnsr, 0, 0, 0, 16), "src2", "tensor 16"},
      {Slot::Store, instr(Op::StTnsr, 0, 0, 0, 16), "src2", "tensor 16"},
      {Slot::Store, instr(Op::StTnsr, 0, 0, 40, 0), "src1", "V40"},
  };
  for (const Case& c : cases) {
    const std::string e = rejection(encoded(c.slot, c.s));
    EXPECT_NE(e.find(std::string(c.field) + ": " + c.value), std::string::npos) << e;
  }
  // The same numbers are fine where the field is not a register of that file.
  SlotInstr imm_src = instr(Op::SAdd, 0, 0, 63, 0);
  imm_src.use_imm = true;                        // src1 is the immediate: the field is not read
  EXPECT_TRUE(decode(encoded(Slot::Spu, imm_src).data()));
  EXPECT_TRUE(decode(encoded(Slot::Vpu, instr(Op::VAdd, 0, 0, 39, 0)).data()));
  EXPECT_TRUE(decode(encoded(Slot::Spu, instr(Op::Halt, 63, 63, 63, 63)).data()));   // no operands
}

TEST(TpcEncoding, RejectsVectorPredicatesInTheSpuAndStoreSlots) {
  for (Slot slot : {Slot::Spu, Slot::Store}) {
    SlotInstr s = instr(slot == Slot::Spu ? Op::SAdd : Op::StSlm, 0, 0, 0, 0);
    s.pred_vector = true;
    s.pred = 1;
    const std::string e = rejection(encoded(slot, s));
    EXPECT_NE(e.find("vector predicate"), std::string::npos) << e;
    EXPECT_NE(e.find(slot == Slot::Spu ? "SPU slot" : "Store slot"), std::string::npos) << e;
  }
  for (Slot slot : {Slot::Vpu, Slot::Load}) {
    SlotInstr s = instr(slot == Slot::Vpu ? Op::VAdd : Op::LdMov, 0, 0, 0, 0);
    s.pred_vector = true;
    s.pred = 7;
    EXPECT_TRUE(decode(encoded(slot, s).data()));
    s.pred = 8;
    const std::string e = rejection(encoded(slot, s));
    EXPECT_NE(e.find("VP8"), std::string::npos) << e;
  }
}

TEST(TpcEncoding, RejectsReservedBits) {
  for (unsigned slot = 0; slot < kSlots; ++slot) {
    for (unsigned bit = 50; bit < 56; ++bit) {
      Bytes bytes{};
      bytes[slot * 7 + bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
      const std::string e = rejection(bytes);
      EXPECT_NE(e.find("reserved bits 55:50: 0x" + [&] {
                  char t[8];
                  std::snprintf(t, sizeof t, "%x", 1u << (bit - 50));
                  return std::string(t);
                }()),
                std::string::npos)
          << e;
      EXPECT_NE(e.find(slot == 0 ? "Load" : slot == 1 ? "SPU" : slot == 2 ? "VPU" : "Store"), std::string::npos) << e;
    }
  }
}

TEST(TpcEncoding, EncodeRefusesValuesThatDoNotFitTheirField) {
  // The dtype field is 3 bits: a DType beyond 7 cannot be encoded (and decode never yields one).
  Bundle b;
  b[Slot::Vpu] = instr(Op::VAdd, 0, 0, 0, 0, static_cast<DType>(8));
  EXPECT_THROW(encode(b), std::invalid_argument);
  b[Slot::Vpu] = instr(Op::VAdd, 64, 0, 0, 0);
  EXPECT_THROW(encode(b), std::invalid_argument);
  b[Slot::Vpu] = instr(Op::VAdd, 0, 0, 0, 0);
  b[Slot::Vpu].pred = 16;
  EXPECT_THROW(encode(b), std::invalid_argument);
  // Every 3-bit dtype value decodes to one of the eight types.
  for (unsigned t = 0; t < 8; ++t) {
    Bytes bytes{};
    bytes[14] = static_cast<uint8_t>(Op::VAdd);
    bytes[14 + 4] = static_cast<uint8_t>(t);
    auto back = decode(bytes.data());
    ASSERT_TRUE(back);
    EXPECT_EQ(static_cast<unsigned>((*back)[Slot::Vpu].dtype), t);
  }
}

TEST(TpcEncoding, DecodeWithoutAnErrorPointer) {
  Bytes bytes{};
  bytes[6] = 0xFC;
  EXPECT_FALSE(decode(bytes.data()));
}

}  // namespace
}  // namespace hpusim::tpc
