// `hpusim report correlation --quick` as a user runs it: the table, the JSON, and each quick row's
// value and verdict against tests/golden/correlation_quick.txt (a change there must be explained).
#include <gtest/gtest.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <cmath>
#include <string>

#include "tests/cli/program_run.h"
#include "tests/support/golden.h"

namespace {

TEST(ReportCorrelation, QuickRowsMatchTheirGoldenValuesAndVerdicts) {
  const std::string json = ::testing::TempDir() + "hpusim_correlation.json";
  const auto r = hpusim::cli_testing::run_hpusim("report correlation --quick --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("measured rows within tolerance"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("allreduce.hls2.32mib"), std::string::npos) << r.output;

  boost::property_tree::ptree rows;
  boost::property_tree::read_json(json, rows);
  hpusim::testing::GoldenFile golden("correlation_quick.txt");
  int quick = 0;
  for (const auto& [key, row] : rows) {
    for (const char* field : {"id", "quantity", "unit", "published", "source", "comparison", "tolerance_pct"}) {
      EXPECT_TRUE(row.get_child_optional(field)) << "missing " << field;
    }
    const std::string id = row.get<std::string>("id");
    if (!row.get<bool>("quick")) {
      EXPECT_FALSE(row.get<bool>("measured")) << id << ": only quick rows run with --quick";
      continue;
    }
    ++quick;
    ASSERT_TRUE(row.get<bool>("measured")) << id;
    const double value = row.get<double>("hpusim");
    const double error = row.get<double>("error_pct");
    EXPECT_NEAR(error, 100.0 * (value - row.get<double>("published")) / row.get<double>("published"), 1e-6) << id;
    golden.check(id + ".hpusim_x100", static_cast<uint64_t>(std::llround(value * 100)));
    golden.check(id + ".pass", row.get<bool>("pass") ? 1 : 0);
  }
  EXPECT_GE(quick, 10);
}

}  // namespace
