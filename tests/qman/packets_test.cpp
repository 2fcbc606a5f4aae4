// Golden encodings (driver-generated packets from reference §3, hand-computed 64-bit words),
// encode/decode round trips with random fields, and decoder robustness on random bytes.
#include "arch/packets/packets.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>

namespace hpusim::qman {
namespace {

uint64_t word_at(const std::vector<uint8_t>& b, size_t index) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b.at(8 * index + static_cast<size_t>(i));
  return v;
}

template <typename T>
std::vector<uint8_t> bytes_of(const T& p) {
  std::vector<uint8_t> out;
  encode(p, out);
  return out;
}

uint8_t header_opcode(uint64_t header) { return static_cast<uint8_t>((header & kHeaderOpcodeMask) >> kHeaderOpcodeShift); }

// ---------------------------------------------------------------------------------------------
// Opcode table
// ---------------------------------------------------------------------------------------------

TEST(QmanPackets, OpcodeTableMatchesTheHeader) {
  const struct {
    Opcode op;
    uint8_t value;
    size_t size;
    const char* name;
  } table[] = {
      {Opcode::WREG_32, 0x1, 8, "WREG_32"},   {Opcode::WREG_BULK, 0x2, 8, "WREG_BULK"},
      {Opcode::MSG_LONG, 0x3, 16, "MSG_LONG"}, {Opcode::MSG_SHORT, 0x4, 8, "MSG_SHORT"},
      {Opcode::CP_DMA, 0x5, 16, "CP_DMA"},     {Opcode::REPEAT, 0x6, 8, "REPEAT"},
      {Opcode::MSG_PROT, 0x7, 16, "MSG_PROT"}, {Opcode::FENCE, 0x8, 8, "FENCE"},
      {Opcode::LIN_DMA, 0x9, 24, "LIN_DMA"},   {Opcode::NOP, 0xA, 8, "NOP"},
      {Opcode::STOP, 0xB, 8, "STOP"},          {Opcode::ARB_POINT, 0xC, 8, "ARB_POINT"},
      {Opcode::WAIT, 0xD, 8, "WAIT"},          {Opcode::LOAD_AND_EXE, 0xF, 16, "LOAD_AND_EXE"},
  };
  for (const auto& e : table) {
    EXPECT_EQ(static_cast<uint8_t>(e.op), e.value);
    EXPECT_EQ(packet_size(e.op), e.size) << e.name;
    EXPECT_STREQ(opcode_name(e.op), e.name);
    EXPECT_TRUE(is_valid_opcode(e.value));
  }
  int valid = 0;
  for (unsigned v = 0; v < 256; ++v) valid += is_valid_opcode(static_cast<uint8_t>(v)) ? 1 : 0;
  EXPECT_EQ(valid, 14);
  EXPECT_FALSE(is_valid_opcode(0x0));
  EXPECT_FALSE(is_valid_opcode(0xE));
  EXPECT_FALSE(is_valid_opcode(0x10));
  EXPECT_FALSE(is_valid_opcode(0x1F));
  EXPECT_STREQ(opcode_name_raw(0xE), "INVALID");
  EXPECT_EQ(packet_size(static_cast<Opcode>(0xE)), 0u);
  EXPECT_EQ(wreg_bulk_size(0), 8u);
  EXPECT_EQ(wreg_bulk_size(3), 32u);
  EXPECT_EQ(kMaxPacketId, 32u);
}

// ---------------------------------------------------------------------------------------------
// Golden encodings
// ---------------------------------------------------------------------------------------------

// Completion MSG_PROT (gaudi_add_end_of_cb_packets): ctl = opcode 7 | MB, plus EB when the CB
// contains a DMA packet. 7 << 24 = 0x07000000; MB = 0x80000000; EB = 0x20000000.
TEST(QmanPacketsGolden, CompletionMsgProt) {
  MsgProt cq;
  cq.value = 0x00000123;
  cq.addr = 0x00000001'00002000ull;
  cq.barriers = kMbOnly;
  auto b = bytes_of(cq);
  ASSERT_EQ(b.size(), 16u);
  EXPECT_EQ(word_at(b, 0), 0x87000000'00000123ull);
  EXPECT_EQ(word_at(b, 1), 0x00000001'00002000ull);
  EXPECT_EQ(header_opcode(word_at(b, 0)), 0x7);

  cq.barriers.eb = true;  // contains_dma_pkt
  b = bytes_of(cq);
  EXPECT_EQ(word_at(b, 0), 0xA7000000'00000123ull);

  MsgProt msi;  // second packet: value 1 to the MSI doorbell, MB only
  msi.value = 1;
  msi.addr = 0x7FFC000000ull + 0x4800ull;
  msi.barriers = kMbOnly;
  b = bytes_of(msi);
  EXPECT_EQ(word_at(b, 0), 0x87000000'00000001ull);
  EXPECT_EQ(word_at(b, 1), 0x0000007F'FC004800ull);
}

// Signal CB (gaudi_gen_signal_cb) for SOB 144 (first user W_S SOB):
//   value = 1 | (1 << 31)                      = 0x80000001 (ADD 1)
//   ctl   = addr 144*4 = 0x240 | op 0 << 20
//         | base 3 << 22 = 0x00C00000 | opcode 4 << 24 = 0x04000000
//         | RB 0x40000000 | MB 0x80000000     = 0xC4C00240 (EB=0), 0xE4C00240 (EB=1)
TEST(QmanPacketsGolden, SignalMsgShort) {
  MsgShort s;
  s.value = 1u | (1u << 31);
  s.msg_addr_offset = 144 * 4;
  s.base = 3;
  s.op = 0;
  s.barriers = kRbMb;
  auto b = bytes_of(s);
  ASSERT_EQ(b.size(), 8u);
  EXPECT_EQ(word_at(b, 0), 0xC4C00240'80000001ull);
  EXPECT_EQ(sob_write_value(1, true), 0x80000001u);
  EXPECT_EQ(sob_write_value(0x7FFF, false), 0x00007FFFu);

  s.barriers.eb = true;
  EXPECT_EQ(word_at(bytes_of(s), 0), 0xE4C00240'80000001ull);

  CommandBufferBuilder cb;
  cb.msg_short(kMsgBaseWsSobs, 144 * 4, sob_write_value(1, true));
  EXPECT_EQ(word_at(cb.bytes(), 0), 0xC4C00240'80000001ull);
}

// Wait CB (gaudi_gen_wait_cb), monitor 72 watching SOB 144 for value >= 1:
//   arm value = sob/8 = 18 = 0x12 | mask 0xFE << 8 (only SOB 144 = bit 0 of group 18 watched)
//             | mode 0 << 16 | target 1 << 17 = 0x00020000     -> 0x0002FE12
//   arm ctl   = offset of MON_ARM_72 from MON_PAY_ADDRL_0 = 3 * 0x800 + 72*4 = 0x1920
//             | base 2 << 22 = 0x00800000 | opcode 4 << 24 | RB | MB -> 0xC4801920
//   then FENCE{dec=1, target=1, id=2}: cfg = 1 | 1 << 16 | 2 << 30 = 0x80010001,
//             ctl = opcode 8 << 24 | RB | MB = 0xC8000000
// The three payload MSG_SHORTs before the arm carry RB only (MB on the last one): ctl = 0x44800000|off.
TEST(QmanPacketsGolden, WaitCbMonitorArmAndFence) {
  const uint16_t sob = 144;
  const uint32_t arm = monitor_arm_value(static_cast<uint8_t>(sob / 8), single_sob_mask(sob), false, 1);
  EXPECT_EQ(single_sob_mask(sob), 0xFE);
  EXPECT_EQ(single_sob_mask(147), 0xF7);
  EXPECT_EQ(arm, 0x0002FE12u);
  EXPECT_EQ(arm, (sob / 8u) | (0xFEu << 8) | (0u << 16) | (1u << 17));

  CommandBufferBuilder cb;
  const uint16_t mon = 72;
  cb.msg_short(kMsgBaseWsMonitors, static_cast<uint16_t>(mon * 4), 0xFC00A000u, Barriers{false, true, false});  // PAY_ADDRL
  cb.msg_short(kMsgBaseWsMonitors, static_cast<uint16_t>(0x800 + mon * 4), 0x7Fu, Barriers{false, true, false});  // PAY_ADDRH
  cb.msg_short(kMsgBaseWsMonitors, static_cast<uint16_t>(0x1000 + mon * 4), 1u, Barriers{false, true, false});  // PAY_DATA
  cb.msg_short(kMsgBaseWsMonitors, static_cast<uint16_t>(0x1800 + mon * 4), arm);                            // ARM
  cb.fence(2, 1, 1);
  const auto& b = cb.bytes();
  ASSERT_EQ(b.size(), 40u);
  EXPECT_EQ(word_at(b, 0), 0x44800120'FC00A000ull);
  EXPECT_EQ(word_at(b, 1), 0x44800920'0000007Full);
  EXPECT_EQ(word_at(b, 2), 0x44801120'00000001ull);
  EXPECT_EQ(word_at(b, 3), 0xC4801920'0002FE12ull);
  EXPECT_EQ(word_at(b, 4), 0xC8000000'80010001ull);

  Fence f;
  f.dec_val = 1;
  f.target_val = 1;
  f.id = 2;
  f.barriers = kRbMb;
  EXPECT_EQ(word_at(bytes_of(f), 0), 0xC8000000'80010001ull);
}

// Memset (gaudi_memset_device_memory): ctl = opcode 9 << 24 = 0x09000000 | MEMSET bit 4 = 0x10
// | LIN bit 3 = 0x08 | MB | RB = 0xC9000018; src_addr = value; dst_addr; tsize.
TEST(QmanPacketsGolden, MemsetLinDma) {
  CommandBufferBuilder cb;
  cb.memset(0x20000000ull, 0xDEADBEEF'CAFEF00Dull, 0x1000);
  const auto& b = cb.bytes();
  ASSERT_EQ(b.size(), 24u);
  EXPECT_EQ(word_at(b, 0), 0xC9000018'00001000ull);
  EXPECT_EQ(word_at(b, 1), 0xDEADBEEF'CAFEF00Dull);
  EXPECT_EQ(word_at(b, 2), 0x00000000'20000000ull);
  EXPECT_EQ(header_opcode(word_at(b, 0)), 0x9);
}

TEST(QmanPacketsGolden, OtherFixedLayouts) {
  // WREG_32: value / pred[4:0] | reg_offset[23:8] | opcode 1 | RB | MB.
  CommandBufferBuilder cb;
  cb.wreg32(0x1234, 0xDEADBEEF, kRbMb, 3);
  EXPECT_EQ(word_at(cb.bytes(), 0), 0xC1123403'DEADBEEFull);

  // MSG_LONG register memset (gaudi_memset_registers): op 0, EB|RB|MB -> ctl 0xE3000000.
  MsgLong ml;
  ml.value = 0;
  ml.addr = 0x7FFC4C2000ull;
  ml.barriers = Barriers{true, true, true};
  auto b = bytes_of(ml);
  EXPECT_EQ(word_at(b, 0), 0xE3000000'00000000ull);
  EXPECT_EQ(word_at(b, 1), 0x0000007F'FC4C2000ull);
  // op = 1 (timestamp) -> ctl bit 20; weakly ordered bit 16; no snoop bit 17; pred 5.
  ml.op = 1;
  ml.weakly_ordered = true;
  ml.no_snoop = true;
  ml.pred = 5;
  ml.barriers = kNoBarriers;
  EXPECT_EQ(word_at(bytes_of(ml), 0), 0x03130005'00000000ull);

  // LIN_DMA: every ctl flag, context_id split into ctl[23:16] and dst word [63:56].
  LinDma d;
  d.tsize = 0x40;
  d.wr_comp_en = d.transpose = d.dtype = d.lin = d.mem_set = d.compress = d.decompress = true;
  d.context_id = 0xA55A;
  d.src_addr = 0x1111222233334444ull;
  d.dst_addr = 0x00FFEEDDCCBBAA99ull;
  d.barriers = Barriers{true, false, false};
  b = bytes_of(d);
  EXPECT_EQ(word_at(b, 0), 0x295A007F'00000040ull);
  EXPECT_EQ(word_at(b, 1), 0x1111222233334444ull);
  EXPECT_EQ(word_at(b, 2), 0xA5FFEEDDCCBBAA99ull);

  // NOP / STOP: reserved dword 0, ctl = opcode only.
  EXPECT_EQ(word_at(bytes_of(Nop{}), 0), 0x0A000000'00000000ull);
  EXPECT_EQ(word_at(bytes_of(Stop{}), 0), 0x0B000000'00000000ull);

  // ARB_POINT: priority[7:0], rls bit 31.
  ArbPoint a;
  a.priority = 0x5A;
  a.rls = true;
  EXPECT_EQ(word_at(bytes_of(a), 0), 0x0C000000'8000005Aull);

  // WAIT: cycles[23:0], inc[27:24], id[29:28].
  Wait w;
  w.num_cycles_to_wait = 0xABCDEF;
  w.inc_val = 0x9;
  w.id = 3;
  EXPECT_EQ(word_at(bytes_of(w), 0), 0x0D000000'39ABCDEFull);

  // REPEAT: sore bit 0, o bit 1, jmp_ptr[31:16].
  Repeat rp;
  rp.sore = true;
  rp.o = true;
  rp.jmp_ptr = 0xBEEF;
  rp.barriers = kRbMb;
  EXPECT_EQ(word_at(bytes_of(rp), 0), 0xC6000000'BEEF0003ull);

  // LOAD_AND_EXE: dst bit 0, load bit 8, exe bit 9, etype bit 10.
  LoadAndExe le;
  le.dst = true;
  le.load = true;
  le.exe = true;
  le.etype = true;
  le.src_addr = 0x1000;
  b = bytes_of(le);
  EXPECT_EQ(word_at(b, 0), 0x0F000000'00000701ull);
  EXPECT_EQ(word_at(b, 1), 0x1000ull);

  // CP_DMA: tsize / ctl / src.
  cb.clear();
  cb.cp_dma(0x20001000ull, 0x200);
  EXPECT_EQ(word_at(cb.bytes(), 0), 0xC5000000'00000200ull);
  EXPECT_EQ(word_at(cb.bytes(), 1), 0x20001000ull);

  // WREG_BULK: size64[15:0] / ctl / payload.
  cb.clear();
  cb.wreg_bulk(0x0400, {0x1122334455667788ull, 0x99ull});
  ASSERT_EQ(cb.size(), 24u);
  EXPECT_EQ(word_at(cb.bytes(), 0), 0xC2040000'00000002ull);
  EXPECT_EQ(word_at(cb.bytes(), 1), 0x1122334455667788ull);
  EXPECT_EQ(word_at(cb.bytes(), 2), 0x99ull);
}

TEST(QmanPackets, EncodersRejectFieldsWiderThanTheirBits) {
  std::vector<uint8_t> out;
  Fence f;
  f.dec_val = 16;
  EXPECT_THROW(encode(f, out), std::invalid_argument);
  f.dec_val = 0;
  f.id = 4;
  EXPECT_THROW(encode(f, out), std::invalid_argument);
  MsgShort s;
  s.base = 4;
  EXPECT_THROW(encode(s, out), std::invalid_argument);
  Wait w;
  w.num_cycles_to_wait = 1u << 24;
  EXPECT_THROW(encode(w, out), std::invalid_argument);
  LinDma d;
  d.dst_addr = 1ull << 56;
  EXPECT_THROW(encode(d, out), std::invalid_argument);
  Wreg32 r;
  r.pred = 32;
  EXPECT_THROW(encode(r, out), std::invalid_argument);
  WregBulk bulk;
  bulk.values.resize(65536);
  EXPECT_THROW(encode(bulk, out), std::invalid_argument);
  EXPECT_THROW(monitor_arm_value(0, 0, false, 0x8000), std::invalid_argument);
  EXPECT_TRUE(out.empty());
}

// ---------------------------------------------------------------------------------------------
// Round trips
// ---------------------------------------------------------------------------------------------

class RandomPackets {
 public:
  explicit RandomPackets(uint64_t seed) : rng_(seed) {}

  uint64_t bits(unsigned n) { return n >= 64 ? rng_() : (rng_() & ((1ull << n) - 1)); }
  bool flag() { return (rng_() & 1) != 0; }
  Barriers barriers() { return Barriers{flag(), flag(), flag()}; }

  Packet make(Opcode op, size_t max_bulk = 8) {
    switch (op) {
      case Opcode::WREG_32: {
        Wreg32 p;
        p.value = static_cast<uint32_t>(bits(32));
        p.reg_offset = static_cast<uint16_t>(bits(16));
        p.pred = static_cast<uint8_t>(bits(5));
        p.barriers = barriers();
        return p;
      }
      case Opcode::WREG_BULK: {
        WregBulk p;
        p.reg_offset = static_cast<uint16_t>(bits(16));
        p.pred = static_cast<uint8_t>(bits(5));
        p.values.resize(static_cast<size_t>(bits(16) % (max_bulk + 1)));
        for (auto& v : p.values) v = bits(64);
        p.barriers = barriers();
        return p;
      }
      case Opcode::MSG_LONG:
        return long_message<MsgLong>();
      case Opcode::MSG_PROT:
        return long_message<MsgProt>();
      case Opcode::MSG_SHORT: {
        MsgShort p;
        p.value = static_cast<uint32_t>(bits(32));
        p.msg_addr_offset = static_cast<uint16_t>(bits(16));
        p.weakly_ordered = flag();
        p.no_snoop = flag();
        p.op = static_cast<uint8_t>(bits(2));
        p.base = static_cast<uint8_t>(bits(2));
        p.barriers = barriers();
        return p;
      }
      case Opcode::CP_DMA: {
        CpDma p;
        p.tsize = static_cast<uint32_t>(bits(32));
        p.src_addr = bits(64);
        p.pred = static_cast<uint8_t>(bits(5));
        p.barriers = barriers();
        return p;
      }
      case Opcode::REPEAT: {
        Repeat p;
        p.sore = flag();
        p.o = flag();
        p.jmp_ptr = static_cast<uint16_t>(bits(16));
        p.pred = static_cast<uint8_t>(bits(5));
        p.barriers = barriers();
        return p;
      }
      case Opcode::FENCE: {
        Fence p;
        p.dec_val = static_cast<uint8_t>(bits(4));
        p.target_val = static_cast<uint8_t>(bits(8));
        p.id = static_cast<uint8_t>(bits(2));
        p.pred = static_cast<uint8_t>(bits(5));
        p.barriers = barriers();
        return p;
      }
      case Opcode::LIN_DMA: {
        LinDma p;
        p.tsize = static_cast<uint32_t>(bits(32));
        p.wr_comp_en = flag();
        p.transpose = flag();
        p.dtype = flag();
        p.lin = flag();
        p.mem_set = flag();
        p.compress = flag();
        p.decompress = flag();
        p.context_id = static_cast<uint16_t>(bits(16));
        p.src_addr = bits(64);
        p.dst_addr = bits(56);
        p.barriers = barriers();
        return p;
      }
      case Opcode::NOP:
        return Nop{barriers()};
      case Opcode::STOP:
        return Stop{barriers()};
      case Opcode::ARB_POINT: {
        ArbPoint p;
        p.priority = static_cast<uint8_t>(bits(8));
        p.rls = flag();
        p.pred = static_cast<uint8_t>(bits(5));
        p.barriers = barriers();
        return p;
      }
      case Opcode::WAIT: {
        Wait p;
        p.num_cycles_to_wait = static_cast<uint32_t>(bits(24));
        p.inc_val = static_cast<uint8_t>(bits(4));
        p.id = static_cast<uint8_t>(bits(2));
        p.barriers = barriers();
        return p;
      }
      case Opcode::LOAD_AND_EXE: {
        LoadAndExe p;
        p.dst = flag();
        p.load = flag();
        p.exe = flag();
        p.etype = flag();
        p.src_addr = bits(64);
        p.pred = static_cast<uint8_t>(bits(5));
        p.barriers = barriers();
        return p;
      }
    }
    return Nop{};
  }

  Opcode any_opcode() {
    static const Opcode ops[] = {Opcode::WREG_32, Opcode::WREG_BULK, Opcode::MSG_LONG, Opcode::MSG_SHORT,
                                 Opcode::CP_DMA,  Opcode::REPEAT,    Opcode::MSG_PROT, Opcode::FENCE,
                                 Opcode::LIN_DMA, Opcode::NOP,       Opcode::STOP,     Opcode::ARB_POINT,
                                 Opcode::WAIT,    Opcode::LOAD_AND_EXE};
    return ops[rng_() % 14];
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  template <typename T>
  T long_message() {
    T p;
    p.value = static_cast<uint32_t>(bits(32));
    p.addr = bits(64);
    p.op = static_cast<uint8_t>(bits(2));
    p.weakly_ordered = flag();
    p.no_snoop = flag();
    p.pred = static_cast<uint8_t>(bits(5));
    p.barriers = barriers();
    return p;
  }

  std::mt19937_64 rng_;
};

TEST(QmanPackets, RoundTripEveryPacketWithRandomFields) {
  RandomPackets gen(0x5EED'0001);
  for (int i = 0; i < 20000; ++i) {
    const Opcode op = gen.any_opcode();
    const Packet p = gen.make(op);
    std::vector<uint8_t> b;
    encode(p, b);
    ASSERT_EQ(b.size(), encoded_size(p)) << describe(p);
    ASSERT_EQ(opcode_of(p), op);
    // The opcode sits in header bits [60:56].
    uint64_t header = 0;
    for (int k = 7; k >= 0; --k) header = (header << 8) | b[static_cast<size_t>(k)];
    ASSERT_EQ(header_opcode(header), static_cast<uint8_t>(op));

    const DecodeResult r = decode(b.data(), b.size());
    ASSERT_TRUE(r.ok()) << r.message << " for " << describe(p);
    ASSERT_EQ(r.size, b.size());
    ASSERT_EQ(r.opcode, static_cast<uint8_t>(op));
    ASSERT_TRUE(r.packet == p) << describe(r.packet) << " != " << describe(p);
    std::vector<uint8_t> again;
    encode(r.packet, again);
    ASSERT_EQ(again, b);
  }
}

TEST(QmanPackets, DecodeReportsTruncationAndInvalidOpcodes) {
  // Fewer bytes than the header.
  DecodeResult r = decode(nullptr, 0);
  EXPECT_EQ(r.error, DecodeError::kTruncated);
  EXPECT_FALSE(r.opcode_known);
  const uint8_t four[4] = {1, 2, 3, 4};
  r = decode(four, 4);
  EXPECT_EQ(r.error, DecodeError::kTruncated);
  EXPECT_EQ(r.size, 8u);

  // Every fixed-size packet cut one byte short.
  RandomPackets gen(7);
  for (uint8_t raw = 1; raw < 16; ++raw) {
    if (!is_valid_opcode(raw)) continue;
    std::vector<uint8_t> b;
    encode(gen.make(static_cast<Opcode>(raw), 3), b);
    for (size_t cut = 8; cut < b.size(); ++cut) {
      r = decode(b.data(), cut);
      EXPECT_EQ(r.error, DecodeError::kTruncated) << opcode_name_raw(raw) << " cut at " << cut;
      EXPECT_EQ(r.size, b.size());
      EXPECT_EQ(r.opcode, raw);
      EXPECT_FALSE(r.message.empty());
    }
  }

  // WREG_BULK announcing 65535 words with none present.
  CommandBufferBuilder cb;
  cb.raw_header(0xFFFF, (0x2u << 24) | kCtlRegisterBarrier);
  r = decode(cb.bytes().data(), cb.size());
  EXPECT_EQ(r.error, DecodeError::kTruncated);
  EXPECT_EQ(r.size, wreg_bulk_size(0xFFFF));

  // Invalid opcodes: 0, 0xE, 0x10..0x1F; barrier bits do not change the opcode.
  for (uint32_t raw : {0x0u, 0xEu, 0x10u, 0x1Eu, 0x1Fu}) {
    cb.clear();
    cb.raw_header(0, (raw << 24) | kCtlMessageBarrier | kCtlEngineBarrier);
    r = decode(cb.bytes().data(), cb.size());
    EXPECT_EQ(r.error, DecodeError::kInvalidOpcode);
    EXPECT_EQ(r.opcode, raw);
    EXPECT_NE(r.message.find("invalid packet id"), std::string::npos);
  }
}

TEST(QmanPackets, DecodeIgnoresReservedBits) {
  CommandBufferBuilder cb;
  cb.raw_header(0xFFFFFFFFu, 0x0AFFFFFFu);  // NOP with every reserved bit set
  DecodeResult r = decode(cb.bytes().data(), cb.size());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(std::holds_alternative<Nop>(r.packet));

  cb.clear();
  cb.raw_header(0xFFFFFFFFu, 0x08FFFFFFu);  // FENCE with reserved cfg/ctl bits set
  r = decode(cb.bytes().data(), cb.size());
  ASSERT_TRUE(r.ok());
  const auto& f = std::get<Fence>(r.packet);
  EXPECT_EQ(f.dec_val, 0xF);
  EXPECT_EQ(f.target_val, 0xFF);
  EXPECT_EQ(f.id, 3);
  EXPECT_EQ(f.pred, 0x1F);
}

TEST(QmanPackets, BuilderMatchesEncodersAndDisassembles) {
  CommandBufferBuilder cb;
  cb.nop()
      .wreg32(0x10, 0x20)
      .msg_long(0x1000, 5)
      .msg_short(1, 0x40, 7)
      .fence(0, 1, 1)
      .lin_dma(0x1000, 0x2000, 64, true)
      .arb_point(3, false)
      .wait(100, 1, 1)
      .load_and_exe(0x3000, true, false)
      .repeat(0x10, true, false)
      .cp_dma(0x4000, 128)
      .msg_prot(0x5000, 1)
      .wreg_bulk(0x80, {1, 2})
      .stop();
  EXPECT_EQ(cb.size(), 8u + 8 + 16 + 8 + 8 + 24 + 8 + 8 + 16 + 8 + 16 + 16 + 24 + 8);
  const std::string listing = disassemble(cb.bytes().data(), cb.size());
  for (const char* name : {"NOP", "WREG_32", "MSG_LONG", "MSG_SHORT", "FENCE id=0 target=1 dec=1", "LIN_DMA",
                           "ARB_POINT", "WAIT", "LOAD_AND_EXE", "REPEAT", "CP_DMA", "MSG_PROT", "WREG_BULK", "STOP"}) {
    EXPECT_NE(listing.find(name), std::string::npos) << name << "\n" << listing;
  }
  EXPECT_EQ(listing.find("error"), std::string::npos) << listing;
  EXPECT_NE(listing.find("0x0000: NOP"), std::string::npos);

  const std::vector<uint8_t> bad = {0, 0, 0, 0, 0, 0, 0, 0x0E};
  EXPECT_NE(disassemble(bad.data(), bad.size()).find("error: invalid packet id 14"), std::string::npos);

  std::vector<uint8_t> manual;
  Fence f;
  f.target_val = 1;
  f.dec_val = 1;
  f.barriers = kRbMb;
  encode(f, manual);
  CommandBufferBuilder one;
  one.fence(0, 1, 1);
  EXPECT_EQ(one.bytes(), manual);
  EXPECT_EQ(describe(Fence{1, 2, 3, 4, kRbMb}), "FENCE id=3 target=2 dec=1 pred=4 [RB MB]");
}

// ---------------------------------------------------------------------------------------------
// Robustness: random and mutated buffers
// ---------------------------------------------------------------------------------------------

// Walks a whole buffer with decode(); checks every result and that the walk terminates.
void walk_and_check(const uint8_t* data, size_t size, uint64_t& ok_packets, uint64_t& errors) {
  size_t offset = 0;
  size_t steps = 0;
  while (offset < size) {
    const size_t left = size - offset;
    const DecodeResult r = decode(data + offset, left);
    ASSERT_LE(++steps, size / 8 + 1);
    if (r.ok()) {
      ASSERT_GE(r.size, 8u);
      ASSERT_LE(r.size, left);
      ASSERT_EQ(r.size % 8, 0u);
      ASSERT_TRUE(r.message.empty());
      ASSERT_EQ(static_cast<uint8_t>(opcode_of(r.packet)), r.opcode);
      ASSERT_EQ(encoded_size(r.packet), r.size);
      // Re-encoding drops reserved bits only: decoding it again gives the same packet.
      std::vector<uint8_t> again;
      encode(r.packet, again);
      ASSERT_EQ(again.size(), r.size);
      const DecodeResult r2 = decode(again.data(), again.size());
      ASSERT_TRUE(r2.ok());
      ASSERT_TRUE(r2.packet == r.packet);
      ++ok_packets;
      offset += r.size;
    } else {
      ASSERT_FALSE(r.message.empty());
      if (r.error == DecodeError::kInvalidOpcode) {
        ASSERT_TRUE(r.opcode_known);
        ASSERT_FALSE(is_valid_opcode(r.opcode));
      } else {
        ASSERT_EQ(r.error, DecodeError::kTruncated);
        ASSERT_GT(r.size, left);
      }
      ++errors;
      return;
    }
  }
}

TEST(QmanPacketsRobustness, RandomAndMutatedBuffersNeverCrashOrOverread) {
  RandomPackets gen(0xC0FFEE'2024ull);
  auto& rng = gen.rng();
  uint64_t ok_packets = 0, errors = 0, buffers = 0;
  for (int iter = 0; iter < 220000; ++iter) {
    std::vector<uint8_t> content;
    const unsigned kind = static_cast<unsigned>(rng() % 4);
    if (kind == 0) {
      // Pure random bytes, random length.
      content.resize(static_cast<size_t>(rng() % 72));
      for (auto& byte : content) byte = static_cast<uint8_t>(rng());
    } else if (kind == 1) {
      // Random bytes with a plausible opcode in every header slot.
      content.resize(static_cast<size_t>(rng() % 9) * 8 + static_cast<size_t>(rng() % 3 == 0 ? rng() % 8 : 0));
      for (auto& byte : content) byte = static_cast<uint8_t>(rng());
      for (size_t h = 7; h < content.size(); h += 8) {
        content[h] = static_cast<uint8_t>((content[h] & 0xE0) | (rng() % 18));
      }
    } else {
      // A valid CB, then mutated: bit flips, byte overwrites, truncation or extension.
      const int n = static_cast<int>(rng() % 6) + 1;
      for (int k = 0; k < n; ++k) encode(gen.make(gen.any_opcode(), 4), content);
      const int mutations = static_cast<int>(rng() % 4);
      for (int m = 0; m < mutations && !content.empty(); ++m) {
        const size_t pos = static_cast<size_t>(rng() % content.size());
        switch (rng() % 4) {
          case 0: content[pos] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
          case 1: content[pos] = static_cast<uint8_t>(rng()); break;
          case 2: content.resize(pos); break;
          default: content.push_back(static_cast<uint8_t>(rng())); break;
        }
      }
      if (kind == 3 && !content.empty()) content.resize(static_cast<size_t>(rng() % content.size()));
    }
    // Exact-size heap copy so an over-read would touch memory outside the allocation
    // (caught by AddressSanitizer builds).
    std::unique_ptr<uint8_t[]> exact(new uint8_t[content.size() ? content.size() : 1]);
    if (!content.empty()) std::memcpy(exact.get(), content.data(), content.size());
    walk_and_check(content.empty() ? nullptr : exact.get(), content.size(), ok_packets, errors);
    if (HasFatalFailure()) return;
    ++buffers;
  }
  EXPECT_EQ(buffers, 220000u);
  // Both outcomes must actually be exercised.
  EXPECT_GT(ok_packets, 100000u);
  EXPECT_GT(errors, 50000u);
}

}  // namespace
}  // namespace hpusim::qman
