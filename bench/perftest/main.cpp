// main() of the six perftest-compatible tools; RMA_PERFTEST_TOOL names the
// rma::perftest::Tool (kWriteBw, kReadBw, kAtomicBw, kWriteLat, kReadLat, kAtomicLat).
#include "session.hpp"

#ifndef RMA_PERFTEST_TOOL
#error "RMA_PERFTEST_TOOL must name the tool"
#endif

int main(int argc, char** argv) { return rma::perftest::run_tool(rma::perftest::RMA_PERFTEST_TOOL, argc, argv); }
