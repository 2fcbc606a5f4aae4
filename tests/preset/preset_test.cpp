#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "sim/preset/preset.h"

namespace hpusim::preset {
namespace {

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const PresetError& e) {
    return e.what();
  }
  return "";
}

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Preset, BuiltinPresetsLoadAndCarryPublicNumbers) {
  auto names = builtin_preset_names();
  ASSERT_EQ(names, (std::vector<std::string>{"dramsim3-hbm2", "hl205", "hl225", "hl325"}));

  Card hl205 = load_preset("hl205");
  EXPECT_EQ(hl205.tpc().count(), 8u);
  EXPECT_EQ(hl205.sram().size_bytes(), 0x1400000u);
  EXPECT_EQ(hl205.hbm().stacks(), 4u);
  EXPECT_EQ(hl205.pcie().generation(), 4u);
  EXPECT_EQ(hl205.nic().ports(), 10u);
  EXPECT_EQ(hl205.dma().pci_channels() + hl205.dma().internal_channels(), 8u);
  EXPECT_EQ(hl205.memory_map().cfg_base(), 0x7FFC000000u);
  EXPECT_EQ(hl205.memory_map().sram_base(), 0x7FF0000000u);
  EXPECT_EQ(hl205.memory_map().host_phys_base(), 0x8000000000u);
  EXPECT_EQ(hl205.hbm().timing().name(), "HBM2-1760");

  Card hl225 = load_preset("hl225");
  EXPECT_EQ(hl225.tpc().count(), 24u);
  EXPECT_EQ(hl225.hbm().stacks(), 6u);
  EXPECT_EQ(hl225.sram().size_bytes(), 0x3000000u);
  Card hl325 = load_preset("hl325");
  EXPECT_EQ(hl325.tpc().count(), 64u);
  EXPECT_EQ(hl325.pcie().generation(), 5u);
  EXPECT_EQ(hl325.nic().gbps_per_port(), 200u);
}

// Capacity and peak bandwidth implied by each preset match the published card numbers.
TEST(Preset, HbmCapacityAndPeakMatchPublishedFigures) {
  struct Expect {
    const char* name;
    double capacity_gib;
    double peak_gbps;
  };
  for (const Expect& e : {Expect{"hl205", 32, 900}, Expect{"hl225", 96, 2460}, Expect{"hl325", 128, 3670}}) {
    Card card = load_preset(e.name);
    const auto& h = card.hbm();
    double pcs = double(h.stacks()) * h.channels_per_stack() * h.pseudo_channels();
    double capacity = pcs * h.bank_groups() * h.banks_per_group() * h.rows() * h.columns() * h.timing().burst_bytes();
    EXPECT_DOUBLE_EQ(capacity / double(1ull << 30), e.capacity_gib) << e.name;
    double peak = pcs * h.timing().burst_bytes() / (h.timing().n_bl() * h.timing().tck_ps() * 1e-12) / 1e9;
    EXPECT_NEAR(peak, e.peak_gbps, e.peak_gbps * 0.01) << e.name;
  }
}

TEST(Preset, OverridesReachEveryKindOfField) {
  Card card = load_preset("hl205", {"hbm.stacks=2", "clocks.tpc_mhz=1500", "pcie.dllp_overhead_pct=3.5",
                                    "hbm.refresh_enabled=false", "mme.geometries=a,b", "name=custom",
                                    "memory_map.sram_base=0x7FE0000000", "hbm.timing.n_cl=20"});
  EXPECT_EQ(card.hbm().stacks(), 2u);
  EXPECT_EQ(card.clocks().tpc_mhz(), 1500u);
  EXPECT_DOUBLE_EQ(card.pcie().dllp_overhead_pct(), 3.5);
  EXPECT_FALSE(card.hbm().refresh_enabled());
  ASSERT_EQ(card.mme().geometries_size(), 2);
  EXPECT_EQ(card.mme().geometries(1), "b");
  EXPECT_EQ(card.name(), "custom");
  EXPECT_EQ(card.memory_map().sram_base(), 0x7FE0000000u);
  // An explicit timing field wins over the named set; the rest comes from the set.
  EXPECT_EQ(card.hbm().timing().n_cl(), 20u);
  EXPECT_EQ(card.hbm().timing().n_rcdrd(), 14u);
}

