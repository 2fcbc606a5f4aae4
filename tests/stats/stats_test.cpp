// Boost.PropertyTree pulls in boost/bind.hpp, which otherwise prints a deprecation pragma.
#define BOOST_BIND_GLOBAL_PLACEHOLDERS
#include "sim/stats/stats.h"

#include <gtest/gtest.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using hpusim::stats::Counter;
using hpusim::stats::path_component;
using hpusim::stats::Distribution;
using hpusim::stats::Kind;
using hpusim::stats::Registry;
using hpusim::stats::Scope;
namespace pt = boost::property_tree;

std::string json_of(const Registry& r) {
  std::ostringstream os;
  r.write_json(os);
  return os.str();
}

std::string text_of(const Registry& r) {
  std::ostringstream os;
  r.write_text(os);
  return os.str();
}

pt::ptree parse_json(const std::string& s) {
  std::istringstream is(s);
  pt::ptree tree;
  pt::read_json(is, tree);
  return tree;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream is(s);
  std::string line;
  while (std::getline(is, line)) out.push_back(line);
  return out;
}

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no std::invalid_argument thrown>";
}

// Builds the same small registry for several tests.
struct Sample {
  Registry reg;
  Counter& acts = reg.counter("hbm.ch3.activates", "count", "ACT commands issued");
  Counter& bytes = reg.counter("hbm.ch3.read_bytes", "bytes", "bytes read");
  hpusim::stats::Scalar& bw = reg.scalar("hbm.bandwidth", "GB/s", "achieved bandwidth");
  Distribution& lat = reg.distribution("hbm.ch3.read_latency", "ns", "read latency");
  Counter& busy = reg.counter("tpc0.busy_cycles", "cycles", "cycles with a kernel running");
  Counter& elapsed = reg.counter("tpc0.elapsed_cycles", "cycles", "cycles in the window");

  Sample() {
    reg.formula("tpc0.utilization", "%", "busy / elapsed", [this] {
      return elapsed.value() ? 100.0 * static_cast<double>(busy.value()) /
                                   static_cast<double>(elapsed.value())
                             : 0.0;
    });
    acts.add(1234);
    bytes += 4096;
    bw.set(123.456789);
    for (int v : {40, 10, 30, 20, 50}) lat.sample(v);
    busy.add(750);
    elapsed.add(1000);
  }
};

TEST(Stats, RegisterAndUpdateThroughHandles) {
  Registry reg;
  Counter& c = reg.counter("dma.ch0.bytes", "bytes", "bytes copied");
  EXPECT_EQ(c.name(), "dma.ch0.bytes");
  EXPECT_EQ(c.unit(), "bytes");
  EXPECT_EQ(c.desc(), "bytes copied");
  EXPECT_EQ(c.kind(), Kind::kCounter);
  // Handles stay valid while many more statistics are registered.
  for (int i = 0; i < 1000; ++i) {
    reg.counter("dma.ch" + std::to_string(i + 1) + ".bytes", "bytes", "bytes copied");
  }
  c.inc();
  ++c;
  c.add(40);
  c += 58;
  EXPECT_EQ(c.value(), 100u);
  ASSERT_NE(reg.find_counter("dma.ch0.bytes"), nullptr);
  EXPECT_EQ(reg.find_counter("dma.ch0.bytes")->value(), 100u);
  EXPECT_EQ(reg.find_counter("dma.ch0.bytes"), &c);
  EXPECT_EQ(reg.find_scalar("dma.ch0.bytes"), nullptr);  // wrong kind
  EXPECT_EQ(reg.find("dma.nope"), nullptr);
  EXPECT_EQ(reg.size(), 1001u);

  auto& s = reg.scalar("sim.speed", "GB/s", "simulated bandwidth");
  s.set(2.5);
  s.add(0.25);
  EXPECT_DOUBLE_EQ(s.value(), 2.75);
  EXPECT_EQ(reg.find("sim.speed")->unit(), "GB/s");
  EXPECT_EQ(reg.find("sim.speed")->kind(), Kind::kScalar);

  // Moving the registry keeps handles valid.
  Registry moved = std::move(reg);
  c.inc();
  EXPECT_EQ(moved.find_counter("dma.ch0.bytes")->value(), 101u);
}

