// The TPC executor: launch state, predication, read-before-write within a bundle, local memories,
// loops and jumps, every fault kind (and a clean relaunch after it), the per-bundle ExecInfo, and
// an elementwise-add kernel over a 3-D tensor split between two cores.
#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>

#include "tests/tpc/executor_test_util.h"

namespace hpusim::tpc::testing {
namespace {

// ---- Launch and configuration ----

TEST(TpcExecutor, LaunchSetsTheArchitecturalStartState) {
  Core c;
  for (unsigned r = 0; r < 32; ++r) c.ctx.srf[r] = 100 + r;
  c.st().s[33] = 5;
  c.st().sp[4] = true;
  c.st().set_vlane<float>(7, 3, 1.0f);
  c.st().slm[8] = 1;
  c.launch();
  for (unsigned r = 0; r < 32; ++r) EXPECT_EQ(c.st().s[r], 100 + r);
  for (unsigned r = 32; r < kScalarRegs; ++r) EXPECT_EQ(c.st().s[r], 0u);
  EXPECT_TRUE(c.st().sp[0]);
  EXPECT_FALSE(c.st().sp[4]);
  for (unsigned l = 0; l < c.st().pred_lanes(); ++l) {
    ASSERT_TRUE(c.st().vpred_bit(0, l));
    ASSERT_FALSE(c.st().vpred_bit(1, l));
  }
  EXPECT_EQ(c.st().vlane<float>(7, 3), 0.0f);
  EXPECT_EQ(c.st().slm[8], 0);
  EXPECT_EQ(c.st().pc, 0u);
  EXPECT_EQ(c.st().status, CoreStatus::Running);
  EXPECT_EQ(c.st().loop_depth, 0u);
  EXPECT_EQ(c.st().slm.size(), 1024u);
  EXPECT_EQ(c.st().vlm.size(), 80u * 1024);
}

TEST(TpcExecutor, RejectsBadConfigurationsAndDescriptors) {
  for (unsigned bits : {0u, 128u, 1000u, 3072u, 32768u}) {
    TpcCoreConfig cfg;
    cfg.vector_bits = bits;
    EXPECT_THROW(TpcExecutor{cfg}, std::invalid_argument) << bits;
  }
  TpcCoreConfig cfg;
  cfg.slm_bytes = 1022;
  EXPECT_THROW(TpcExecutor{cfg}, std::invalid_argument);
  Core c;
  c.ctx.tensors[3].dims = 6;
  EXPECT_THROW(c.launch(), std::invalid_argument);
}

TEST(TpcExecutor, VectorWidthIsARuntimeParameter) {
  for (unsigned bits : {256u, 512u, 2048u, 4096u}) {
    Core c(bits);
    EXPECT_EQ(c.lanes(DType::F32), bits / 32);
    EXPECT_EQ(c.lanes(DType::I8), bits / 8);
    for (unsigned l = 0; l < c.lanes(DType::F32); ++l) {
      c.st().set_vlane<float>(1, l, static_cast<float>(l));
      c.st().set_vlane<float>(2, l, 0.5f);
    }
    ASSERT_FALSE(c.exec(bundle({Ins(Op::VAdd).d(3).a(1).b(2)})).faulted);
    for (unsigned l = 0; l < c.lanes(DType::F32); ++l) ASSERT_EQ(c.st().vlane<float>(3, l), l + 0.5f);
    ASSERT_FALSE(c.exec(bundle({Ins(Op::VReduce).d(4).a(3).sw(0)})).faulted);
    const unsigned n = c.lanes(DType::F32);
    EXPECT_EQ(c.st().vlane<float>(4, 0), n * (n - 1) / 2.0f + n * 0.5f);
  }
}

// ---- Predication ----

TEST(TpcExecutor, ScalarPredicatesWithPolarity) {
  Core c;
  c.st().s[1] = 10;
  c.st().sp[3] = true;
  c.st().sp[4] = false;
  c.exec(bundle({Ins(Op::SAdd).t(DType::I32).d(2).a(1).imm().sp(3)}, 1));
  EXPECT_EQ(c.st().s[2], 11u);
  c.exec(bundle({Ins(Op::SAdd).t(DType::I32).d(2).a(1).imm().sp(4)}, 5));
  EXPECT_EQ(c.st().s[2], 11u);   // SP4 false: nothing happens
  c.exec(bundle({Ins(Op::SAdd).t(DType::I32).d(2).a(1).imm().sp(4, true)}, 5));
  EXPECT_EQ(c.st().s[2], 15u);   // !SP4
  const ExecInfo info = c.exec(bundle({Ins(Op::SAdd).t(DType::I32).d(2).a(1).imm().sp(0, true)}, 7));
  EXPECT_EQ(c.st().s[2], 15u);   // !SP0 never executes
  EXPECT_FALSE(info.slot[1].executed);
  EXPECT_EQ(info.slot[1].write.file, RegFile::None);
  // A predicated-off VPU, Load and Store slot do nothing either.
  c.st().set_vlane<float>(1, 0, 3.0f);
  c.st().slm[0] = 0;
  c.exec(bundle({Ins(Op::VMov).d(5).a(1).sp(4), Ins(Op::LdSMov).d(6).imm().sp(4),
                 Ins(Op::StSlm).imm().b(1).sp(4)},
                0));
  EXPECT_EQ(c.st().vlane<float>(5, 0), 0.0f);
  EXPECT_EQ(c.st().s[6], 0u);
  EXPECT_EQ(c.st().slm[0], 0);
}

TEST(TpcExecutor, VectorPredicatesMaskLanesPerDtype) {
  Core c;
  LaneRandom r(3);
  for (DType t : kAllTypes) {
    randomize(c, 1, t, r);
    randomize(c, 2, t, r);
    for (unsigned l = 0; l < c.st().pred_lanes(); ++l) c.st().set_vpred_bit(2, l, r.below(2) != 0);
    for (bool invert : {false, true}) {
      std::vector<uint32_t> before(c.lanes(t));
      for (unsigned l = 0; l < c.lanes(t); ++l) before[l] = lane_bits(c.st(), 2, t, l);
      const ExecInfo info = c.exec(bundle({Ins(Op::VNot).t(t).d(2).a(1).vp(2, invert)}));
      ASSERT_FALSE(info.faulted);
      EXPECT_TRUE(info.slot[2].executed);
      for (unsigned l = 0; l < c.lanes(t); ++l) {
        const bool on = c.st().vpred_bit(2, l) != invert;
        const uint32_t want = on ? (~lane_bits(c.st(), 1, t, l) & (dtype_bits(t) == 32 ? 0xFFFFFFFFu : (1u << dtype_bits(t)) - 1))
                                 : before[l];
        ASSERT_EQ(lane_bits(c.st(), 2, t, l), want) << dtype_name(t) << " lane " << l;
      }
    }
  }
  // !VP0 writes no lane; VP0 (unpredicated) all.
  c.st().set_vlane<uint32_t>(3, 0, 77);
  c.exec(bundle({Ins(Op::VMov).t(DType::U32).d(3).imm().vp(0, true)}, 5));
  EXPECT_EQ(c.st().vlane<uint32_t>(3, 0), 77u);
  c.exec(bundle({Ins(Op::VMov).t(DType::U32).d(3).imm().vp(0)}, 5));
  EXPECT_EQ(c.st().vlane<uint32_t>(3, 63), 5u);
  // The Load slot's vector destination is predicated the same way.
  for (unsigned l = 0; l < 64; ++l) {
    c.st().set_vlane<uint32_t>(8, l, 1000 + l);
    c.st().set_vlane<uint32_t>(9, l, 0);
    c.st().set_vpred_bit(5, l, l % 3 == 0);
  }
  c.exec(bundle({Ins(Op::LdMov).t(DType::U32).d(9).a(8).vp(5)}));
  for (unsigned l = 0; l < 64; ++l) ASSERT_EQ(c.st().vlane<uint32_t>(9, l), l % 3 == 0 ? 1000 + l : 0u);
}

TEST(TpcExecutor, PredicateRegisterWritesAndVpZero) {
  Core c;
  for (unsigned l = 0; l < c.st().pred_lanes(); ++l) c.st().set_vpred_bit(1, l, l % 2 == 0);
  for (unsigned l = 0; l < c.st().pred_lanes(); ++l) c.st().set_vpred_bit(2, l, l % 3 == 0);
  c.exec(bundle({Ins(Op::VPAnd).d(3).a(1).b(2)}));
  c.exec(bundle({Ins(Op::VPOr).d(4).a(1).b(2)}));
  c.exec(bundle({Ins(Op::VPNot).d(5).a(1)}));
  c.exec(bundle({Ins(Op::VPMov).d(6).sw(kSwPredConst | kSwPredTrue)}));
  c.exec(bundle({Ins(Op::VPMov).d(7).a(2)}));
  for (unsigned l = 0; l < c.st().pred_lanes(); ++l) {
    ASSERT_EQ(c.st().vpred_bit(3, l), l % 6 == 0);
    ASSERT_EQ(c.st().vpred_bit(4, l), l % 2 == 0 || l % 3 == 0);
    ASSERT_EQ(c.st().vpred_bit(5, l), l % 2 != 0);
    ASSERT_TRUE(c.st().vpred_bit(6, l));
    ASSERT_EQ(c.st().vpred_bit(7, l), l % 3 == 0);
  }
  // Writes to VP0 are dropped (and not reported as a write).
  const ExecInfo info = c.exec(bundle({Ins(Op::VPMov).d(0).sw(kSwPredConst)}));
  EXPECT_EQ(info.slot[2].write.file, RegFile::None);
  for (unsigned l = 0; l < c.st().pred_lanes(); ++l) ASSERT_TRUE(c.st().vpred_bit(0, l));
  // A predicated compare merges: lanes off keep their bit.
  for (unsigned l = 0; l < 64; ++l) {
    c.st().set_vlane<float>(1, l, static_cast<float>(l));
    c.st().set_vpred_bit(6, l, true);
  }
  c.exec(bundle({Ins(Op::VCmp).d(6).a(1).imm().sw(unsigned(Cmp::Lt)).vp(1)}, fbits(10.0f)));
  for (unsigned l = 0; l < 64; ++l) ASSERT_EQ(c.st().vpred_bit(6, l), l % 2 == 0 ? l < 10 : true) << l;
  for (unsigned l = 64; l < c.st().pred_lanes(); ++l) ASSERT_FALSE(c.st().vpred_bit(6, l));
}

// ---- Bundle semantics ----

TEST(TpcExecutor, AllSlotsReadBeforeAnySlotWrites) {
  Core c;
  for (unsigned l = 0; l < 64; ++l) {
    c.st().set_vlane<float>(1, l, 1.0f);
    c.st().set_vlane<float>(2, l, 2.0f);
  }
  c.st().s[1] = 11;
  c.st().s[2] = 22;
  // Load: V1 = V2 and S2 = S1; SPU: S1 = S2; VPU: V2 = V1 + V1; Store: VLM[0] = V2
  c.exec(bundle({Ins(Op::LdMov).d(1).a(2), Ins(Op::SMov).d(1).a(2), Ins(Op::VAdd).d(2).a(1).b(1),
                 Ins(Op::StVlm).imm().b(2)},
                0));
  EXPECT_EQ(c.st().vlane<float>(1, 5), 2.0f);
  EXPECT_EQ(c.st().vlane<float>(2, 5), 2.0f);   // 1 + 1, from V1's old value
  EXPECT_EQ(c.st().s[1], 22u);
  float stored;
  std::memcpy(&stored, c.st().vlm.data() + 4 * 5, 4);
  EXPECT_EQ(stored, 2.0f);   // V2's old value
  // A load of VLM sees the memory before the same bundle's store to it.
  for (unsigned l = 0; l < 64; ++l) c.st().set_vlane<float>(3, l, 9.0f);
  c.exec(bundle({Ins(Op::LdVlm).d(4).imm(), Ins(Op::StVlm).imm().b(3)}, 0));
  EXPECT_EQ(c.st().vlane<float>(4, 5), 2.0f);
  std::memcpy(&stored, c.st().vlm.data() + 4 * 5, 4);
  EXPECT_EQ(stored, 9.0f);
}

TEST(TpcExecutor, ScalarSwapInOneBundle) {
  Core c;
  c.st().s[1] = 1;
  c.st().s[2] = 2;
  c.exec(bundle({Ins(Op::LdSMov).d(2).a(1), Ins(Op::SMov).d(1).a(2)}));
  EXPECT_EQ(c.st().s[1], 2u);
  EXPECT_EQ(c.st().s[2], 1u);
}

TEST(TpcExecutor, SameRegisterWrittenByTwoSlotsResolvesInSlotOrder) {
  Core c;
  for (unsigned l = 0; l < 64; ++l) {
    c.st().set_vlane<uint32_t>(1, l, 1);
    c.st().set_vlane<uint32_t>(2, l, 2);
    c.st().set_vpred_bit(1, l, l < 32);
  }
  c.exec(bundle({Ins(Op::LdMov).t(DType::U32).d(5).a(1), Ins(Op::VMov).t(DType::U32).d(5).a(2)}));
  EXPECT_EQ(c.st().vlane<uint32_t>(5, 0), 2u);   // VPU after Load
  c.exec(bundle({Ins(Op::LdMov).t(DType::U32).d(6).a(1).vp(1), Ins(Op::VMov).t(DType::U32).d(6).a(2).vp(1, true)}));
  EXPECT_EQ(c.st().vlane<uint32_t>(6, 0), 1u);    // disjoint predicates merge
  EXPECT_EQ(c.st().vlane<uint32_t>(6, 40), 2u);
  c.exec(bundle({Ins(Op::LdSMov).d(7).imm(), Ins(Op::SMov).d(7).imm()}, 3));
  EXPECT_EQ(c.st().s[7], 3u);
}

// ---- Local memories ----

TEST(TpcExecutor, SlmAndVlmRoundTrip) {
  Core c;
  c.st().s[1] = 0xCAFEF00D;
  c.st().s[2] = 1020;   // the last SLM word
  c.exec(bundle({Ins(Op::StSlm).a(2).b(1)}));
  const ExecInfo li = c.exec(bundle({Ins(Op::LdSlm).d(3).a(2)}));
  EXPECT_EQ(c.st().s[3], 0xCAFEF00Du);
  EXPECT_EQ(li.slot[0].latency, LatencyClass::Local);
  for (unsigned l = 0; l < 256; ++l) c.st().set_vlane<uint8_t>(4, l, static_cast<uint8_t>(l * 7));
  c.st().s[5] = 80 * 1024 - 256;   // the last VLM vector
  c.exec(bundle({Ins(Op::StVlm).a(5).b(4)}));
  c.exec(bundle({Ins(Op::LdVlm).t(DType::U8).d(6).a(5)}));
  EXPECT_EQ(std::memcmp(c.st().vreg(4), c.st().vreg(6), 256), 0);
}

// ---- Control flow ----

std::vector<Bundle> counting_loop(uint32_t start, uint32_t bound, int8_t step, DType t = DType::I32) {
  // S1 = bound, S2 = start; loop S2 < S1 step: S3 += 1 ; halt
  return {
      bundle({Ins(Op::SMov).d(1).imm()}, bound),
      bundle({Ins(Op::SMov).d(2).imm()}, start),
      bundle({Ins(Op::Loop).t(t).d(2).a(1).sw(static_cast<uint8_t>(step))}, 3),
      bundle({Ins(Op::SAdd).t(DType::I32).d(3).a(3).imm()}, 1),
      halt_bundle(),
  };
}

TEST(TpcExecutor, LoopRunsItsBodyAndStepsTheIterator) {
  struct Case {
    uint32_t start, bound;
    int8_t step;
    DType t;
    uint32_t trips, final_iter;
  };
  const Case cases[] = {
      {0, 10, 1, DType::I32, 10, 10},
      {0, 10, 3, DType::I32, 4, 12},
      {10, 0, -2, DType::I32, 5, 0},
      {static_cast<uint32_t>(-5), 5, 1, DType::I32, 10, 5},   // signed
      {static_cast<uint32_t>(-5), 5, 1, DType::U32, 10, 5},   // the dtype field does not matter: always signed
      {7, 7, 1, DType::I32, 0, 7},   // zero trips
      {8, 7, 1, DType::I32, 0, 8},
      {0, 1000, 127, DType::I32, 8, 1016},
  };
  for (const Case& k : cases) {
    Core c;
    const RunResult r = c.run(counting_loop(k.start, k.bound, k.step, k.t));
    ASSERT_EQ(r.status, CoreStatus::Halted) << c.st().fault.message;
    EXPECT_EQ(c.st().s[3], k.trips) << k.start << " " << k.bound << " " << int(k.step);
    EXPECT_EQ(c.st().s[2], k.final_iter);
    EXPECT_EQ(c.st().loop_depth, 0u);
    EXPECT_EQ(r.bundles, 3 + k.trips + 1);   // two movs, the loop, the body runs, halt (loops cost nothing)
  }
}

TEST(TpcExecutor, LoopReportsEntryLoopBackAndIteratorSteps) {
  Core c;
  auto prog = counting_loop(0, 2, 1);
  ExecInfo info;
  for (int i = 0; i < 2; ++i) c.ex.execute(prog[c.st().pc], info);
  c.ex.execute(prog[c.st().pc], info);   // the loop
  EXPECT_TRUE(info.loop_entered);
  EXPECT_EQ(info.next_pc, 3u);
  c.ex.execute(prog[c.st().pc], info);   // body, first pass
  EXPECT_TRUE(info.loop_back);
  EXPECT_EQ(info.next_pc, 3u);
  ASSERT_EQ(info.num_loop_steps, 1u);
  EXPECT_EQ(info.loop_step_regs[0], 2u);
  c.ex.execute(prog[c.st().pc], info);   // body, last pass
  EXPECT_FALSE(info.loop_back);
  EXPECT_EQ(info.num_loop_steps, 1u);
  EXPECT_EQ(info.next_pc, 4u);
}

TEST(TpcExecutor, BoundIsReadOnceAndTheIteratorIsARegister) {
  Core c;
  std::vector<Bundle> p = {
      bundle({Ins(Op::SMov).d(1).imm()}, 4),
      bundle({Ins(Op::Loop).d(2).a(1).sw(1)}, 2),
      bundle({Ins(Op::SAdd).t(DType::I32).d(1).a(1).imm(), Ins(Op::LdSMov).d(5).a(2)}, 100),   // bound += 100: no effect
      halt_bundle(),
  };
  ASSERT_EQ(c.run(p).status, CoreStatus::Halted);
  EXPECT_EQ(c.st().s[2], 4u);
  EXPECT_EQ(c.st().s[5], 3u);   // the last pass saw iterator 3
  EXPECT_EQ(c.st().s[1], 404u);
}

// Nested loops, each body ending at its own label or all at one shared label.
std::vector<Bundle> nested(unsigned depth, bool shared_end, uint32_t trips) {
  std::vector<Bundle> p;
  p.push_back(bundle({Ins(Op::SMov).d(1).imm()}, trips));
  const uint32_t first_loop = 1;
  // bundles: [mov S(10+k)=0][loop k] for each k, then the innermost body, then (distinct ends) one
  // filler bundle per level as each loop's last bundle.
  const uint32_t body = first_loop + 2 * depth;
  for (unsigned k = 0; k < depth; ++k) {
    const uint32_t end = shared_end ? body : body + (depth - k);
    p.push_back(bundle({Ins(Op::SMov).d(10 + k).imm()}, 0));
    p.push_back(bundle({Ins(Op::Loop).d(10 + k).a(1).sw(1)}, end));
  }
  p.push_back(bundle({Ins(Op::SAdd).t(DType::I32).d(3).a(3).imm()}, 1));
  if (!shared_end)
    for (unsigned k = 0; k < depth; ++k) p.push_back(bundle({Ins(Op::SAdd).t(DType::I32).d(4).a(4).imm()}, 1));
  p.push_back(halt_bundle());
  return p;
}

TEST(TpcExecutor, LoopsNestFourDeepWithSharedOrDistinctEnds) {
  for (bool shared : {false, true}) {
    for (unsigned depth = 1; depth <= 4; ++depth) {
      Core c;
      const RunResult r = c.run(nested(depth, shared, 3));
      ASSERT_EQ(r.status, CoreStatus::Halted) << c.st().fault.message;
      uint32_t inner = 1;
      for (unsigned k = 0; k < depth; ++k) inner *= 3;
      EXPECT_EQ(c.st().s[3], inner) << depth << (shared ? " shared" : " distinct");
      EXPECT_EQ(c.st().loop_depth, 0u);
    }
  }
}

TEST(TpcExecutor, AFifthNestedLoopFaults) {
  Core c;
  const RunResult r = c.run(nested(5, false, 2));
  ASSERT_EQ(r.status, CoreStatus::Faulted);
  EXPECT_EQ(c.st().fault.kind, FaultKind::LoopTooDeep);
  EXPECT_EQ(c.st().fault.pc, 1u + 2 * 4 + 1);   // the fifth loop bundle
  // Even a zero-trip fifth loop faults (nesting is structural).
  Core z;
  auto p = nested(5, false, 2);
  p[1 + 2 * 4] = bundle({Ins(Op::SMov).d(14).imm()}, 50);   // fifth iterator starts past the bound
  EXPECT_EQ(z.run(p).status, CoreStatus::Faulted);
  EXPECT_EQ(z.st().fault.kind, FaultKind::LoopTooDeep);
}

TEST(TpcExecutor, ZeroTripInnerLoopEndingAnOuterBodyStepsTheOuterLoop) {
  Core c;
  std::vector<Bundle> p = {
      bundle({Ins(Op::SMov).d(1).imm()}, 3),   // outer bound
      bundle({Ins(Op::Loop).d(2).a(1).sw(1)}, 4),   // outer: body 2..4
      bundle({Ins(Op::SAdd).t(DType::I32).d(3).a(3).imm()}, 1),
      bundle({Ins(Op::Loop).d(4).a(0).sw(1)}, 4),   // inner: S4 (0) < S0 (0) is false: skipped
      bundle({Ins(Op::SAdd).t(DType::I32).d(5).a(5).imm()}, 1),   // the shared last bundle
      halt_bundle(),
  };
  ASSERT_EQ(c.run(p).status, CoreStatus::Halted) << c.st().fault.message;
  EXPECT_EQ(c.st().s[3], 3u);   // the outer body ran three times
  EXPECT_EQ(c.st().s[5], 0u);   // the skipped bundle never ran
  EXPECT_EQ(c.st().s[2], 3u);
}

TEST(TpcExecutor, JumpsArePredicatedAndReported) {
  Core c;
  std::vector<Bundle> p = {
      bundle({Ins(Op::SMov).d(1).imm()}, 5),   // counter
      bundle({Ins(Op::SSub).t(DType::I32).d(1).a(1).imm()}, 1),
      bundle({Ins(Op::SCmp).t(DType::I32).d(2).a(1).imm().sw(unsigned(Cmp::Gt))}, 0),
      bundle({Ins(Op::Jmp).sp(2)}, 1),
      halt_bundle(),
  };
  ExecInfo info;
  unsigned taken = 0;
  while (c.st().status == CoreStatus::Running) {
    c.ex.execute(p[c.st().pc], info);
    taken += info.branch_taken;
  }
  EXPECT_EQ(taken, 4u);
  EXPECT_EQ(c.st().s[1], 0u);
  EXPECT_EQ(c.st().status, CoreStatus::Halted);
}

TEST(TpcExecutor, ATakenJumpInTheLastBundleOfALoopBodyWins) {
  Core c;
  std::vector<Bundle> p = {
      bundle({Ins(Op::SMov).d(1).imm()}, 10),
      bundle({Ins(Op::Loop).d(2).a(1).sw(1)}, 2),
      bundle({Ins(Op::Jmp)}, 4),
      halt_bundle(),
      bundle({Ins(Op::SMov).d(6).imm()}, 1),
      halt_bundle(),
  };
  ASSERT_EQ(c.run(p).status, CoreStatus::Halted);
  EXPECT_EQ(c.st().pc, 6u);
  EXPECT_EQ(c.st().s[2], 0u);        // not stepped
  EXPECT_EQ(c.st().loop_depth, 1u);  // the frame stays
}

TEST(TpcExecutor, HaltRunsTheRestOfItsBundleThenStops) {
  Core c;
  std::vector<Bundle> p = {bundle({Ins(Op::Halt), Ins(Op::LdSMov).d(4).imm()}, 9), bundle({Ins(Op::SMov).d(5).imm()}, 1)};
  const RunResult r = c.run(p);
  EXPECT_EQ(r.status, CoreStatus::Halted);
  EXPECT_EQ(r.bundles, 1u);
  EXPECT_EQ(c.st().s[4], 9u);
  ExecInfo info;
  c.ex.execute(p[1], info);   // a halted core does nothing
  EXPECT_TRUE(info.halted);
  EXPECT_EQ(c.st().s[5], 0u);
}

// ---- Faults ----

// Runs a one-bundle program (then halt) and expects a fault of `kind` with no register change.
void expect_fault(Core& c, const Bundle& b, FaultKind kind, const char* what) {
  SCOPED_TRACE(what);
  c.launch();
  c.st().s[1] = 8;
  c.st().s[2] = 0;
  c.st().set_vlane<float>(3, 0, 1.5f);
  const auto s_before = c.st().s;
  std::vector<uint8_t> v_before(c.st().vreg(0), c.st().vreg(0) + kVectorRegs * c.st().vector_bytes());
  std::vector<Bundle> prog = {bundle({Ins(Op::SMov).d(30).a(30)}), b, halt_bundle()};
  const RunResult r = c.run(prog);
  ASSERT_EQ(r.status, CoreStatus::Faulted);
  EXPECT_EQ(c.st().fault.kind, kind) << c.st().fault.message;
  EXPECT_EQ(c.st().fault.pc, 1u);
  EXPECT_EQ(c.st().pc, 1u);
  EXPECT_FALSE(c.st().fault.message.empty());
  EXPECT_EQ(c.st().s, s_before);
  EXPECT_EQ(std::memcmp(v_before.data(), c.st().vreg(0), v_before.size()), 0);
  ExecInfo info;
  c.ex.execute(b, info);   // a faulted core stays stopped
  EXPECT_TRUE(info.faulted);
  // The next launch works.
  c.launch();
  std::vector<Bundle> ok = {bundle({Ins(Op::SMov).d(7).imm()}, 42), halt_bundle()};
  ASSERT_EQ(c.run(ok).status, CoreStatus::Halted);
  EXPECT_EQ(c.st().s[7], 42u);
  EXPECT_EQ(c.st().fault.kind, FaultKind::None);
}

TEST(TpcExecutor, EveryFaultKindStopsTheCorePreciselyAndTheNextLaunchWorks) {
  Core c;
  c.ctx.tensors[0].dims = 1;
  c.ctx.tensors[0].base = 0x10000;
  c.ctx.tensors[0].size[0] = 1000;
  c.ctx.tensors[1] = c.ctx.tensors[0];
  c.ctx.tensors[1].base = 0x9000000;   // outside the test memory
  // Every fault bundle also carries a harmless write (S5, V6) that must not happen.
  const Ins side_s = Ins(Op::LdSMov).d(5).imm();
  const Ins side_v = Ins(Op::VMov).d(6).a(3);
  Bundle b;
  b = bundle({side_s, Ins(Op::VAdd).d(1).a(2).b(3)});
  b[Slot::Spu] = Ins(Op::VAdd).d(1).a(2).b(3);
  b[Slot::Vpu] = side_v;
  expect_fault(c, b, FaultKind::IllegalInstruction, "a VPU opcode in the SPU slot");
  expect_fault(c, bundle({side_s, Ins(Op::VAdd).d(45).a(2).b(3)}), FaultKind::IllegalInstruction, "V45");
  expect_fault(c, bundle({side_v, Ins(Op::SMov).d(36).a(1)}), FaultKind::IllegalInstruction, "S36");
  expect_fault(c, bundle({side_v, Ins(Op::SMov).d(3).a(1).vp(1)}), FaultKind::IllegalInstruction, "VP in the SPU slot");
  expect_fault(c, bundle({side_v, Ins(Op::StSlm).a(1).b(1).vp(1)}), FaultKind::IllegalInstruction, "VP in the Store slot");
  expect_fault(c, bundle({side_v, Ins(Op::LdSlm).d(4).a(1).vp(1)}), FaultKind::IllegalInstruction, "VP on a scalar load");
  expect_fault(c, bundle({side_s, Ins(Op::VShl).d(1).a(2).b(3)}), FaultKind::IllegalInstruction, "f32 shift");
  expect_fault(c, bundle({side_s, Ins(Op::VDiv).t(DType::I32).d(1).a(2).b(3)}), FaultKind::IllegalInstruction, "int div");
  expect_fault(c, bundle({side_s, Ins(Op::VCmp).d(1).a(2).b(3).sw(6)}), FaultKind::IllegalInstruction, "cmp kind");
  expect_fault(c, bundle({side_s, Ins(Op::VConvert).t(DType::BF16).d(1).a(2).sw(unsigned(DType::F32) | (2u << 5))}),
               FaultKind::IllegalInstruction, "convert part 2 of bf16 -> f32");
  expect_fault(c, bundle({side_s, Ins(Op::VSpecial).t(DType::I16).d(1).a(2)}), FaultKind::IllegalInstruction, "int special");
  expect_fault(c, bundle({side_s, Ins(Op::SAdd).t(DType::BF16).d(1).a(2).b(3)}), FaultKind::IllegalInstruction, "SPU bf16");
  expect_fault(c, bundle({side_v, Ins(Op::IMovDim).d(1).a(2).sw(5)}), FaultKind::IllegalInstruction, "dim 5");
  expect_fault(c, bundle({side_v, Ins(Op::Loop).d(1).a(2).sw(0)}, 5), FaultKind::IllegalInstruction, "loop step 0");
  expect_fault(c, bundle({side_v, Ins(Op::Loop).d(2).a(1).sw(1)}, 1), FaultKind::IllegalInstruction, "loop label <= pc");
  expect_fault(c, bundle({side_v, Ins(Op::SMov).d(40).a(1).sp(0, true)}), FaultKind::IllegalInstruction,
               "a bad register faults even when predicated off");
  {
    Bundle bad = bundle({side_s});
    bad[Slot::Vpu].op = static_cast<Op>(120);   // undefined VPU opcode
    expect_fault(c, bad, FaultKind::IllegalInstruction, "undefined opcode");
  }
  expect_fault(c, bundle({side_v, Ins(Op::SDiv).t(DType::I32).d(4).a(1).b(2)}), FaultKind::DivideByZero, "i32 / 0");
  expect_fault(c, bundle({side_v, Ins(Op::SDiv).t(DType::U32).d(4).a(1).imm()}, 0), FaultKind::DivideByZero, "u32 / 0");
  expect_fault(c, bundle({side_v, Ins(Op::LdSlm).d(4).imm()}, 2), FaultKind::LocalAccess, "SLM misaligned");
  expect_fault(c, bundle({side_v, Ins(Op::LdSlm).d(4).imm()}, 1024), FaultKind::LocalAccess, "SLM out of range");
  expect_fault(c, bundle({side_v, Ins(Op::StSlm).imm().b(1)}, 0xFFFFFFFC), FaultKind::LocalAccess, "SLM wrap");
  expect_fault(c, bundle({side_s, Ins(Op::StVlm).imm().b(3)}, 128), FaultKind::LocalAccess, "VLM misaligned");
  expect_fault(c, bundle({side_v, Ins(Op::LdVlm).d(4).imm()}, 80 * 1024), FaultKind::LocalAccess, "VLM out of range");
  expect_fault(c, bundle({side_v, Ins(Op::LdTnsr).d(4).a(0).c(16)}), FaultKind::BadTensor, "tensor 16");
  expect_fault(c, bundle({side_v, Ins(Op::StTnsr).a(0).b(3).c(2)}), FaultKind::BadTensor, "unset descriptor");
  expect_fault(c, bundle({side_v, Ins(Op::LdTnsr).d(4).a(0).c(1)}), FaultKind::GlobalAccess, "refused read");
  expect_fault(c, bundle({side_v, Ins(Op::StTnsr).a(0).b(3).c(1)}), FaultKind::GlobalAccess, "refused write");
  expect_fault(c, bundle({side_v, Ins(Op::StTnsrS).a(0).b(1).c(1)}), FaultKind::GlobalAccess, "refused scalar write");
  // f32 division by zero is IEEE (no fault)
  c.launch();
  c.exec(bundle({Ins(Op::SDiv).d(4).a(1).imm()}, 0));
  EXPECT_EQ(c.st().status, CoreStatus::Running);
}

TEST(TpcExecutor, NoGlobalMemoryAndFetchErrorsFault) {
  Core c;
  c.ctx.tensors[0].dims = 1;
  c.ctx.tensors[0].size[0] = 10;
  c.launch();
  c.ex.set_global_memory(nullptr);
  c.exec(bundle({Ins(Op::LdTnsr).d(1).a(0).c(0)}));
  EXPECT_EQ(c.st().fault.kind, FaultKind::GlobalAccess);
  c.ex.set_global_memory(&c.mem);
  c.launch();
  std::vector<Bundle> p = {bundle({Ins(Op::SMov).d(1).imm()}, 1)};
  const RunResult r = c.run(p);
  EXPECT_EQ(r.status, CoreStatus::Faulted);
  EXPECT_EQ(c.st().fault.kind, FaultKind::FetchError);
  EXPECT_EQ(c.st().fault.pc, 1u);
  c.launch();
  c.ex.raise_fault(FaultKind::FetchError, "icache refill failed");
  EXPECT_EQ(c.st().status, CoreStatus::Faulted);
  EXPECT_EQ(c.st().fault.message, "icache refill failed");
}

// ---- ExecInfo ----

TEST(TpcExecutor, ExecInfoReportsReadsWritesLatenciesAndGlobalAccesses) {
  Core c;
  TensorDescriptor& t = c.ctx.tensors[2];
  t.base = 0x20000;
  t.dims = 2;
  t.dtype = DType::F32;
  t.size = {100, 4};
  t.stride = {1, 100};
  c.launch();
  c.st().i[3] = {64, 1, 0, 0, 0};   // lanes 0..35 in bounds
  c.st().sp[2] = true;
  const ExecInfo info =
      c.exec(bundle({Ins(Op::LdTnsr).d(7).a(3).c(2), Ins(Op::SMac).t(DType::I32).d(4).a(5).b(6).sp(2),
                     Ins(Op::VSpecial).d(8).a(9).sw(unsigned(Special::Exp)).vp(1), Ins(Op::StTnsr).a(3).b(10).c(2)}));
  ASSERT_FALSE(info.faulted) << c.st().fault.message;
  const SlotExec& ld = info.slot[0];
  EXPECT_TRUE(ld.executed);
  EXPECT_EQ(ld.latency, LatencyClass::GlobalLoad);
  EXPECT_EQ(ld.write, (RegRef{RegFile::V, 7}));
  ASSERT_EQ(ld.num_reads, 1u);
  EXPECT_EQ(ld.reads[0], (RegRef{RegFile::I, 3}));
  const SlotExec& spu = info.slot[1];
  EXPECT_EQ(spu.latency, LatencyClass::Spu);
  EXPECT_EQ(spu.write, (RegRef{RegFile::S, 4}));
  ASSERT_EQ(spu.num_reads, 4u);   // SP2, S5, S6, S4 (mac accumulates)
  EXPECT_EQ(spu.reads[0], (RegRef{RegFile::SP, 2}));
  const SlotExec& vpu = info.slot[2];
  EXPECT_EQ(vpu.latency, LatencyClass::Special);
  EXPECT_EQ(vpu.write, (RegRef{RegFile::V, 8}));
  ASSERT_EQ(vpu.num_reads, 3u);   // VP1, V9, V8 (merged under a vector predicate)
  EXPECT_EQ(vpu.reads[0], (RegRef{RegFile::VP, 1}));
  EXPECT_EQ(vpu.reads[1], (RegRef{RegFile::V, 9}));
  EXPECT_EQ(vpu.reads[2], (RegRef{RegFile::V, 8}));
  const SlotExec& stv = info.slot[3];
  EXPECT_EQ(stv.latency, LatencyClass::None);
  EXPECT_EQ(stv.write.file, RegFile::None);
  ASSERT_EQ(info.num_global, 2u);
  EXPECT_EQ(info.global[0].address, 0x20000u + (100 + 64) * 4);
  EXPECT_EQ(info.global[0].bytes, 36u * 4);
  EXPECT_FALSE(info.global[0].is_write);
  EXPECT_EQ(info.global[0].slot, Slot::Load);
  EXPECT_EQ(info.global[0].dst, (RegRef{RegFile::V, 7}));
  EXPECT_EQ(info.global[1].address, 0x20000u + (100 + 64) * 4);
  EXPECT_TRUE(info.global[1].is_write);
  EXPECT_EQ(info.global[1].slot, Slot::Store);
  EXPECT_EQ(info.pc, 0u);
  EXPECT_EQ(info.next_pc, 1u);
  // A predicated-off slot lists only its predicate; a tensor load touching no memory is Local.
  c.st().i[3] = {100, 1, 0, 0, 0};
  const ExecInfo off = c.exec(bundle({Ins(Op::LdTnsr).d(7).a(3).c(2), Ins(Op::SAdd).d(4).a(5).b(6).sp(3)}));
  EXPECT_EQ(off.slot[0].latency, LatencyClass::Local);
  EXPECT_EQ(off.num_global, 0u);
  EXPECT_FALSE(off.slot[1].executed);
  ASSERT_EQ(off.slot[1].num_reads, 1u);
  EXPECT_EQ(off.slot[1].reads[0], (RegRef{RegFile::SP, 3}));
  EXPECT_EQ(off.slot[2].op, Op::Nop);
  EXPECT_FALSE(off.slot[2].executed);
  // Broadcast scalars are reads of S; immediates are not reads.
  const ExecInfo bc = c.exec(bundle({Ins(Op::VAdd).d(1).a(2).b(9).scalar()}));
  ASSERT_EQ(bc.slot[2].num_reads, 2u);
  EXPECT_EQ(bc.slot[2].reads[1], (RegRef{RegFile::S, 9}));
  EXPECT_EQ(bc.slot[2].latency, LatencyClass::Vpu);
  const ExecInfo im = c.exec(bundle({Ins(Op::VAdd).d(1).a(2).imm()}, 1));
  EXPECT_EQ(im.slot[2].num_reads, 1u);
}

// ---- A kernel ----

// C = A + B over a 3-D f32 tensor, dim 0 in vectors of 64 lanes, dims 1 and 2 over this core's
// slice of the index space (ispace_offset .. +size in dims 1 and 2; dim 0 is the whole row, its
// size in S0). The three loops share their last bundle, the store.
std::vector<Bundle> add_kernel() {
  const DType I = DType::I32;
  return {
      /* 0*/ bundle({Ins(Op::ISpaceOffset).d(1)}),
      /* 1*/ bundle({Ins(Op::ISpaceSize).d(2)}),
      /* 2*/ bundle({Ins(Op::IGetDim).d(20).a(1).sw(2)}),              // S20 = off2
      /* 3*/ bundle({Ins(Op::IGetDim).d(21).a(2).sw(2)}),              // S21 = size2
      /* 4*/ bundle({Ins(Op::SAdd).t(I).d(21).a(21).b(20)}),           // S21 = end2
      /* 5*/ bundle({Ins(Op::IGetDim).d(22).a(1).sw(1)}),              // S22 = off1
      /* 6*/ bundle({Ins(Op::IGetDim).d(23).a(2).sw(1)}),
      /* 7*/ bundle({Ins(Op::SAdd).t(I).d(23).a(23).b(22)}),           // S23 = end1
      /* 8*/ bundle({Ins(Op::SMov).d(32).a(20)}),                      // c2 = off2
      /* 9*/ bundle({Ins(Op::Loop).t(I).d(32).a(21).sw(1)}, 19),        // for c2 < end2
      /*10*/ bundle({Ins(Op::LdSMov).d(33).a(22), Ins(Op::IMovDim).d(4).a(32).sw(2)}),
      /*11*/ bundle({Ins(Op::Loop).t(I).d(33).a(23).sw(1)}, 19),        //   for c1 < end1
      /*12*/ bundle({Ins(Op::SMov).d(34).imm()}, 0),
      /*13*/ bundle({Ins(Op::IMovDim).d(4).a(33).sw(1)}),
      /*14*/ bundle({Ins(Op::Loop).t(I).d(34).a(0).sw(64)}, 19),        //     for c0 < S0 step 64
      /*15*/ bundle({Ins(Op::IMovDim).d(4).a(34).sw(0)}),
      /*16*/ bundle({Ins(Op::LdTnsr).d(1).a(4).c(0)}),
      /*17*/ bundle({Ins(Op::LdTnsr).d(2).a(4).c(1)}),
      /*18*/ bundle({Ins(Op::VAdd).d(3).a(1).b(2)}),
      /*19*/ bundle({Ins(Op::StTnsr).a(4).b(3).c(2)}),
      /*20*/ halt_bundle(),
  };
}

TEST(TpcExecutor, ElementwiseAddKernelOverA3dTensorOnTwoCores) {
  const uint32_t n0 = 150, n1 = 3, n2 = 4;   // dim 0 not a multiple of 64 lanes
  TestMemory mem(0x100000, 1 << 20);
  const uint64_t a = 0x100000, b = a + 0x10000, cc = b + 0x10000;
  const int64_t s1 = 160, s2 = 160 * 3 + 7;   // padded rows and planes
  LaneRandom r(2024);
  for (uint32_t k = 0; k < n2; ++k)
    for (uint32_t j = 0; j < n1; ++j)
      for (uint32_t i = 0; i < n0; ++i) {
        const uint64_t off = 4 * (i + j * s1 + k * s2);
        mem.set<float>(a + off, static_cast<float>(r.below(1000)) * 0.25f);
        mem.set<float>(b + off, static_cast<float>(r.below(1000)) - 500.0f);
      }
  auto desc = [&](uint64_t base) {
    TensorDescriptor d;
    d.base = base;
    d.dtype = DType::F32;
    d.dims = 3;
    d.size = {n0, n1, n2, 0, 0};
    d.stride = {1, s1, s2, 0, 0};
    return d;
  };
  const auto prog = add_kernel();
  uint64_t total_bundles = 0;
  for (int core = 0; core < 2; ++core) {
    TpcExecutor ex;
    ex.set_global_memory(&mem);
    LaunchContext ctx;
    ctx.tensors[0] = desc(a);
    ctx.tensors[1] = desc(b);
    ctx.tensors[2] = desc(cc);
    ctx.srf[0] = n0;
    ctx.ispace_offset = {0, 0, static_cast<int32_t>(core * 2), 0, 0};   // core 0: planes 0-1, core 1: 2-3
    ctx.ispace_size = {static_cast<int32_t>(n0), static_cast<int32_t>(n1), 2, 1, 1};
    ex.launch(ctx);
    const RunResult res = ex.run(prog);
    ASSERT_EQ(res.status, CoreStatus::Halted) << ex.state().fault.message;
    total_bundles += res.bundles;
  }
  for (uint32_t k = 0; k < n2; ++k)
    for (uint32_t j = 0; j < n1; ++j) {
      for (uint32_t i = 0; i < n0; ++i) {
        const uint64_t off = 4 * (i + j * s1 + k * s2);
        ASSERT_EQ(mem.get<float>(cc + off), mem.get<float>(a + off) + mem.get<float>(b + off)) << i << "," << j << "," << k;
      }
      // The padding between rows was not written.
      for (uint32_t i = n0; i < s1 && i + j * s1 < s2; ++i)
        ASSERT_EQ(mem.get<uint32_t>(cc + 4 * (i + j * s1 + k * s2)), 0xEEEEEEEEu);
    }
  // Per core: 10 set-up bundles, 2 planes x (2 + 3 rows x (3 + 3 vectors x 5)), halt.
  EXPECT_EQ(total_bundles, 2u * (10 + 2 * (2 + 3 * (3 + 3 * 5)) + 1));
}

// ---- Speed (printed, not asserted) ----

TEST(TpcExecutor, ReportsItsSpeedOnAMacLoop) {
  for (DType t : {DType::F32, DType::BF16, DType::I8}) {
    const double bps = measure_executor_speed(3'000'000, 2048, t);
    std::printf("executor speed: %.1f M bundles/s (%s mac + SPU add + ld_mov per bundle, 2048-bit vectors)\n",
                bps / 1e6, dtype_name(t));
    ::testing::Test::RecordProperty(std::string("bundles_per_second_") + dtype_name(t),
                                    std::to_string(static_cast<long long>(bps)));
    EXPECT_GT(bps, 0.0);
  }
}

}  // namespace
}  // namespace hpusim::tpc::testing
