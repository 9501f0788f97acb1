#!/usr/bin/env bash
# The test command: install what the build needs, then for each CMake preset
# configure, build and run the whole ctest suite.
#
#   scripts/run-tests.sh                      # presets in $RMA_TEST_PRESETS (default "asan tsan")
#   scripts/run-tests.sh --preset release     # one preset (repeat --preset for several)
#   scripts/run-tests.sh -- -R rcache -V      # everything after -- goes to ctest
#
# Keeps going after a failing preset and exits non-zero if any failed. The
# log ends with the last preset's ctest summary followed by a recap of every
# preset: its result, the tests that failed and the last lines of their
# output, so that the tail of a CI log says what failed where, and a last
# line "N passed, N failed" summed over every preset (a preset that did not
# configure or build counts as one failure).
# Under tsan the 'torture' label (too slow), 'fuzz' (clang+ASan builds the
# asan preset already ran), 'softroce' (the QEMU guest's suite, which the
# asan preset runs: 150 s more would keep CI over 45 minutes), 'packaging'
# (install trees, nothing TSan looks at), 'larger_job' (the runs of
# multi-process scenarios that also run on fewer ranks: a rank has the same
# threads at any job size; asan runs every size) and 'soak_in_process' (the
# protocol soak over the in-memory link, one thread driving both devices;
# asan runs it) are skipped. The default
# runs the two sanitizer presets, both optimised builds (asan -O1, tsan -O2;
# RelWithDebInfo); add release with RMA_TEST_PRESETS="asan tsan release" or
# --preset release.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1

usage() { sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; }

presets=()
ctest_extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --preset) [[ $# -ge 2 ]] || { echo "run-tests: --preset needs a name" >&2; exit 2; }
              presets+=("$2"); shift 2 ;;
    --preset=*) presets+=("${1#--preset=}"); shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; ctest_extra=("$@"); break ;;
    *) echo "run-tests: unknown argument '$1' (ctest arguments go after --)" >&2; usage >&2; exit 2 ;;
  esac
done
if [[ ${#presets[@]} -eq 0 ]]; then
  read -r -a presets <<<"${RMA_TEST_PRESETS:-asan tsan}"
fi
[[ ${#presets[@]} -gt 0 ]] || { echo "run-tests: no presets to run" >&2; exit 2; }

# shellcheck source=SCRIPTDIR/lib/deps.sh
source scripts/lib/deps.sh
# The soft-RoCE guest's packages too (the `softroce` label boots it), and
# Slurm (the `api_mp.srun_*` tests start a private cluster).
rma_install_deps "${RMA_VM_PACKAGES[@]}" "${RMA_SLURM_PACKAGES[@]}" || { echo "run-tests: installing dependencies failed" >&2; exit 1; }

jobs="$(nproc 2>/dev/null || echo 2)"
results=()   # "preset: passed" / "preset: FAILED (stage)"
failed=0
total_passed=0
total_failed=0
n=${#presets[@]}

# The tail of test NAME's output in ctest's log LOG (every test's output is
# there between "N/M Testing: NAME" and "<end of output>").
failed_output_tail() {
  awk -v name="$2" '
    $0 ~ /^[0-9]+\/[0-9]+ Testing: / { sub(/^[0-9]+\/[0-9]+ Testing: /, ""); mine = ($0 == name); out = 0; next }
    mine && /^<end of output>/ { mine = 0; next }
    mine && /^Output:/ { out = 1; getline; next }
    mine && out { print }
  ' "$1" | tail -n "$3" | sed 's/^/      | /'
}

recap() {
  local r p log flist name shown
  echo
  echo "=== run-tests recap ==="
  for r in "${results[@]}"; do
    echo "  $r"
    [[ "$r" == *"FAILED (tests)"* ]] || continue
    p="${r%%:*}"
    flist="$(ctest_dir "$p")/Testing/Temporary/LastTestsFailed.log"
    log="$(ctest_dir "$p")/Testing/Temporary/LastTest.log"
    [[ -f "$flist" ]] || continue
    shown=0
    while IFS=: read -r _ name; do
      echo "    failed: $name"
      if (( shown < 4 )) && [[ -f "$log" ]]; then
        failed_output_tail "$log" "$name" 12
        shown=$((shown + 1))
      fi
    done <"$flist"
  done
}

# The build directory of a preset (CMakePresets.json puts each in build/<name>).
ctest_dir() { echo "$root/build/$1"; }

for i in "${!presets[@]}"; do
  p="${presets[$i]}"
  echo
  echo "=== preset $p ($((i + 1))/$n): configure, build, test ==="
  if ! cmake --preset "$p"; then
    results+=("$p: FAILED (configure)"); failed=1; total_failed=$((total_failed + 1)); continue
  fi
  t0=$SECONDS
  if ! cmake --build --preset "$p" -j "$jobs"; then
    results+=("$p: FAILED (build)"); failed=1; total_failed=$((total_failed + 1)); continue
  fi
  build_s=$((SECONDS - t0))
  echo "=== preset $p: built in $build_s s ==="
  t0=$SECONDS
  args=(--preset "$p" -j2 --output-on-failure --timeout 900)
  if [[ "$p" == tsan ]]; then
    # As the tsan test preset: fuzz targets are clang+ASan builds; the QEMU
    # guest's suite, the packaging tests and the larger runs of multi-process
    # scenarios that also run on fewer ranks here run under asan.
    args+=(-LE '^(torture|fuzz|softroce|packaging|larger_job|soak_in_process)$')
  fi
  echo "=== preset $p: ctest ${args[*]} ${ctest_extra[*]} ==="
  summary="$(mktemp)"
  if ctest "${args[@]}" "${ctest_extra[@]}" | tee "$summary"; then
    results+=("$p: passed")
  else
    results+=("$p: FAILED (tests)"); failed=1
  fi
  # ctest's own summary: "NN% tests passed, F tests failed out of T".
  counts="$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$summary" | tail -n 1)"
  rm -f "$summary"
  echo "=== preset $p: tests ran in $((SECONDS - t0)) s ==="
  results[-1]+=" (build ${build_s} s, tests $((SECONDS - t0)) s)"
  if [[ "$counts" =~ ,\ ([0-9]+)\ tests?\ failed\ out\ of\ ([0-9]+) ]]; then
    total_failed=$((total_failed + BASH_REMATCH[1]))
    total_passed=$((total_passed + BASH_REMATCH[2] - BASH_REMATCH[1]))
  elif [[ "${results[-1]}" == *FAILED* ]]; then
    total_failed=$((total_failed + 1))   # ctest ran no test or died before its summary
  fi
done

recap
echo "$total_passed passed, $total_failed failed"
exit "$failed"