TEST(Stats, ScopesPrefixNames) {
  Registry reg;
  Scope hbm = reg.scope("hbm");
  Scope ch3 = hbm.scope("ch3");
  auto& acts = ch3.counter("activates", "count", "ACT commands");
  auto& lat = ch3.distribution("latency", "ns", "latency");
  auto& s = hbm.scalar("temp", "C", "temperature");
  auto& f = ch3.formula("twice", "count", "2 * activates", [&] { return 2.0 * acts.value(); });
  EXPECT_EQ(acts.name(), "hbm.ch3.activates");
  EXPECT_EQ(lat.name(), "hbm.ch3.latency");
  EXPECT_EQ(s.name(), "hbm.temp");
  EXPECT_EQ(f.name(), "hbm.ch3.twice");
  EXPECT_EQ(ch3.prefix(), "hbm.ch3");
  EXPECT_THROW(reg.scope("Bad"), std::invalid_argument);
  EXPECT_THROW(ch3.counter("x-y", "count", ""), std::invalid_argument);
}

TEST(Stats, DuplicateNamesRejectedNamingThem) {
  Registry reg;
  reg.counter("hbm.ch0.reads", "count", "reads");
  std::string msg = message_of([&] { reg.scalar("hbm.ch0.reads", "count", "again"); });
  EXPECT_NE(msg.find("hbm.ch0.reads"), std::string::npos) << msg;
  EXPECT_NE(msg.find("duplicate"), std::string::npos) << msg;
  // A name cannot be both a value and a group.
  msg = message_of([&] { reg.counter("hbm.ch0", "count", ""); });
  EXPECT_NE(msg.find("hbm.ch0"), std::string::npos) << msg;
  msg = message_of([&] { reg.counter("hbm.ch0.reads.rank0", "count", ""); });
  EXPECT_NE(msg.find("hbm.ch0.reads.rank0"), std::string::npos) << msg;
  // Rejections leave the registry unchanged; similar names that are not groups are fine.
  EXPECT_EQ(reg.size(), 1u);
  EXPECT_NO_THROW(reg.counter("hbm.ch0.reads_total", "count", ""));
  EXPECT_NO_THROW(reg.counter("hbm.ch00", "count", ""));
}

