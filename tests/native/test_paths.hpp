#pragma once
// Where the suite finds the files it reads, set by CMakeLists.txt on test_paths.cpp alone.
namespace attention_lab::test_paths {
/// tests/fixtures of this checkout (the PyTorch fixtures, checkpoints, bad inputs).
extern const char* const fixtures;
/// core/ of this checkout (error_codes_test.cpp reads the codes its sources mint).
extern const char* const core;
}  // namespace attention_lab::test_paths
