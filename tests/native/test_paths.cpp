#include "test_paths.hpp"

namespace attention_lab::test_paths {
const char* const fixtures = ATTENTION_LAB_FIXTURES;
const char* const core = ATTENTION_LAB_CORE_DIR;
}  // namespace attention_lab::test_paths