TEST(Preset, SwitchingTheTimingSetResolvesTheNewSet) {
  Card card = load_preset("hl205", {"hbm.timing_set=HBM3-6400"});
  EXPECT_EQ(card.hbm().timing().name(), "HBM3-6400");
  EXPECT_EQ(card.hbm().timing().n_rcdrd(), 31u);
  EXPECT_EQ(card.hbm().timing().tck_ps(), 625u);
}

TEST(Preset, UnknownFieldIsNamed) {
  std::string message = error_of([] { load_preset("hl205", {"hbm.stackz=2"}); });
  EXPECT_NE(message.find("unknown preset field 'hbm.stackz'"), std::string::npos) << message;
  EXPECT_NE(message.find("stacks"), std::string::npos) << message;  // lists the real fields
  message = error_of([] { load_preset("hl205", {"nosuch.field=1"}); });
  EXPECT_NE(message.find("'nosuch'"), std::string::npos) << message;
  message = error_of([] { load_preset("hl205", {"hbm.stacks.deeper=1"}); });
  EXPECT_NE(message.find("has no sub-fields"), std::string::npos) << message;
  message = error_of([] { load_preset("hl205", {"hbm=1"}); });
  EXPECT_NE(message.find("is a message"), std::string::npos) << message;
}

TEST(Preset, BadValuesAreNamed) {
  std::string message = error_of([] { load_preset("hl205", {"hbm.stacks=four"}); });
  EXPECT_NE(message.find("bad value 'four' for hbm.stacks"), std::string::npos) << message;
  message = error_of([] { load_preset("hl205", {"hbm.stacks=-1"}); });
  EXPECT_NE(message.find("hbm.stacks"), std::string::npos) << message;
  message = error_of([] { load_preset("hl205", {"hbm.stacks=99999999999"}); });
  EXPECT_NE(message.find("no larger than"), std::string::npos) << message;
  message = error_of([] { load_preset("hl205", {"hbm.refresh_enabled=maybe"}); });
  EXPECT_NE(message.find("true or false"), std::string::npos) << message;
  message = error_of([] { load_preset("hl205", {"pcie.dllp_overhead_pct=nan"}); });
  EXPECT_NE(message.find("finite number"), std::string::npos) << message;
  message = error_of([] { load_preset("hl205", {"hbm.stacks"}); });
  EXPECT_NE(message.find("path.to.field=value"), std::string::npos) << message;
}

