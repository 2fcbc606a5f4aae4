// Gaudi 1 CB parser: every accept/reject rule with its errno and message, the NOP padding and
// completion MSG_PROTs, the internal-queue range check, and a randomized robustness run.
#include "driver/cb_parser.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <random>

#include "arch/packets/packets.h"

namespace hpusim::driver {
namespace {

using qman::Barriers;
using qman::CommandBufferBuilder;
using qman::Opcode;

uint64_t word_at(const std::vector<uint8_t>& b, size_t byte_offset) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b.at(byte_offset + static_cast<size_t>(i));
  return v;
}

CompletionPackets completion(CompletionPlacement placement = CompletionPlacement::kEndOnCacheLine) {
  CompletionPackets c;
  c.cq_address = 0x00000001'2345'6000ull;
  c.cq_entry = 0x80000000u | 0x42u;
  c.msi_address = 0x7FFC000000ull + 0x4800ull;
  c.msi_value = 1;
  c.placement = placement;
  return c;
}

ExternalParseResult parse(const std::vector<uint8_t>& cb, const CompletionPackets& c = completion()) {
  return parse_external_cb(cb.empty() ? nullptr : cb.data(), cb.size(), c);
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// ---------------------------------------------------------------------------------------------
// Accepted packets
// ---------------------------------------------------------------------------------------------

TEST(CbParser, AcceptsTheAllowedPacketsAsTheyAre) {
  CommandBufferBuilder cb;
  cb.wreg32(0x100, 1)
      .msg_long(0x7FFC4C2000ull, 2)
      .msg_short(qman::kMsgBaseWsSobs, 0x240, qman::sob_write_value(1, true))
      .repeat(0, false, false)
      .fence(2, 1, 1)
      .nop()
      .arb_point(1, false)
      .load_and_exe(0x1000, true, true, /*scalar_dst=*/false);
  const auto r = parse(cb.bytes());
  ASSERT_EQ(r.error, 0) << r.message;
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.message.empty());
  EXPECT_EQ(r.packet_count, 8u);
  EXPECT_FALSE(r.contains_dma_pkt);
  ASSERT_GE(r.patched.size(), cb.size());
  EXPECT_TRUE(std::equal(cb.bytes().begin(), cb.bytes().end(), r.patched.begin()));
}

TEST(CbParser, LinDmaIsAcceptedAndSetsEngineBarrierOnCompletion) {
  CommandBufferBuilder cb;
  cb.lin_dma(0x1000, 0x20000000, 4096).memset(0x20001000, 0, 64);
  auto r = parse(cb.bytes());
  ASSERT_EQ(r.error, 0) << r.message;
  EXPECT_TRUE(r.contains_dma_pkt);
  EXPECT_EQ(r.packet_count, 2u);
  // First MSG_PROT: opcode 7 | MB | EB = 0xA7000000.
  EXPECT_EQ(word_at(r.patched, r.completion_offset), 0xA7000000'80000042ull);

  // Zero-size LIN_DMA is accepted too.
  cb.clear();
  cb.lin_dma(0, 0, 0);
  r = parse(cb.bytes());
  EXPECT_EQ(r.error, 0);
  EXPECT_TRUE(r.contains_dma_pkt);

  // No LIN_DMA: completion MSG_PROT without EB = 0x87000000.
  cb.clear();
  cb.nop();
  r = parse(cb.bytes());
  ASSERT_EQ(r.error, 0);
  EXPECT_FALSE(r.contains_dma_pkt);
  EXPECT_EQ(word_at(r.patched, r.completion_offset), 0x87000000'80000042ull);
}

// ---------------------------------------------------------------------------------------------
// Rejected packets
// ---------------------------------------------------------------------------------------------

struct RejectCase {
  const char* name;
  std::vector<uint8_t> cb;
  int error;
  const char* fragment;
  size_t accepted_before = 0;
};

std::vector<RejectCase> reject_cases() {
  std::vector<RejectCase> cases;
  auto one = [](auto fill) {
    CommandBufferBuilder b;
    fill(b);
    return b.take();
  };
  cases.push_back({"MSG_PROT", one([](auto& b) { b.msg_prot(0x1000, 1); }), -EPERM,
                   "User not allowed to use MSG_PROT"});
  cases.push_back({"CP_DMA", one([](auto& b) { b.cp_dma(0x1000, 64); }), -EPERM, "User not allowed to use CP_DMA"});
  cases.push_back({"STOP", one([](auto& b) { b.stop(); }), -EPERM, "User not allowed to use STOP"});
  cases.push_back({"WREG_BULK(0)", one([](auto& b) { b.wreg_bulk(0x100, {}); }), -EPERM,
                   "User not allowed to use WREG_BULK"});
  cases.push_back({"WREG_BULK(2)", one([](auto& b) { b.wreg_bulk(0x100, {1, 2}); }), -EPERM,
                   "User not allowed to use WREG_BULK"});
  cases.push_back({"LOAD_AND_EXE scalar", one([](auto& b) { b.load_and_exe(0x1000, true, true, true); }), -EPERM,
                   "User not allowed to use Load and Execute"});
  cases.push_back({"WAIT", one([](auto& b) { b.wait(10, 0, 1); }), -EINVAL, "Invalid packet header 0xd"});
  for (uint32_t raw : {0x0u, 0xEu, 0x10u, 0x11u, 0x1Fu}) {
    CommandBufferBuilder b;
    b.raw_header(0, (raw << 24) | qman::kCtlMessageBarrier);
    cases.push_back({"invalid id", b.take(), -EINVAL, "Invalid packet id"});
  }
  // Packets cut by the end of the CB (the boundary check comes before the per-opcode rules).
  cases.push_back({"LIN_DMA cut", [] {
                     CommandBufferBuilder b;
                     b.lin_dma(1, 2, 3);
                     auto v = b.take();
                     v.resize(16);
                     return v;
                   }(),
                   -EINVAL, "packet 0x9 (LIN_DMA) at offset 0x0 is out of CB boundary"});
  cases.push_back({"MSG_PROT cut", [] {
                     CommandBufferBuilder b;
                     b.msg_prot(1, 2);
                     auto v = b.take();
                     v.resize(8);
                     return v;
                   }(),
                   -EINVAL, "packet 0x7 (MSG_PROT) at offset 0x0 is out of CB boundary"});
  cases.push_back({"LOAD_AND_EXE scalar cut", [] {
                     CommandBufferBuilder b;
                     b.load_and_exe(0, true, true, true);
                     auto v = b.take();
                     v.resize(8);
                     return v;
                   }(),
                   -EINVAL, "is out of CB boundary"});
  cases.push_back({"trailing fragment", [] {
                     CommandBufferBuilder b;
                     b.nop();
                     auto v = b.take();
                     v.resize(12);
                     return v;
                   }(),
                   -EINVAL, "packet header at offset 0x8 is out of CB boundary", 1});
  return cases;
}

TEST(CbParser, RejectsEachForbiddenOrMalformedPacketWithItsErrno) {
  for (const auto& c : reject_cases()) {
    const auto r = parse(c.cb);
    EXPECT_EQ(r.error, c.error) << c.name << ": " << r.message;
    EXPECT_TRUE(contains(r.message, c.fragment)) << c.name << ": " << r.message;
    EXPECT_TRUE(contains(r.message, "offset 0x")) << c.name << ": " << r.message;
    EXPECT_TRUE(r.patched.empty()) << c.name;
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.packet_count, c.accepted_before) << c.name;
  }
}

TEST(CbParser, InvalidIdMessagesNameTheId) {
  for (uint32_t raw : {0x0u, 0xEu, 0x13u, 0x1Fu}) {
    CommandBufferBuilder b;
    b.nop().raw_header(0, raw << 24);
    const auto r = parse(b.bytes());
    EXPECT_EQ(r.error, -EINVAL);
    EXPECT_TRUE(contains(r.message, "Invalid packet id " + std::to_string(raw) + " ")) << r.message;
    EXPECT_TRUE(contains(r.message, "at offset 0x8")) << r.message;
    EXPECT_EQ(r.error_offset, 8u);
    EXPECT_EQ(r.packet_count, 1u);
  }
}

TEST(CbParser, TheFirstBadPacketStopsTheParseAndIsLocated) {
  CommandBufferBuilder cb;
  cb.wreg32(0x10, 1).lin_dma(0, 0, 0).msg_long(0x1000, 1).stop().msg_prot(0, 0);
  const auto r = parse(cb.bytes());
  EXPECT_EQ(r.error, -EPERM);
  EXPECT_EQ(r.error_offset, 8u + 24u + 16u);
  EXPECT_EQ(r.packet_count, 3u);
  EXPECT_TRUE(contains(r.message, "User not allowed to use STOP")) << r.message;
  EXPECT_TRUE(contains(r.message, "packet 0xb at offset 0x30")) << r.message;
  EXPECT_TRUE(r.patched.empty());
}

TEST(CbParser, LoadAndExeOnlyRejectsScalarMode) {
  for (bool load : {false, true}) {
    for (bool exe : {false, true}) {
      for (bool etype : {false, true}) {
        CommandBufferBuilder pred_mode, scalar_mode;
        pred_mode.load_and_exe(0x100, load, exe, false, etype);
        scalar_mode.load_and_exe(0x100, load, exe, true, etype);
        EXPECT_EQ(parse(pred_mode.bytes()).error, 0);
        EXPECT_EQ(parse(scalar_mode.bytes()).error, -EPERM);
      }
    }
  }
}

TEST(CbParser, BarrierBitsDoNotChangeTheRules) {
  for (int bits = 0; bits < 8; ++bits) {
    const Barriers b{(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0};
    CommandBufferBuilder ok, bad;
    ok.nop(b).fence(0, 1, 1, b).msg_short(1, 0, 0, b);
    bad.stop(b);
    EXPECT_EQ(parse(ok.bytes()).error, 0);
    EXPECT_EQ(parse(bad.bytes()).error, -EPERM);
  }
}

TEST(CbParser, NullUserCbAndEmptyCb) {
  auto r = parse_external_cb(nullptr, 8, completion());
  EXPECT_EQ(r.error, -EFAULT);
  EXPECT_TRUE(r.patched.empty());
  r = parse_external_cb(nullptr, 0, completion());
  EXPECT_EQ(r.error, 0);
  EXPECT_EQ(r.packet_count, 0u);
  EXPECT_EQ(r.patched.size(), 128u);
}

// ---------------------------------------------------------------------------------------------
// Padding and the appended MSG_PROTs
// ---------------------------------------------------------------------------------------------

std::vector<uint8_t> user_cb_of_size(size_t size, bool with_dma) {
  CommandBufferBuilder b;
  size_t left = size;
  if (with_dma && left >= 24) {
    b.lin_dma(0x1000, 0x20000000, 256);
    left -= 24;
  }
  uint32_t i = 0;
  while (left >= 16) {
    b.msg_long(0x1000 + 4 * i, i);
    left -= 16;
    ++i;
  }
  while (left >= 8) {
    b.wreg32(static_cast<uint16_t>(i), i);
    left -= 8;
    ++i;
  }
  return b.take();
}

void check_tail(const std::vector<uint8_t>& user, const ExternalParseResult& r, const CompletionPackets& c,
                size_t expected_total) {
  ASSERT_EQ(r.error, 0) << r.message;
  ASSERT_EQ(r.patched.size(), expected_total) << "user size " << user.size();
  ASSERT_EQ(r.patched.size(), patched_cb_size(user.size(), c.placement));
  // Byte-exact copy of the user CB at the start.
  ASSERT_TRUE(std::equal(user.begin(), user.end(), r.patched.begin()));
  // NOP padding.
  const size_t padding = expected_total - user.size() - 32;
  EXPECT_EQ(r.padding_bytes, padding);
  for (size_t off = user.size(); off < user.size() + padding; off += 8) {
    EXPECT_EQ(word_at(r.patched, off), 0x0A000000'00000000ull) << "offset " << off;
  }
  // The two MSG_PROTs, in the last 32 bytes, inside one 128-byte cache line.
  const size_t first = expected_total - 32;
  EXPECT_EQ(r.completion_offset, first);
  EXPECT_EQ(first / 128, (expected_total - 1) / 128) << "MSG_PROT pair straddles a cache line";
  const uint32_t ctl1 = 0x87000000u | (r.contains_dma_pkt ? 0x20000000u : 0u);
  EXPECT_EQ(word_at(r.patched, first), (static_cast<uint64_t>(ctl1) << 32) | c.cq_entry);
  EXPECT_EQ(word_at(r.patched, first + 8), c.cq_address);
  EXPECT_EQ(word_at(r.patched, first + 16), (0x87000000ull << 32) | c.msi_value);
  EXPECT_EQ(word_at(r.patched, first + 24), c.msi_address);
  // The patched CB decodes as user packets + NOPs + 2 MSG_PROTs.
  size_t off = 0, packets = 0;
  while (off < r.patched.size()) {
    const auto d = qman::decode(r.patched.data() + off, r.patched.size() - off);
    ASSERT_TRUE(d.ok()) << d.message;
    off += d.size;
    ++packets;
  }
  EXPECT_EQ(packets, r.packet_count + padding / 8 + 2);
}

TEST(CbParserPadding, CompletionEndsOnACacheLineBoundary) {
  // user size -> patched size = round_up(user + 32, 128)
  const std::pair<size_t, size_t> cases[] = {{0, 128},   {8, 128},   {88, 128},  {96, 128},  {104, 256},
                                             {120, 256}, {128, 256}, {136, 256}, {224, 256}, {232, 384}};
  for (bool dma : {false, true}) {
    for (const auto& [user_size, total] : cases) {
      const auto user = user_cb_of_size(user_size, dma);
      ASSERT_EQ(user.size(), user_size);
      const auto c = completion(CompletionPlacement::kEndOnCacheLine);
      const auto r = parse(user, c);
      check_tail(user, r, c, total);
      EXPECT_EQ(r.patched.size() % 128, 0u);
      EXPECT_EQ(r.contains_dma_pkt, dma && user_size >= 24);
    }
  }
}

TEST(CbParserPadding, UpstreamPlacementPadsOnlyToAvoidStraddling) {
  // gaudi_get_patched_cb_extra_size: extra = 32 if the pair fits before the line end, else
  // (line end - user) + 32.
  const std::pair<size_t, size_t> cases[] = {{0, 32},    {8, 40},    {88, 120},  {96, 128},  {104, 160},
                                             {120, 160}, {128, 160}, {136, 168}, {224, 256}, {232, 288}};
  for (const auto& [user_size, total] : cases) {
    const auto user = user_cb_of_size(user_size, true);
    const auto c = completion(CompletionPlacement::kUpstream);
    const auto r = parse(user, c);
    check_tail(user, r, c, total);
  }
}

TEST(CbParserPadding, PatchedSizeFormulaForEverySize) {
  for (size_t user = 0; user <= 1024; user += 8) {
    const size_t end = patched_cb_size(user, CompletionPlacement::kEndOnCacheLine);
    EXPECT_EQ(end % 128, 0u);
    EXPECT_GE(end, user + 32);
    EXPECT_LT(end, user + 32 + 128);
    const size_t up = patched_cb_size(user, CompletionPlacement::kUpstream);
    EXPECT_GE(up, user + 32);
    EXPECT_EQ((up - 32) / 128, (up - 1) / 128) << user;  // pair within one line
    EXPECT_TRUE(up == user + 32 || (up - 32) % 128 == 0) << user;
  }
}

TEST(CbParserPadding, NoCompletionMeansAPlainCopy) {
  const auto user = user_cb_of_size(136, true);
  auto c = completion();
  c.append = false;
  const auto r = parse(user, c);
  ASSERT_EQ(r.error, 0);
  EXPECT_EQ(r.patched, user);
  EXPECT_EQ(r.padding_bytes, 0u);
  EXPECT_TRUE(r.contains_dma_pkt);
}

TEST(CbParserPadding, CustomMsiValueAndTheCopyIsIndependentOfTheUserBuffer) {
  auto user = user_cb_of_size(64, false);
  auto c = completion();
  c.msi_value = 0x5A;
  const auto r = parse(user, c);
  ASSERT_EQ(r.error, 0);
  EXPECT_EQ(word_at(r.patched, r.completion_offset + 16), 0x87000000'0000005Aull);
  // Rewriting the user buffer afterwards (a TOCTOU attempt) cannot change what was validated.
  const auto before = r.patched;
  std::memset(user.data(), 0xFF, user.size());
  EXPECT_EQ(r.patched, before);
}

// ---------------------------------------------------------------------------------------------
// Internal queues
// ---------------------------------------------------------------------------------------------

InternalCbRanges gaudi_like_ranges() {
  InternalCbRanges r;
  r.sram_user_base = 0x7FF0000000ull + 0x1000ull;
  r.sram_end = 0x7FF0000000ull + 48ull * 1024 * 1024;
  r.dram_user_base = 0x20000000ull;
  r.dram_end = 0x20000000ull + 32ull * 1024 * 1024 * 1024;
  r.host_va_start = 0x1000'0000'0000ull;
  r.host_va_end = 0x2000'0000'0000ull;
  return r;
}

TEST(CbParserInternal, AcceptsCbsInsideSramDramOrHostVa) {
  const auto ranges = gaudi_like_ranges();
  std::string msg = "stale";
  EXPECT_EQ(check_internal_cb(ranges.sram_user_base, 256, ranges, &msg), 0);
  EXPECT_TRUE(msg.empty());
  EXPECT_EQ(check_internal_cb(ranges.sram_end - 256, 256, ranges, &msg), 0);  // ends exactly at the end
  EXPECT_EQ(check_internal_cb(ranges.dram_user_base, 1, ranges, nullptr), 0);
  EXPECT_EQ(check_internal_cb(ranges.dram_end - 8, 8, ranges, nullptr), 0);
  EXPECT_EQ(check_internal_cb(ranges.host_va_start + 0x1000, 0x20000, ranges, nullptr), 0);
}

TEST(CbParserInternal, RejectsEverythingElseWithEfault) {
  const auto ranges = gaudi_like_ranges();
  struct Case {
    uint64_t address, size;
  } cases[] = {
      {ranges.sram_user_base - 8, 16},      // starts below the user SRAM (driver-reserved part)
      {ranges.sram_end - 8, 16},            // crosses the SRAM end
      {ranges.dram_user_base - 0x1000, 8},  // the protected first 512 MB of DRAM
      {ranges.dram_end, 8},                 // past DRAM
      {ranges.host_va_end - 4, 8},          // crosses the host VA end
      {0, 64},                              // nowhere
      {ranges.sram_user_base, 0},           // empty area
      {0xFFFFFFFF'FFFFFF00ull, 0x200},      // address + size wraps
  };
  for (const auto& c : cases) {
    std::string msg;
    EXPECT_EQ(check_internal_cb(c.address, c.size, ranges, &msg), -EFAULT) << std::hex << c.address;
    EXPECT_TRUE(contains(msg, "for internal QMAN is not valid")) << msg;
    EXPECT_TRUE(contains(msg, "CB address 0x")) << msg;
  }
  // Wrap-around is rejected even when a range reaches the top of the address space.
  InternalCbRanges top;
  top.host_va_start = 0xFFFF0000'00000000ull;
  top.host_va_end = ~0ull;
  std::string msg;
  EXPECT_EQ(check_internal_cb(0xFFFFFFFF'FFFFFF00ull, 0x200, top, &msg), -EFAULT);
  EXPECT_TRUE(contains(msg, "overflows")) << msg;
  EXPECT_EQ(check_internal_cb(0xFFFFFFFF'FFFFFF00ull, 0xFF, top, &msg), 0);
  EXPECT_EQ(check_internal_cb(0x10, 8, ranges, nullptr), -EFAULT);
}

// ---------------------------------------------------------------------------------------------
// Randomized robustness
// ---------------------------------------------------------------------------------------------

// Independent statement of the rules for one packet header: the errno the parser must return
// for the packet at `off`, 0 if accepted; `size` receives the driver-table size.
int expected_rule(const std::vector<uint8_t>& cb, size_t off, size_t& size) {
  const size_t left = cb.size() - off;
  if (left < 8) return -EINVAL;
  const uint8_t id = cb[off + 7] & 0x1F;
  const uint8_t dst_bit = cb[off] & 1;
  static const int kSizes[32] = {0, 8, 8, 16, 8, 16, 8, 16, 8, 24, 8, 8, 8, 8, 0, 16,
                                 0, 0, 0, 0,  0, 0,  0, 0,  0, 0,  0, 0, 0, 0, 0, 0};
  if (kSizes[id] == 0) return -EINVAL;
  size = static_cast<size_t>(kSizes[id]);
  if (size > left) return -EINVAL;
  switch (id) {
    case 0x7: case 0x5: case 0xB: case 0x2: return -EPERM;
    case 0xF: return dst_bit ? -EPERM : 0;
    case 0xD: return -EINVAL;
    default: return 0;
  }
}

TEST(CbParserRobustness, RandomAndMutatedCbsAlwaysGiveAWellFormedAnswer) {
  std::mt19937_64 rng(0xD12'1BE5ull);
  uint64_t accepted = 0, rejected_inval = 0, rejected_perm = 0;
  const int kIterations = 120000;
  for (int iter = 0; iter < kIterations; ++iter) {
    std::vector<uint8_t> cb;
    const unsigned kind = static_cast<unsigned>(rng() % 3);
    if (kind == 0) {
      cb.resize(static_cast<size_t>(rng() % 80));
      for (auto& b : cb) b = static_cast<uint8_t>(rng());
      for (size_t h = 7; h < cb.size(); h += 8) {
        if (rng() % 2) cb[h] = static_cast<uint8_t>((cb[h] & 0xE0) | (rng() % 16));
      }
    } else {
      // A valid CB of allowed packets, optionally mutated.
      CommandBufferBuilder b;
      const int n = static_cast<int>(rng() % 12);
      for (int k = 0; k < n; ++k) {
        switch (rng() % 9) {
          case 0: b.wreg32(static_cast<uint16_t>(rng()), static_cast<uint32_t>(rng())); break;
          case 1: b.msg_long(rng(), static_cast<uint32_t>(rng())); break;
          case 2: b.msg_short(static_cast<uint8_t>(rng() % 4), static_cast<uint16_t>(rng()), static_cast<uint32_t>(rng())); break;
          case 3: b.repeat(static_cast<uint16_t>(rng()), rng() % 2, rng() % 2); break;
          case 4: b.fence(static_cast<uint8_t>(rng() % 4), static_cast<uint8_t>(rng()), static_cast<uint8_t>(rng() % 16)); break;
          case 5: b.nop(); break;
          case 6: b.arb_point(static_cast<uint8_t>(rng()), rng() % 2); break;
          case 7: b.load_and_exe(rng(), rng() % 2, rng() % 2, false, rng() % 2); break;
          default: b.lin_dma(rng(), rng() & qman::kLinDmaDstAddrMask, static_cast<uint32_t>(rng())); break;
        }
      }
      cb = b.take();
      if (kind == 2) {
        const int mutations = static_cast<int>(rng() % 3) + 1;
        for (int m = 0; m < mutations; ++m) {
          const unsigned what = static_cast<unsigned>(rng() % 4);
          if (cb.empty() || what == 3) {
            cb.push_back(static_cast<uint8_t>(rng()));
          } else if (what == 0) {
            cb[static_cast<size_t>(rng() % cb.size())] ^= static_cast<uint8_t>(1u << (rng() % 8));
          } else if (what == 1) {
            cb[static_cast<size_t>(rng() % cb.size())] = static_cast<uint8_t>(rng());
          } else {
            cb.resize(static_cast<size_t>(rng() % cb.size()));
          }
        }
      }
    }

    // Exact-size heap copy: an over-read would leave the allocation (seen by ASan builds).
    std::unique_ptr<uint8_t[]> exact(new uint8_t[cb.size() ? cb.size() : 1]);
    if (!cb.empty()) std::memcpy(exact.get(), cb.data(), cb.size());
    const auto placement = (rng() % 2) ? CompletionPlacement::kEndOnCacheLine : CompletionPlacement::kUpstream;
    const auto c = completion(placement);
    const auto r = parse_external_cb(cb.empty() ? nullptr : exact.get(), cb.size(), c);

    // Oracle: walk the rules independently.
    size_t off = 0, count = 0;
    int expected = 0;
    bool dma = false;
    while (off < cb.size()) {
      size_t size = 0;
      expected = expected_rule(cb, off, size);
      if (expected != 0) break;
      dma = dma || (cb[off + 7] & 0x1F) == 0x9;
      off += size;
      ++count;
    }
    ASSERT_EQ(r.error, expected) << r.message;
    if (r.error == 0) {
      ++accepted;
      ASSERT_TRUE(r.message.empty());
      ASSERT_EQ(r.packet_count, count);
      ASSERT_EQ(r.contains_dma_pkt, dma);
      ASSERT_EQ(r.patched.size(), patched_cb_size(cb.size(), placement));
      ASSERT_TRUE(std::equal(cb.begin(), cb.end(), r.patched.begin()));
      const size_t first = r.completion_offset;
      ASSERT_EQ(first + 32, r.patched.size());
      ASSERT_EQ(first / 128, (r.patched.size() - 1) / 128);
      const auto m1 = qman::decode(r.patched.data() + first, 16);
      const auto m2 = qman::decode(r.patched.data() + first + 16, 16);
      ASSERT_TRUE(m1.ok() && m2.ok());
      const auto& p1 = std::get<qman::MsgProt>(m1.packet);
      const auto& p2 = std::get<qman::MsgProt>(m2.packet);
      ASSERT_EQ(p1.value, c.cq_entry);
      ASSERT_EQ(p1.addr, c.cq_address);
      ASSERT_EQ(p1.barriers.eb, dma);
      ASSERT_TRUE(p1.barriers.mb);
      ASSERT_EQ(p2.value, c.msi_value);
      ASSERT_EQ(p2.addr, c.msi_address);
      for (size_t p = cb.size(); p < first; p += 8) ASSERT_EQ(word_at(r.patched, p), 0x0A000000'00000000ull);
    } else {
      ASSERT_TRUE(r.error == -EINVAL || r.error == -EPERM) << r.error;
      (r.error == -EINVAL ? rejected_inval : rejected_perm)++;
      ASSERT_FALSE(r.message.empty());
      ASSERT_TRUE(r.patched.empty());
      ASSERT_EQ(r.error_offset, off);
      ASSERT_EQ(r.packet_count, count);
      ASSERT_TRUE(contains(r.message, "offset 0x")) << r.message;
    }
  }
  EXPECT_GT(accepted, 20000u);
  EXPECT_GT(rejected_inval, 20000u);
  EXPECT_GT(rejected_perm, 5000u);
}

}  // namespace
}  // namespace hpusim::driver
