// JEDEC-style timing sets used by the HBM tests (and, later, by the card presets).
// Every n* value is in cycles of tCK.
#pragma once

#include <vector>

#include "hw/hbm/hbm_config.h"

namespace hpusim::hbm::testing {

inline Timing hbm2_1760() {
  Timing t;
  t.name = "HBM2-1760";
  t.tck_ps = 1136;
  t.burst_bytes = 32;
  t.nBL = 2;
  t.nCL = 14;
  t.nCWL = 4;
  t.nRCDRD = 14;
  t.nRCDWR = 10;
  t.nRP = 14;
  t.nRAS = 33;
  t.nRC = 47;
  t.nWR = 16;
  t.nRTP = 5;
  t.nCCDS = 2;
  t.nCCDL = 4;
  t.nRRDS = 4;
  t.nRRDL = 6;
  t.nFAW = 30;
  t.nWTRS = 6;
  t.nWTRL = 8;
  t.nRTW = 18;
  t.nRFC = 260;
  t.nREFI = 3432;  // 3.9 us
  t.nRFCSB = 141;  // 160 ns
  t.nRREFD = 8;
  return t;
}

inline Timing hbm2e_3200() {
  Timing t;
  t.name = "HBM2E-3200";
  t.tck_ps = 625;
  t.burst_bytes = 32;
  t.nBL = 2;
  t.nCL = 24;
  t.nCWL = 7;
  t.nRCDRD = 23;
  t.nRCDWR = 16;
  t.nRP = 23;
  t.nRAS = 53;
  t.nRC = 76;
  t.nWR = 26;
  t.nRTP = 8;
  t.nCCDS = 2;
  t.nCCDL = 4;
  t.nRRDS = 4;
  t.nRRDL = 8;
  t.nFAW = 32;
  t.nWTRS = 5;
  t.nWTRL = 13;
  t.nRTW = 28;
  t.nRFC = 560;
  t.nREFI = 6240;  // 3.9 us
  t.nRFCSB = 320;  // 200 ns
  t.nRREFD = 13;
  return t;
}

inline Timing hbm3_6400() {
  Timing t;
  t.name = "HBM3-6400";
  t.tck_ps = 625;
  t.burst_bytes = 32;
  t.nBL = 2;
  t.nCL = 20;
  t.nCWL = 10;
  t.nRCDRD = 31;
  t.nRCDWR = 15;
  t.nRP = 26;
  t.nRAS = 45;
  t.nRC = 72;
  t.nWR = 33;
  t.nRTP = 9;
  t.nCCDS = 2;
  t.nCCDL = 4;
  t.nRRDS = 4;
  t.nRRDL = 5;
  t.nFAW = 24;
  t.nWTRS = 7;
  t.nWTRL = 10;
  t.nRTW = 20;
  t.nRFC = 560;
  t.nREFI = 6240;  // 3.9 us
  t.nRFCSB = 320;  // 200 ns
  t.nRREFD = 13;
  return t;
}

// Not a real part: every parameter (and every derived distance such as nCWL+nBL+nWR) has its own
// value, and nRC > nRAS + nRP, so a gate test that uses the wrong parameter fails.
inline Timing distinct_timing() {
  Timing t;
  t.name = "Distinct";
  t.tck_ps = 1000;
  t.burst_bytes = 32;
  t.nBL = 2;
  t.nCL = 17;
  t.nCWL = 5;
  t.nRCDRD = 19;
  t.nRCDWR = 14;
  t.nRP = 11;
  t.nRAS = 29;
  t.nRC = 44;
  t.nWR = 23;
  t.nRTP = 7;
  t.nCCDS = 3;
  t.nCCDL = 6;
  t.nRRDS = 4;
  t.nRRDL = 9;
  t.nFAW = 37;
  t.nWTRS = 8;
  t.nWTRL = 13;
  t.nRTW = 21;
  t.nRFC = 101;
  t.nREFI = 4001;
  t.nRFCSB = 53;
  t.nRREFD = 10;
  return t;
}

inline std::vector<Timing> standard_timing_sets() { return {hbm2_1760(), hbm2e_3200(), hbm3_6400()}; }

}  // namespace hpusim::hbm::testing
