# Included by ctest after the gtest discovery of this directory (see
# CMakeLists.txt): every test here is multi-process; the 100,000-operation
# run is a soak, the peer-kill test takes seconds (unit).
set_tests_properties(SoftroceMemifTwoProcesses.MixedOperationsBothDirectionsVerified
  PROPERTIES LABELS "soak;multiprocess")
set_tests_properties(SoftroceMemifTwoProcesses.PeerKilledMidFlowGivesErrorCompletions
  PROPERTIES LABELS "unit;multiprocess" TIMEOUT 120)
