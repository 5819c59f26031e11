# Sourced by the build and test scripts: the environment every compile runs in.
# - Emscripten 3.1.6's optimizer needs Debian's acorn for optimized links.
# - ccache (CMakeLists.txt puts it in front of g++ and em++): paths under this checkout hash as
#   relative ones and the build folder's path is not hashed (the sanitize build's debug info names it),
#   so a clean clone anywhere on this machine reuses what any earlier clone compiled.
export NODE_PATH=/usr/share/nodejs
CCACHE_BASEDIR=$(pwd -P)
export CCACHE_BASEDIR
export CCACHE_NOHASHDIR=1
