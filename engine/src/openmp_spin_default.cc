// libember_openmp_spin.so: bounds how long OpenMP's idle threads spin before they sleep.
//
// libgomp's threads spin 300,000 pauses (about 8 ms on a Zen 5 core) after each
// parallel region before they sleep. On cores another process shares, that spinning
// takes the CPU from the thread that holds the work: on this project's 2-core machine,
// with one busy process beside it, ResNet-50 ran p50 91 ms / p99 241 ms and MobileNetV3
// 8.7 / 164 ms. Bounded to 1,000 pauses (about 26 us; the count libgomp itself uses
// once threads outnumber cores) they ran 84 / 97 and 11.7 / 17, and 0-7% slower on idle
// cores (2026-11-26; README, "Threads").
//
// libgomp reads GOMP_SPINCOUNT once, in its own constructor, so this one has to run
// first. The dynamic linker runs the constructors of libraries that do not depend on
// each other in the reverse of the order it loaded them in; libember lists this library
// after libgomp (CMakeLists.txt), so it loads after libgomp and its constructor runs
// before libgomp's. tests/tools/test_cli.cc checks libgomp sees the value. When
// libgomp was already running before libember was loaded (a Python process that
// imported another OpenMP library first), the setting comes too late and changes
// nothing.
//
// A caller's own OMP_WAIT_POLICY or GOMP_SPINCOUNT is left as it is: OMP_WAIT_POLICY=
// active (spin always) is the faster choice on cores nothing else uses.
#include <cstdlib>

namespace {

[[gnu::constructor]] void bound_openmp_spin() {
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && std::getenv("GOMP_SPINCOUNT") == nullptr)
    setenv("GOMP_SPINCOUNT", "1000", 0);
}

}  // namespace
