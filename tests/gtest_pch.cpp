// The translation unit that compiles GoogleTest's header once for every
// test program (rma_gtest_pch in tests/CMakeLists.txt); nothing else.
