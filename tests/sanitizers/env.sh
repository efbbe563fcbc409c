# Sourced by scripts/test.sh --sanitize and scripts/fuzz.sh: how the sanitizers report.
# Every report fails the program (UBSan halts on the first; ASan always does; LSan and
# TSan exit non-zero at the end), with a whole stack. The suppression files beside this
# one say, entry by entry, why each report there is not ember's bug.
sanitizers_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export ASAN_OPTIONS=${ASAN_OPTIONS:-strict_string_checks=1:check_initialization_order=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$sanitizers_dir/lsan.supp:print_suppressions=0}
export TSAN_OPTIONS=${TSAN_OPTIONS:-suppressions=$sanitizers_dir/tsan.supp:print_suppressions=0:second_deadlock_stack=1}
