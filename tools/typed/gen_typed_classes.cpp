// Writes core/include/attention_lab/typed_classes.hpp from the recipe list (see render_typed_classes.hpp).
// Usage: attention_lab_typed_classes <path>   (or no argument: the text on stdout)
#include <cstdio>

#include "render_typed_classes.hpp"

int main(int argc, char** argv) {
  const std::string text = attention_lab::tools::render_typed_classes();
  std::FILE* out = argc > 1 ? std::fopen(argv[1], "wb") : stdout;
  if (out == nullptr) {
    std::fprintf(stderr, "cannot write %s\n", argv[1]);
    return 1;
  }
  std::fwrite(text.data(), 1, text.size(), out);
  if (out != stdout) std::fclose(out);
  return 0;
}