TEST(Preset, SemanticErrorsAreNamed) {
  EXPECT_NE(error_of([] { load_preset("hl205", {"hbm.banks_per_group=3"}); }).find("hbm.banks_per_group = 3 must be a power of two"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_preset("hl205", {"clocks.tpc_mhz=0"}); }).find("clocks.tpc_mhz"), std::string::npos);
  EXPECT_NE(error_of([] { load_preset("hl205", {"pcie.generation=7"}); }).find("pcie.generation"), std::string::npos);
  EXPECT_NE(error_of([] { load_preset("hl205", {"hbm.timing_set=HBM9"}); }).find("unknown hbm.timing_set 'HBM9'"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_preset("hl205", {"memory_map.sram_base=0x10000"}); }).find("overlaps"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_preset("hl205", {"hbm.write_low_watermark_bursts=400"}); }).find("watermark"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_preset("hl205", {"hbm.queue_bursts=4"}); }).find("hbm.queue_bursts = 4 must hold one interleave chunk (8 bursts)"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_preset("hl205", {"hbm.bank_queue_bursts=2"}); }).find("hbm.bank_queue_bursts"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_preset("hl205", {"hbm.scheduler=lottery"}); }).find("hbm.scheduler = 'lottery'"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_preset("hl205", {"hbm.refresh_mode=sometimes"}); }).find("hbm.refresh_mode"),
            std::string::npos);
  // The engines' queue and window sizes, the simulation quantum, the TDR and self-refresh.
  for (const char* field : {"tpc.launch_queue_depth", "tpc.max_posted_writes", "tpc.quantum_cycles",
                            "mme.max_posted_writes", "mme.launch_queue_depth", "driver.tdr_timeout_ms",
                            "nic.gbps_per_port", "nic.rx_buffer_packets", "nic.tx_window_packets", "nic.queue_depth"}) {
    const std::string message = error_of([&] { load_preset("hl205", {std::string(field) + "=0"}); });
    EXPECT_NE(message.find(field), std::string::npos) << field << ": " << message;
  }
  EXPECT_NE(error_of([] { load_preset("hl205", {"nic.mtu_bytes=100"}); }).find("nic.mtu_bytes must be between 256 and 65536"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_preset("hl205", {"mme.max_request_bytes=2"}); }).find("mme.max_request_bytes"),
            std::string::npos);
  for (const char* rate : {"mme.f32_array_cycles_per_k=0", "mme.f32_array_cycles_per_k=65"}) {
    EXPECT_NE(error_of([&] { load_preset("hl205", {rate}); }).find("mme.f32_array_cycles_per_k must be between 1 and 64"),
              std::string::npos) << rate;
  }
  EXPECT_NE(error_of([] { load_preset("hl205", {"hbm.self_refresh_after_refi=1"}); }).find("hbm.self_refresh_after_refi"),
            std::string::npos);
  // A generation 1 card is the Gaudi 1 engine map: more engines than it holds are refused.
  EXPECT_NE(error_of([] { load_preset("hl205", {"tpc.count=9"}); }).find("tpc.count = 9: a generation 1 card has at most 8 TPCs"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_preset("hl205", {"mme.cores=8", "mme.masters=3"}); }).find("mme.masters = 3"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_preset("hl205", {"dma.internal_channels=7"}); }).find("dma.pci_channels + dma.internal_channels = 9"),
            std::string::npos);
  EXPECT_NO_THROW(load_preset("hl225", {"tpc.count=24"}));
  EXPECT_NE(error_of([] { load_preset("hl205", {"nic.ports=11"}); }).find("nic.ports = 11: a generation 1 card has at most 10 NIC ports"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_preset("hl225", {"nic.ports=25"}); }).find("nic.ports = 25: the engine map holds at most 24 NIC ports"),
            std::string::npos);
  // The TPC's vector width: a power of two the executor and the kernel library take.
  for (const char* bad : {"tpc.vector_bits=768", "tpc.vector_bits=128", "tpc.vector_bits=32768"}) {
    EXPECT_NE(error_of([bad] { load_preset("hl205", {bad}); }).find("the TPC's vector width must be a power of two in 256 .. 16384 bits"),
              std::string::npos)
        << bad;
  }
  EXPECT_NO_THROW(load_preset("hl205", {"tpc.vector_bits=4096"}));
  // Local memories below what the kernel library's kernels use are refused, naming the field.
  EXPECT_NE(error_of([] { load_preset("hl205", {"tpc.vlm_bytes=65536"}); })
                .find("tpc.vlm_bytes = 65536: the kernel library's kernels are built for 80 KB of VLM"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_preset("hl205", {"tpc.slm_bytes=512"}); })
                .find("tpc.slm_bytes = 512: the kernel library's kernels use up to 1 KB of SLM"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_preset("hl205", {"tpc.vlm_bytes=90000"}); }).find("a multiple of the vector's bytes"),
            std::string::npos);
  const auto big = load_preset("hl205", {"tpc.vlm_bytes=131072", "tpc.slm_bytes=2048"});
  EXPECT_EQ(big.tpc().vlm_bytes(), 131072u);
}

TEST(Preset, UnknownPresetListsTheBuiltins) {
  std::string message = error_of([] { load_preset("hl999"); });
  EXPECT_NE(message.find("unknown preset 'hl999'"), std::string::npos) << message;
  EXPECT_NE(message.find("hl205, hl225, hl325"), std::string::npos) << message;
}

TEST(Preset, PresetFileSyntaxErrorNamesFileAndLine) {
  std::string path = write_temp("broken.textproto", "name: \"x\"\nhbm {\n  stacks: four\n}\n");
  std::string message = error_of([&] { load_preset(path); });
  EXPECT_NE(message.find(path + ":3:"), std::string::npos) << message;
}