TEST(Stats, BadNamesUnitsAndDescriptionsRejected) {
  Registry reg;
  for (const std::string& bad :
       {std::string(""), std::string("."), std::string(".a"), std::string("a."),
        std::string("a..b"), std::string("Hbm.ch0"), std::string("hbm-ch0"),
        std::string("hbm ch0"), std::string("hbm/ch0"), std::string("hbm.ch0.\xc3\xa9")}) {
    std::string msg = message_of([&] { reg.counter(bad, "count", "x"); });
    EXPECT_NE(msg.find("\"" + bad + "\""), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(reg.counter("a", "count", ""));
  EXPECT_NO_THROW(reg.counter("x0.y_1.z__9", "count", ""));
  EXPECT_NO_THROW(reg.counter("0.1", "count", ""));
  EXPECT_THROW(reg.counter("u1", "", "no unit"), std::invalid_argument);
  EXPECT_THROW(reg.counter("u2", "per second", "space"), std::invalid_argument);
  EXPECT_THROW(reg.counter("u3", "ns", "two\nlines"), std::invalid_argument);
  EXPECT_THROW(reg.formula("u4", "ns", "no callback", nullptr), std::invalid_argument);
  EXPECT_EQ(reg.size(), 3u);
  const std::pair<const char*, const char*> units[] = {{"count", "count"}, {"bytes", "bytes"},
                                                       {"ns", "ns"},       {"cycles", "cycles"},
                                                       {"gbs", "GB/s"},    {"pct", "%"}};
  for (const auto& [name, unit] : units) {
    EXPECT_NO_THROW(reg.scalar(std::string("unit.") + name, unit, "ok"));
    EXPECT_EQ(reg.find(std::string("unit.") + name)->unit(), unit);
  }
}

TEST(Stats, DistributionMatchesHandComputedReference) {
  Registry reg;
  Distribution& d = reg.distribution("lat", "ns", "latency");
  // Empty: everything reports 0.
  EXPECT_EQ(d.count(), 0u);
  EXPECT_EQ(d.min(), 0.0);
  EXPECT_EQ(d.mean(), 0.0);
  EXPECT_EQ(d.p99(), 0.0);

  // 5, 1, 3, 2, 4: sorted 1 2 3 4 5; nearest rank p50 -> rank ceil(2.5) = 3 -> 3,
  // p99 -> rank ceil(4.95) = 5 -> 5, p20 -> rank 1 -> 1, p21 -> rank ceil(1.05) = 2 -> 2.
  for (int v : {5, 1, 3, 2, 4}) d.sample(v);
  EXPECT_EQ(d.count(), 5u);
  EXPECT_EQ(d.min(), 1.0);
  EXPECT_EQ(d.max(), 5.0);
  EXPECT_EQ(d.mean(), 3.0);
  EXPECT_EQ(d.p50(), 3.0);
  EXPECT_EQ(d.p99(), 5.0);
  EXPECT_EQ(d.percentile(20), 1.0);
  EXPECT_EQ(d.percentile(21), 2.0);
  EXPECT_EQ(d.percentile(0), 1.0);
  EXPECT_EQ(d.percentile(100), 5.0);
  EXPECT_THROW(d.percentile(101), std::invalid_argument);
  EXPECT_THROW(d.percentile(-1), std::invalid_argument);

  // 1..100 shuffled: p50 = 50, p99 = 99, mean 50.5.
  d.reset();
  std::vector<uint64_t> v(100);
  for (uint64_t i = 0; i < 100; ++i) v[i] = i + 1;
  std::shuffle(v.begin(), v.end(), std::mt19937_64(1));
  for (uint64_t x : v) d.sample(x);
  EXPECT_EQ(d.count(), 100u);
  EXPECT_EQ(d.p50(), 50.0);
  EXPECT_EQ(d.p99(), 99.0);
  EXPECT_EQ(d.percentile(90), 90.0);
  EXPECT_EQ(d.mean(), 50.5);
  EXPECT_EQ(d.sum(), 5050.0);

  // Duplicates, a long tail, negatives and fractions.
  d.reset();
  for (double x : {10.0, 10.0, 10.0, 20.0, 1000.0}) d.sample(x);
  EXPECT_EQ(d.p50(), 10.0);
  EXPECT_EQ(d.percentile(80), 20.0);
  EXPECT_EQ(d.p99(), 1000.0);
  EXPECT_EQ(d.mean(), 210.0);
  d.reset();
  for (double x : {3.0, -2.5, 0.5, 0.0, -1.0}) d.sample(x);
  EXPECT_EQ(d.min(), -2.5);
  EXPECT_EQ(d.p50(), 0.0);
  EXPECT_EQ(d.percentile(40), -1.0);
  EXPECT_EQ(d.percentile(60), 0.0);
  EXPECT_EQ(d.percentile(80), 0.5);
  EXPECT_EQ(d.p99(), 3.0);

  EXPECT_THROW(d.sample(std::nan("")), std::invalid_argument);
  EXPECT_THROW(d.sample(HUGE_VAL), std::invalid_argument);
  EXPECT_EQ(d.count(), 5u);
}

TEST(Stats, DistributionPercentilesOfWideRangeWithinStatedBound) {
  Distribution d("x", "cycles", "");
  std::vector<double> samples;
  std::mt19937_64 rng(123);
  std::lognormal_distribution<double> dist(8.0, 2.0);
  for (int i = 0; i < 100000; ++i) {
    double x = std::floor(dist(rng));
    samples.push_back(x);
    d.sample(x);
  }
  std::sort(samples.begin(), samples.end());
  for (double p : {1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9}) {
    auto rank = static_cast<std::size_t>(std::ceil(p * samples.size() / 100.0));
    double exact = samples[rank - 1];
    EXPECT_NEAR(d.percentile(p), exact, exact * (1.0 / 256) + 1e-9) << "p" << p;
  }
  EXPECT_EQ(d.min(), samples.front());
  EXPECT_EQ(d.max(), samples.back());
  // Integers below 512 are exact.
  Distribution small("y", "cycles", "");
  for (int i = 0; i < 1000; ++i) small.sample(static_cast<uint32_t>(i % 500));
  EXPECT_EQ(small.p50(), 249.0);
  EXPECT_EQ(small.p99(), 494.0);
}

TEST(Stats, FormulaEvaluatedAtDumpTime) {
  Sample s;
  const auto* f = s.reg.find_formula("tpc0.utilization");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->kind(), Kind::kFormula);
  EXPECT_DOUBLE_EQ(f->value(), 75.0);
  s.busy.add(250);
  EXPECT_DOUBLE_EQ(f->value(), 100.0);
  EXPECT_NE(text_of(s.reg).find("tpc0.utilization 100 % # busy / elapsed\n"), std::string::npos);
  // A formula can produce a non-finite value: JSON null, text "nan".
  Registry reg;
  reg.formula("ratio", "%", "0/0", [] { return std::nan(""); });
  EXPECT_EQ(text_of(reg), "ratio nan % # 0/0\n");
  pt::ptree tree = parse_json(json_of(reg));
  EXPECT_EQ(tree.get<std::string>("ratio.value"), "null");
}

TEST(Stats, JsonParsesAndHoldsValues) {
  Sample s;
  std::string json = json_of(s.reg);
  pt::ptree tree = parse_json(json);
  EXPECT_EQ(tree.get<uint64_t>("hbm.ch3.activates.value"), 1234u);
  EXPECT_EQ(tree.get<std::string>("hbm.ch3.activates.unit"), "count");
  EXPECT_EQ(tree.get<std::string>("hbm.ch3.activates.desc"), "ACT commands issued");
  EXPECT_EQ(tree.get<std::string>("hbm.ch3.activates.kind"), "counter");
  EXPECT_EQ(tree.get<uint64_t>("hbm.ch3.read_bytes.value"), 4096u);
  EXPECT_EQ(tree.get<std::string>("hbm.ch3.read_bytes.unit"), "bytes");
  EXPECT_DOUBLE_EQ(tree.get<double>("hbm.bandwidth.value"), 123.457);  // %.6g
  EXPECT_EQ(tree.get<std::string>("hbm.bandwidth.unit"), "GB/s");
  EXPECT_EQ(tree.get<std::string>("hbm.ch3.read_latency.kind"), "distribution");
  EXPECT_EQ(tree.get<uint64_t>("hbm.ch3.read_latency.count"), 5u);
  EXPECT_EQ(tree.get<double>("hbm.ch3.read_latency.min"), 10.0);
  EXPECT_EQ(tree.get<double>("hbm.ch3.read_latency.max"), 50.0);
  EXPECT_EQ(tree.get<double>("hbm.ch3.read_latency.mean"), 30.0);
  EXPECT_EQ(tree.get<double>("hbm.ch3.read_latency.p50"), 30.0);
  EXPECT_EQ(tree.get<double>("hbm.ch3.read_latency.p99"), 50.0);
  EXPECT_EQ(tree.get<std::string>("hbm.ch3.read_latency.unit"), "ns");
  EXPECT_DOUBLE_EQ(tree.get<double>("tpc0.utilization.value"), 75.0);
  EXPECT_EQ(tree.get<std::string>("tpc0.utilization.unit"), "%");
  EXPECT_EQ(tree.get<std::string>("tpc0.utilization.kind"), "formula");
  // Nesting: hbm has exactly its two children, ch3 holds three statistics.
  EXPECT_EQ(tree.size(), 2u);
  EXPECT_EQ(tree.get_child("hbm").size(), 2u);
  EXPECT_EQ(tree.get_child("hbm.ch3").size(), 3u);

  // Strings that need escaping round-trip.
  Registry reg;
  reg.counter("q", "count", "a \"quoted\" \\ desc");
  EXPECT_EQ(parse_json(json_of(reg)).get<std::string>("q.desc"), "a \"quoted\" \\ desc");
  // Empty registry.
  Registry empty;
  EXPECT_EQ(json_of(empty), "{}\n");
  EXPECT_TRUE(parse_json(json_of(empty)).empty());
}

TEST(Stats, JsonLayoutIsFixed) {
  Registry reg;
  reg.counter("a.x", "count", "ax").add(3);
  reg.scalar("a.b.y", "ns", "").set(0.5);
  reg.counter("c", "bytes", "c");
  EXPECT_EQ(json_of(reg),
            "{\n"
            "  \"a\": {\n"
            "    \"b\": {\n"
            "      \"y\": {\"kind\": \"scalar\", \"value\": 0.5, \"unit\": \"ns\", \"desc\": \"\"}\n"
            "    },\n"
            "    \"x\": {\"kind\": \"counter\", \"value\": 3, \"unit\": \"count\", \"desc\": \"ax\"}\n"
            "  },\n"
            "  \"c\": {\"kind\": \"counter\", \"value\": 0, \"unit\": \"bytes\", \"desc\": \"c\"}\n"
            "}\n");
}

TEST(Stats, TextSortedAndStable) {
  Sample s;
  std::string text = text_of(s.reg);
  EXPECT_EQ(text,
            "hbm.bandwidth 123.457 GB/s # achieved bandwidth\n"
            "hbm.ch3.activates 1234 count # ACT commands issued\n"
            "hbm.ch3.read_bytes 4096 bytes # bytes read\n"
            "hbm.ch3.read_latency.count 5 count # read latency (count)\n"
            "hbm.ch3.read_latency.max 50 ns # read latency (max)\n"
            "hbm.ch3.read_latency.mean 30 ns # read latency (mean)\n"
            "hbm.ch3.read_latency.min 10 ns # read latency (min)\n"
            "hbm.ch3.read_latency.p50 30 ns # read latency (p50)\n"
            "hbm.ch3.read_latency.p99 50 ns # read latency (p99)\n"
            "tpc0.busy_cycles 750 cycles # cycles with a kernel running\n"
            "tpc0.elapsed_cycles 1000 cycles # cycles in the window\n"
            "tpc0.utilization 75 % # busy / elapsed\n");
  std::vector<std::string> lines = lines_of(text);
  std::vector<std::string> names;
  for (const auto& l : lines) names.push_back(l.substr(0, l.find(' ')));
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));

  // Registration order does not matter; identical runs give identical bytes.
  Registry a, b;
  std::vector<std::string> order = {"z.q", "a_b.c", "a.b", "a0", "m.n.o", "m.n_p"};
  for (std::size_t i = 0; i < order.size(); ++i) a.counter(order[i], "count", "d").add(i);
  for (std::size_t i = order.size(); i-- > 0;) b.counter(order[i], "count", "d").add(i);
  EXPECT_EQ(text_of(a), text_of(b));
  EXPECT_EQ(json_of(a), json_of(b));
  lines = lines_of(text_of(a));
  EXPECT_TRUE(std::is_sorted(lines.begin(), lines.end()));
}

