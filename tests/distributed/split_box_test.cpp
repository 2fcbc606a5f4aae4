// A box split between the processes of an MPI run (`mpirun -np N hpusim bench collectives --mpi`)
// gives every card the device times of the same box in one process, to the nanosecond, for every
// collective; a split that cannot be made ends every process with the reason.
#include <gtest/gtest.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "tests/cli/program_run.h"

namespace hpusim::testing {
namespace {

using cli_testing::ProgramRun;
using cli_testing::run_hpusim;

// mpirun as CI runs it: as root in a container, two cores, shared memory between the ranks.
const std::string kMpiEnvironment =
    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1";

ProgramRun run_mpi(int processes, const std::string& args) {
  const std::string mpirun = std::string(HPUSIM_MPIEXEC) + " -np " + std::to_string(processes) + " --oversubscribe";
  return run_hpusim(args, kMpiEnvironment + " " + mpirun);
}

std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("hpusim_split_" + std::to_string(::getpid()) + "_" + name)).string();
}

// Per row: the collective, its size and each card's device time of the timed calls.
std::vector<std::string> rows_of(const std::string& json) {
  boost::property_tree::ptree rows;
  boost::property_tree::read_json(json, rows);
  std::vector<std::string> out;
  for (const auto& [key, row] : rows) {
    std::string text = row.get<std::string>("collective") + " " + row.get<std::string>("bytes") + ":";
    for (const auto& [k, t] : row.get_child("rank_time_ns")) text += " " + t.get_value<std::string>();
    out.push_back(text);
  }
  return out;
}

TEST(SplitBox, EveryCardHasTheDeviceTimesOfTheOneProcessRun) {
  const std::string args = "bench collectives --box hls2 --cards 4 --sizes 64K,1M --collectives "
                           "all_reduce,all_gather,reduce_scatter,broadcast,reduce,all_to_all --dtype bf16";
  const std::string one = temp("one.json"), two = temp("two.json");
  const ProgramRun alone = run_hpusim(args + " --json " + one);
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  const ProgramRun split = run_mpi(2, args + " --mpi --json " + two);
  ASSERT_EQ(split.exit_code, 0) << split.output;
  EXPECT_NE(split.output.find("4 x hl225 in 2 processes"), std::string::npos) << split.output;
  EXPECT_NE(split.output.find("process 1 (cards 2 .. 3): "), std::string::npos) << split.output;
  const std::vector<std::string> expected = rows_of(one), got = rows_of(two);
  ASSERT_EQ(expected.size(), 12u);
  EXPECT_EQ(got, expected);
  std::filesystem::remove(one);
  std::filesystem::remove(two);
}

// Two boxes of two cards joined rail by rail, one box per process: the rail stages of HCCL's
// hierarchical collectives cross the processes.
TEST(SplitBox, BoxesJoinedRailByRailInTwoProcessesHaveTheOneProcessTimes) {
  const std::string box = temp("two_by_two.textproto");
  {
    std::ofstream out(box);
    // Two boxes of two hl225 (3 links a pair), joined rail by rail (3 links a rail pair). At 8 MiB
    // the hierarchical all_reduce runs as 4 slice groups pipelined through its three stages.
    out << "name: \"two_by_two\" card: \"hl225\" cards: 4\n";
    for (const auto& [a, b, ports] : {std::tuple{0, 1, "13 14 15"}, {2, 3, "13 14 15"}, {0, 2, "8 22 23"}, {1, 3, "8 22 23"}}) {
      std::istringstream list(ports);
      for (int port; list >> port;) {
        out << "link { a { card: " << a << " port: " << port << " } b { card: " << b << " port: " << port << " } }\n";
      }
    }
  }
  const std::string one = temp("rails_one.json"), two = temp("rails_two.json");
  // all_reduce in 4 slice groups; the other collectives' stages in 2 (reduce_scatter, all_gather,
  // broadcast, reduce) or one after the other (all_to_all).
  for (const auto& [sizes, collectives, rows] :
       {std::tuple{"64K,8M", "all_reduce", 2u}, {"4M", "reduce_scatter,all_gather,broadcast,reduce,all_to_all", 5u}}) {
    const std::string args = "bench collectives --box " + box + " --sizes " + sizes + " --collectives " + collectives;
    const ProgramRun alone = run_hpusim(args + " --json " + one);
    ASSERT_EQ(alone.exit_code, 0) << alone.output;
    EXPECT_NE(alone.output.find("boxes of 2 joined rail by rail (3 links a rail pair)"), std::string::npos) << alone.output;
    const ProgramRun split = run_mpi(2, args + " --mpi --json " + two);
    ASSERT_EQ(split.exit_code, 0) << split.output;
    const std::vector<std::string> expected = rows_of(one), got = rows_of(two);
    ASSERT_EQ(expected.size(), rows) << collectives;
    EXPECT_EQ(got, expected) << collectives;
  }
  for (const std::string& f : {box, one, two}) std::filesystem::remove(f);
}

TEST(SplitBox, MoreProcessesThanCardsEndsTheRunWithTheReason) {
  const ProgramRun r = run_mpi(3, "bench collectives --box hls1 --cards 2 --sizes 64K --mpi");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("3 processes share a box of 2 cards (at most one process per card)"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace hpusim::testing
