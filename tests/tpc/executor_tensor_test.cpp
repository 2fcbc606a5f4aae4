// Tensor accessors of the TPC executor: ld_tnsr / st_tnsr / ld_tnsr_s / st_tnsr_s at edges, with
// padding, 1-D to 5-D, single elements, under vector predicates, and against a per-lane reference
// over random descriptors and coordinates. One global access per instruction, in-bounds span only.
#include <gtest/gtest.h>

#include "tests/tpc/executor_reference.h"
#include "tests/tpc/executor_test_util.h"

namespace hpusim::tpc::testing {
namespace {

constexpr uint64_t kBase = 0x10000;

TensorDescriptor tensor(DType t, std::initializer_list<uint32_t> sizes, uint64_t base = kBase, uint32_t padding = 0) {
  TensorDescriptor d;
  d.base = base;
  d.dtype = t;
  d.dims = static_cast<uint8_t>(sizes.size());
  unsigned k = 0;
  int64_t stride = 1;
  for (uint32_t s : sizes) {
    d.size[k] = s;
    d.stride[k] = stride;
    stride *= s;
    ++k;
  }
  d.padding = padding;
  return d;
}

// Fills the memory with a recognisable pattern: the 32-bit word at byte offset o holds o.
void pattern(TestMemory& m, size_t bytes) {
  for (size_t o = 0; o < bytes; o += 4) m.set<uint32_t>(m.base() + o, static_cast<uint32_t>(o));
}

TEST(TpcTensor, OneDimensionalLoadsAtEdgesWithPadding) {
  Core c;
  c.ctx.tensors[0] = tensor(DType::F32, {100}, kBase, fbits(-1.0f));
  c.launch();
  pattern(c.mem, 4096);
  struct Case {
    int32_t c0;
    unsigned lo, hi;   // in-bounds lanes
  };
  for (const Case k : {Case{0, 0, 64}, Case{36, 0, 64}, Case{64, 0, 36}, Case{99, 0, 1}, Case{100, 0, 0},
                       Case{-10, 10, 64}, Case{-63, 63, 64}, Case{-64, 0, 0}, Case{5000, 0, 0}}) {
    c.mem.log.clear();
    c.st().i[1] = {k.c0, 0, 0, 0, 0};
    const ExecInfo info = c.exec(bundle({Ins(Op::LdTnsr).d(2).a(1).c(0)}));
    ASSERT_FALSE(info.faulted) << c.st().fault.message;
    for (unsigned l = 0; l < 64; ++l) {
      const uint32_t got = c.st().vlane<uint32_t>(2, l);
      if (l >= k.lo && l < k.hi) ASSERT_EQ(got, 4u * (k.c0 + l)) << "c0 " << k.c0 << " lane " << l;
      else ASSERT_EQ(got, fbits(-1.0f)) << "c0 " << k.c0 << " lane " << l;
    }
    if (k.hi > k.lo) {
      ASSERT_EQ(c.mem.log.size(), 1u);   // one access for the in-bounds span
      EXPECT_EQ(c.mem.log[0].address, kBase + 4 * (k.c0 + k.lo));
      EXPECT_EQ(c.mem.log[0].bytes, 4 * (k.hi - k.lo));
      EXPECT_EQ(info.num_global, 1u);
    } else {
      EXPECT_TRUE(c.mem.log.empty());
      EXPECT_EQ(info.num_global, 0u);
    }
  }
}

TEST(TpcTensor, StoresWriteOnlyInBoundsLanes) {
  Core c;
  c.ctx.tensors[3] = tensor(DType::I16, {200, 2}, kBase + 64);
  c.launch();
  for (unsigned l = 0; l < 128; ++l) c.st().set_vlane<uint16_t>(5, l, static_cast<uint16_t>(0x1000 + l));
  c.st().i[0] = {150, 1, 0, 0, 0};   // lanes 0..49 in bounds, in row 1
  c.exec(bundle({Ins(Op::StTnsr).a(0).b(5).c(3)}));
  ASSERT_EQ(c.mem.log.size(), 1u);
  EXPECT_TRUE(c.mem.log[0].is_write);
  EXPECT_EQ(c.mem.log[0].address, kBase + 64 + 2 * (200 + 150));
  EXPECT_EQ(c.mem.log[0].bytes, 100u);
  for (unsigned e = 0; e < 400; ++e) {
    const uint16_t got = c.mem.get<uint16_t>(kBase + 64 + 2 * e);
    if (e >= 350) ASSERT_EQ(got, 0x1000 + (e - 350)) << e;
    else ASSERT_EQ(got, 0xEEEE) << e;
  }
  EXPECT_EQ(c.mem.get<uint16_t>(kBase + 64 + 2 * 400), 0xEEEE);   // past the tensor
  c.mem.log.clear();
  c.st().i[0] = {-128, 1, 0, 0, 0};   // entirely before the row
  c.exec(bundle({Ins(Op::StTnsr).a(0).b(5).c(3)}));
  c.st().i[0] = {0, 2, 0, 0, 0};      // dim 1 out of range
  c.exec(bundle({Ins(Op::StTnsr).a(0).b(5).c(3)}));
  EXPECT_TRUE(c.mem.log.empty());
}

TEST(TpcTensor, AnyDimOutOfRangeGivesPaddingWithoutAccess) {
  Core c;
  c.ctx.tensors[1] = tensor(DType::U8, {300, 3, 4, 5, 6}, kBase, 0xAB12);   // padding: low 8 bits
  c.ctx.tensors[2] = tensor(DType::U8, {300, 3}, kBase);                    // 2-D: dims 2..4 have size 1
  c.launch();
  const std::array<int32_t, 5> bad[] = {{0, 3, 0, 0, 0}, {0, 0, -1, 0, 0}, {0, 0, 0, 5, 0}, {0, 0, 0, 0, 6},
                                        {0, -1, 0, 0, 0}, {300, 0, 0, 0, 0}};
  for (const auto& coords : bad) {
    c.mem.log.clear();
    c.st().i[2] = coords;
    c.exec(bundle({Ins(Op::LdTnsr).d(3).a(2).c(1)}));
    EXPECT_TRUE(c.mem.log.empty());
    for (unsigned l = 0; l < 256; ++l) ASSERT_EQ(c.st().vlane<uint8_t>(3, l), 0x12);
  }
  c.st().i[2] = {0, 2, 1, 0, 0};   // dim 2 is beyond this tensor's 2 dims: out of the tensor
  c.exec(bundle({Ins(Op::LdTnsr).d(3).a(2).c(2)}));
  EXPECT_TRUE(c.mem.log.empty());
  c.st().i[2] = {0, 2, 0, 0, 0};
  c.exec(bundle({Ins(Op::LdTnsr).d(3).a(2).c(2)}));
  ASSERT_EQ(c.mem.log.size(), 1u);
  EXPECT_EQ(c.mem.log[0].address, kBase + 600);
  EXPECT_EQ(c.mem.log[0].bytes, 256u);
}

TEST(TpcTensor, FiveDimensionalAddressing) {
  Core c;
  TensorDescriptor d = tensor(DType::F32, {70, 2, 3, 2, 2});
  d.stride = {1, 80, 200, 700, 1500};   // padded strides
  c.ctx.tensors[4] = d;
  c.launch();
  pattern(c.mem, 4 * 3200);
  c.st().i[6] = {10, 1, 2, 1, 1};
  c.exec(bundle({Ins(Op::LdTnsr).d(8).a(6).c(4)}));
  const uint32_t first = 10 + 80 + 400 + 700 + 1500;
  ASSERT_EQ(c.mem.log.size(), 1u);
  EXPECT_EQ(c.mem.log[0].address, kBase + 4 * first);
  EXPECT_EQ(c.mem.log[0].bytes, 4u * 60);
  for (unsigned l = 0; l < 60; ++l) ASSERT_EQ(c.st().vlane<uint32_t>(8, l), 4 * (first + l));
  for (unsigned l = 60; l < 64; ++l) ASSERT_EQ(c.st().vlane<uint32_t>(8, l), 0u);
}

TEST(TpcTensor, SingleElementTensorAndScalarAccesses) {
  Core c;
  c.ctx.tensors[0] = tensor(DType::BF16, {1}, kBase, 0x7FC0);
  c.ctx.tensors[1] = tensor(DType::I8, {4, 4}, kBase + 0x100, 0xFFFFFF85);
  c.ctx.tensors[2] = tensor(DType::F32, {8}, kBase + 0x200);
  c.launch();
  c.mem.set<uint16_t>(kBase, 0x4049);   // bf16 3.140625
  c.st().i[0] = {0, 0, 0, 0, 0};
  c.exec(bundle({Ins(Op::LdTnsr).d(1).a(0).c(0)}));
  EXPECT_EQ(c.st().vlane<uint16_t>(1, 0), 0x4049);
  for (unsigned l = 1; l < 128; ++l) ASSERT_EQ(c.st().vlane<uint16_t>(1, l), 0x7FC0);
  // ld_tnsr_s: a bf16 element becomes its f32 value; an i8 is sign-extended; padding likewise.
  c.exec(bundle({Ins(Op::LdTnsrS).d(2).a(0).c(0)}));
  EXPECT_EQ(c.st().s[2], 0x40490000u);
  c.mem.set<int8_t>(kBase + 0x100 + 4 * 2 + 3, -7);
  c.st().i[1] = {3, 2, 0, 0, 0};
  c.exec(bundle({Ins(Op::LdTnsrS).d(3).a(1).c(1)}));
  EXPECT_EQ(c.st().s[3], static_cast<uint32_t>(-7));
  c.st().i[1] = {4, 2, 0, 0, 0};
  c.mem.log.clear();
  const ExecInfo pad = c.exec(bundle({Ins(Op::LdTnsrS).d(3).a(1).c(1)}));
  EXPECT_EQ(c.st().s[3], static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(0x85))));
  EXPECT_TRUE(c.mem.log.empty());
  EXPECT_EQ(pad.slot[0].latency, LatencyClass::Local);
  // st_tnsr_s: f32 value -> bf16 element (rounded), integer -> its low bits; out of bounds: nothing.
  c.st().s[4] = fbits(2.00390625f);   // rounds to 2.0 (tie to even)
  c.exec(bundle({Ins(Op::StTnsrS).a(0).b(4).c(0)}));
  EXPECT_EQ(c.mem.get<uint16_t>(kBase), 0x4000);
  c.st().s[5] = 0x12345678;
  c.st().i[1] = {1, 3, 0, 0, 0};
  c.exec(bundle({Ins(Op::StTnsrS).a(1).b(5).c(1)}));
  EXPECT_EQ(c.mem.get<uint8_t>(kBase + 0x100 + 13), 0x78);
  EXPECT_EQ(c.mem.get<uint8_t>(kBase + 0x100 + 12), 0xEE);
  EXPECT_EQ(c.mem.get<uint8_t>(kBase + 0x100 + 14), 0xEE);
  c.mem.log.clear();
  c.st().i[1] = {1, 4, 0, 0, 0};
  c.exec(bundle({Ins(Op::StTnsrS).a(1).b(5).c(1)}));
  EXPECT_TRUE(c.mem.log.empty());
  c.st().s[6] = fbits(-2.5f);
  c.st().i[2] = {7, 0, 0, 0, 0};
  const ExecInfo st = c.exec(bundle({Ins(Op::StTnsrS).a(2).b(6).c(2)}));
  EXPECT_EQ(c.mem.get<float>(kBase + 0x200 + 28), -2.5f);
  ASSERT_EQ(st.num_global, 1u);
  EXPECT_EQ(st.global[0].bytes, 4u);
}