TEST(Stats, DoubleFormatting) {
  using hpusim::stats::format_double;
  EXPECT_EQ(format_double(0.0), "0");
  EXPECT_EQ(format_double(-0.0), "0");
  EXPECT_EQ(format_double(2.5), "2.5");
  EXPECT_EQ(format_double(0.1), "0.1");
  EXPECT_EQ(format_double(1.0 / 3.0), "0.333333");
  EXPECT_EQ(format_double(1234567.0), "1.23457e+06");
  EXPECT_EQ(format_double(123456.0), "123456");
  EXPECT_EQ(format_double(1e-7), "1e-07");
  EXPECT_EQ(format_double(-42.0), "-42");
  EXPECT_EQ(format_double(std::nan("")), "nan");
  EXPECT_EQ(format_double(-HUGE_VAL), "-inf");
}

TEST(Stats, ResetZeroesEveryValue) {
  Sample s;
  s.reg.reset();
  EXPECT_EQ(s.acts.value(), 0u);
  EXPECT_EQ(s.bytes.value(), 0u);
  EXPECT_EQ(s.bw.value(), 0.0);
  EXPECT_EQ(s.lat.count(), 0u);
  EXPECT_EQ(s.lat.p99(), 0.0);
  EXPECT_EQ(s.reg.find_formula("tpc0.utilization")->value(), 0.0);  // derived from reset values
  // Counting resumes in the new window.
  s.lat.sample(7);
  s.acts.inc();
  s.busy.add(1);
  s.elapsed.add(4);
  pt::ptree tree = parse_json(json_of(s.reg));
  EXPECT_EQ(tree.get<uint64_t>("hbm.ch3.activates.value"), 1u);
  EXPECT_EQ(tree.get<double>("hbm.ch3.read_latency.p50"), 7.0);
  EXPECT_EQ(tree.get<double>("tpc0.utilization.value"), 25.0);
}

