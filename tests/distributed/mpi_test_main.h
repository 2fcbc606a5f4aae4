// main() of a gtest program run as `mpirun -np N`: MPI for the test and the simulation thread
// (MPI_THREAD_SERIALIZED: a platform's simulation thread uses it too), the results printed by rank
// 0, and the exit code failing on every rank if any rank failed. Include it once, in the file that
// has the program's tests.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

// SystemC declares sc_main with C linkage; this program's main() drives the simulation.
extern "C" int sc_main(int, char**) { return 0; }

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {   // one rank prints the results
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int failed = RUN_ALL_TESTS();
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