TEST(TpcTensor, VectorPredicatedLoadKeepsMaskedLanes) {
  Core c;
  c.ctx.tensors[0] = tensor(DType::F32, {40}, kBase, fbits(7.0f));
  c.launch();
  pattern(c.mem, 4096);
  for (unsigned l = 0; l < 64; ++l) {
    c.st().set_vlane<uint32_t>(9, l, 0xDEAD);
    c.st().set_vpred_bit(3, l, l % 2 == 1);
  }
  c.st().i[0] = {0, 0, 0, 0, 0};
  const ExecInfo info = c.exec(bundle({Ins(Op::LdTnsr).d(9).a(0).c(0).vp(3)}));
  ASSERT_EQ(c.mem.log.size(), 1u);
  EXPECT_EQ(c.mem.log[0].bytes, 160u);   // all in-bounds lanes are read
  for (unsigned l = 0; l < 64; ++l) {
    const uint32_t want = l % 2 == 0 ? 0xDEADu : l < 40 ? 4 * l : fbits(7.0f);
    ASSERT_EQ(c.st().vlane<uint32_t>(9, l), want) << l;
  }
  EXPECT_EQ(info.slot[0].num_reads, 3u);   // VP3, I0, V9 (merged)
}

TEST(TpcTensor, RandomDescriptorsAndCoordinatesMatchAPerLaneReference) {
  Core c;
  LaneRandom r(0x7E4503);
  for (int round = 0; round < 400; ++round) {
    const DType t = kAllTypes[r.below(8)];
    const unsigned eb = dtype_bits(t) / 8;
    TensorDescriptor d;
    d.dtype = t;
    d.dims = static_cast<uint8_t>(1 + r.below(5));
    d.padding = r.u32();
    int64_t stride = 1;
    for (unsigned k = 0; k < d.dims; ++k) {
      d.size[k] = 1 + r.below(k == 0 ? 300 : 4);
      d.stride[k] = stride;
      stride = stride * d.size[k] + r.below(3);   // sometimes padded
    }
    d.stride[0] = 12345;   // ignored: dim 0 is contiguous
    d.base = kBase + eb * r.below(1000);
    if (d.base + static_cast<uint64_t>(stride) * eb >= kBase + 0x20000) continue;   // inside the checked window
    c.ctx.tensors[5] = d;
    c.launch();
    std::array<int32_t, 5> coord{};
    for (unsigned k = 0; k < 5; ++k) {
      const int32_t size = k < d.dims ? static_cast<int32_t>(d.size[k]) : 1;
      coord[k] = static_cast<int32_t>(r.below(static_cast<uint32_t>(size) + 2)) - 1;   // -1 .. size
      if (k == 0) coord[0] = static_cast<int32_t>(r.below(d.size[0] + 140)) - 70;
      if (r.below(4) != 0 && k > 0) coord[k] = std::max(0, std::min(coord[k], size - 1));
    }
    c.st().i[7] = coord;
    // Element address of lane l, or nothing when out of the tensor.
    auto addr = [&](unsigned l, uint64_t& a) {
      for (unsigned k = 1; k < 5; ++k) {
        const int64_t size = k < d.dims ? d.size[k] : 1;
        if (coord[k] < 0 || coord[k] >= size) return false;
      }
      const int64_t x = static_cast<int64_t>(coord[0]) + l;
      if (x < 0 || x >= d.size[0]) return false;
      int64_t off = x;
      for (unsigned k = 1; k < d.dims; ++k) off += coord[k] * d.stride[k];
      a = d.base + static_cast<uint64_t>(off) * eb;
      return true;
    };
    // Load.
    for (size_t o = 0; o < 0x20000; o += 4) c.mem.set<uint32_t>(kBase + o, r.u32());
    ASSERT_FALSE(c.exec(bundle({Ins(Op::LdTnsr).d(1).a(7).c(5)})).faulted) << c.st().fault.message;
    const uint32_t pad = d.padding & width_mask(t);
    for (unsigned l = 0; l < c.lanes(t); ++l) {
      uint64_t a = 0;
      uint32_t want = pad;
      if (addr(l, a)) {
        want = 0;
        std::memcpy(&want, c.mem.at(a), eb);
      }
      ASSERT_EQ(lane_bits(c.st(), 1, t, l), want) << "round " << round << " lane " << l;
    }
    // Store: the same lanes are written, nothing else.
    randomize(c, 2, t, r);
    c.mem.fill(0xEE);
    ASSERT_FALSE(c.exec(bundle({Ins(Op::StTnsr).a(7).b(2).c(5)})).faulted);
    std::vector<bool> written(0x20000, false);
    for (unsigned l = 0; l < c.lanes(t); ++l) {
      uint64_t a = 0;
      if (!addr(l, a)) continue;
      uint32_t got = 0;
      std::memcpy(&got, c.mem.at(a), eb);
      ASSERT_EQ(got, lane_bits(c.st(), 2, t, l)) << "round " << round << " lane " << l;
      for (unsigned b = 0; b < eb; ++b) written[a - kBase + b] = true;
    }
    for (size_t o = 0; o < 0x20000; ++o) {
      if (written[o]) continue;
      ASSERT_EQ(*c.mem.at(kBase + o), 0xEE) << "round " << round << " byte " << o;
    }
  }
}

}  // namespace
}  // namespace hpusim::tpc::testing