TEST(Stats, FileHelpers) {
  Sample s;
  const std::string dir = ::testing::TempDir();
  const std::string json_path = dir + "/hpusim_stats_test.json";
  const std::string text_path = dir + "/hpusim_stats_test.txt";
  s.reg.write_json_file(json_path);
  s.reg.write_text_file(text_path);
  auto slurp = [](const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    std::ostringstream os;
    os << f.rdbuf();
    return os.str();
  };
  EXPECT_EQ(slurp(json_path), json_of(s.reg));
  EXPECT_EQ(slurp(text_path), text_of(s.reg));
  std::remove(json_path.c_str());
  std::remove(text_path.c_str());

  const std::string bad = "/nonexistent_hpusim_dir/stats.json";
  try {
    s.reg.write_json_file(bad);
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
  try {
    s.reg.write_text_file("/nonexistent_hpusim_dir/stats.txt");
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent_hpusim_dir/stats.txt"), std::string::npos);
  }
}

TEST(StatsPath, BlockNamesBecomeLowerCaseComponents) {
  EXPECT_EQ(path_component("DMA0_QM"), "dma0_qm");
  EXPECT_EQ(path_component("E_N"), "e_n");
  EXPECT_EQ(path_component("mme0 rd.1"), "mme0_rd_1");
  EXPECT_EQ(path_component(""), "");
}

}  // namespace
