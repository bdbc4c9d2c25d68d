#!/usr/bin/env bash
# Sanitizer runs of the C++ tests, CPU-only (docs/reliability.md "Fuzzing and sanitizers"):
#   asan  build-asan/ (-DTRAINSCALE_SANITIZE=address,undefined, gcc): every C++ test through
#         CTest (the MPI tests on 2, 3 and 4 ranks); any ASan, UBSan or LeakSanitizer finding
#         fails its test.
#   tsan  build-tsan/ (-DTRAINSCALE_SANITIZE=thread, gcc): the tests whose threads share memory
#         (tsan_tests below): the loader's workers, concurrent storage, IDX and synthetic reads,
#         the staged input, and the exchange strategies' communication thread and bucket pipeline
#         on 2 ranks.
# Libraries that are not instrumented (Open MPI, oneDNN, libgomp, HDF5) are covered by the
# suppression files in tests/sanitizers/, one commented entry per reason.
# Usage: scripts/sanitize.sh [--build] [asan] [tsan]    (default: both; SANITIZE_JOBS: build jobs)
#   --build: only configure and build (scripts/test.sh builds them in the background while the
#            other stages run, then runs this script again to run the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
if [[ ${1:-} == --build ]]; then
  build_only=1
  shift
fi
modes=("$@")
((${#modes[@]})) || modes=(asan tsan)
jobs=${SANITIZE_JOBS:-$(nproc 2>/dev/null || echo 2)}
source scripts/env.sh
supp=$PWD/tests/sanitizers

# configure_and_build DIR SANITIZERS TARGETS...
configure_and_build() {
  local dir=$1 sanitizers=$2
  shift 2
  local log=$dir/build.log
  mkdir -p "$dir"
  if [[ ! -f $dir/CMakeCache.txt ]]; then
    # No simulator: no C++ test runs it (its tests are pytest's, against build/).
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRAINSCALE_SANITIZE="$sanitizers" \
      -DTRAINSCALE_CUDA=OFF -DTRAINSCALE_SIM=OFF >"$log" 2>&1 || { cat "$log" >&2; echo "sanitize.sh: configure of $dir failed" >&2; exit 1; }
  fi
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  cmake --build "$dir" -j "$jobs" "${targets[@]}" >>"$log" 2>&1 \
    || { tail -n 40 "$log" >&2; echo "sanitize.sh: build of $dir failed (log: $log)" >&2; exit 1; }
}

tsan_tests=(test_loader test_storage test_idx_source test_synthetic_source test_train_staged_input)  # + test_mpi_train_equivalence
status=0
for mode in "${modes[@]}"; do
  case $mode in
    asan)
      echo "sanitize.sh: ASan + UBSan (build-asan/)"
      configure_and_build build-asan address,undefined all
      ((build_only)) && continue
      # fast_unwind_on_malloc=0: Open MPI has no frame pointers, so only the slow unwinder reaches
      # the frames lsan.supp names (about 10% more CPU time).
      export ASAN_OPTIONS="detect_leaks=1:fast_unwind_on_malloc=0:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
      export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
      export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
      ctest --test-dir build-asan --output-on-failure -j 2 || status=1
      ;;
    tsan)
      echo "sanitize.sh: TSan (build-tsan/)"
      configure_and_build build-tsan thread "${tsan_tests[@]}" test_mpi_train_equivalence
      ((build_only)) && continue
      export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
      for t in "${tsan_tests[@]}"; do
        OMP_NUM_THREADS=2 build-tsan/bin/"$t" --gtest_brief=1 || { echo "sanitize.sh: TSan: $t failed" >&2; status=1; }
      done
      OMP_NUM_THREADS=2 OMPI_MCA_mpi_yield_when_idle=1 mpiexec.openmpi -n 2 --oversubscribe build-tsan/bin/test_mpi_train_equivalence --gtest_brief=1 \
        || { echo "sanitize.sh: TSan: test_mpi_train_equivalence (2 ranks) failed" >&2; status=1; }
      ;;
    *) echo "sanitize.sh: unknown mode '$mode' (asan | tsan)" >&2; exit 2 ;;
  esac
done
exit $status