TEST(Preset, PresetFileWithUnknownFieldIsRejected) {
  std::string path = write_temp("unknown.textproto", "name: \"x\"\nwarp_drive: 9\n");
  std::string message = error_of([&] { load_preset(path); });
  EXPECT_NE(message.find("warp_drive"), std::string::npos) << message;
}

TEST(Preset, IncompletePresetFileNamesTheMissingField) {
  Card card = load_preset("hl205");
  card.mutable_sram()->clear_banks();
  std::string path = write_temp("incomplete.textproto", to_text(card));
  std::string message = error_of([&] { load_preset(path); });
  EXPECT_NE(message.find("missing field sram.banks"), std::string::npos) << message;
}

// A preset file names a base and states only what differs; the base may itself have a base.
TEST(Preset, BaseProvidesEveryFieldTheFileDoesNotSet) {
  const std::string dir = ::testing::TempDir();
  write_temp("base_child.textproto",
             "base: \"hl205\"\nname: \"child\"\nhbm { queue_bursts: 400 }\nmme { geometries: \"64x64\" }\n");
  write_temp("base_grandchild.textproto", "base: \"base_child.textproto\"\nclocks { tpc_mhz: 1000 }\n");
  const Card hl205 = load_preset("hl205");
  const Card child = load_preset(dir + "base_child.textproto");
  EXPECT_EQ(child.name(), "child");
  EXPECT_FALSE(child.has_base());
  EXPECT_EQ(child.hbm().queue_bursts(), 400u);
  EXPECT_EQ(child.hbm().stacks(), hl205.hbm().stacks());           // from the base
  EXPECT_EQ(child.hbm().timing().name(), "HBM2-1760");               // resolved after merging
  ASSERT_EQ(child.mme().geometries_size(), 1);                       // a repeated field is replaced
  EXPECT_EQ(child.mme().geometries(0), "64x64");
  const Card grandchild = load_preset(dir + "base_grandchild.textproto", {"hbm.queue_bursts=384"});
  EXPECT_EQ(grandchild.name(), "child");                             // relative base path, two levels
  EXPECT_EQ(grandchild.clocks().tpc_mhz(), 1000u);
  EXPECT_EQ(grandchild.hbm().queue_bursts(), 384u);                  // overrides come last

  write_temp("base_loop_a.textproto", "base: \"base_loop_b.textproto\"\n");
  write_temp("base_loop_b.textproto", "base: \"base_loop_a.textproto\"\n");
  EXPECT_NE(error_of([&] { load_preset(dir + "base_loop_a.textproto"); }).find("is its own base"), std::string::npos);
  write_temp("base_missing.textproto", "base: \"hl999\"\n");
  EXPECT_NE(error_of([&] { load_preset(dir + "base_missing.textproto"); }).find("unknown preset 'hl999'"),
            std::string::npos);
  // The renamed queue fields are refused by name.
  write_temp("base_old_field.textproto", "base: \"hl205\"\nhbm { queue_depth: 64 }\n");
  EXPECT_NE(error_of([&] { load_preset(dir + "base_old_field.textproto"); }).find("queue_depth"), std::string::npos);
}

// The DRAMsim3 validation preset is an hl205 with only its HBM replaced.
TEST(Preset, Dramsim3PresetIsHl205WithDramsim3Memory) {
  const Card card = load_preset("dramsim3-hbm2");
  const Card hl205 = load_preset("hl205");
  EXPECT_EQ(card.hbm().stacks() * card.hbm().channels_per_stack(), 8u);
  EXPECT_EQ(card.hbm().timing().name(), "DRAMsim3-HBM2_8Gb_x128");
  EXPECT_EQ(card.hbm().timing().tck_ps(), 1000u);
  EXPECT_EQ(card.tpc().count(), hl205.tpc().count());
  EXPECT_EQ(card.memory_map().DebugString(), hl205.memory_map().DebugString());
}

TEST(Preset, TextRenderingRoundTrips) {
  Card card = load_preset("hl225", {"hbm.queue_bursts=384"});
  std::string path = write_temp("roundtrip.textproto", to_text(card));
  Card again = load_preset(path);
  EXPECT_EQ(to_text(again), to_text(card));
}

}  // namespace
}  // namespace hpusim::preset
