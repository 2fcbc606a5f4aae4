// Our own main() in an object file: libsystemc.so also defines main(), and an object always wins
// over a library, so test binaries never silently run SystemC's main instead of GoogleTest's.
#include <gtest/gtest.h>

// SystemC declares sc_main with C linkage.
extern "C" int sc_main(int, char**) { return 0; }

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
