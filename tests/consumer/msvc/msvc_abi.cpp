// msvc_abi.c compiled as C++ (tests/consumer/msvc/CMakeLists.txt).
#include "msvc_abi.c"
