#!/bin/sh
# Explores with the libFuzzer harnesses for as long as you give them,
# where the test command gives each 15 s. Run it before handing in a
# change to a parser, so that the test command's short runs do not find
# what a longer one would have.
#
#   scripts/fuzz.sh [--seconds N] [--jobs J] [NAME ...]
#
# NAME is a harness (fuzz_routes, ...); none means all of them. Each runs
# N seconds (default 300), J at a time (default: the CPU count). What a
# harness discovers stays in build-fuzz/tests/fuzz/corpus-NAME; a crash
# leaves its input as build-fuzz/tests/fuzz/NAME-crash-*, to be turned
# into a unit test and a seed in tests/fuzz/corpus/NAME.
set -eu
cd "$(dirname "$0")/.."

seconds=300
jobs=$(nproc 2>/dev/null || echo 2)
while [ $# -gt 0 ]; do
	case "$1" in
	--seconds) seconds=${2:?--seconds needs a number}; shift 2 ;;
	--jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
	-h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	*) break ;;
	esac
done
case "$seconds$jobs" in
*[!0-9]*) echo "fuzz.sh: --seconds and --jobs take whole numbers" >&2; exit 2 ;;
esac

CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DPTG_FUZZ=ON \
	-DPTG_FUZZ_SECONDS="$seconds" >/dev/null
cmake --build build-fuzz -j "$jobs" --target fuzzers
# Back to the test command's settings whatever happens, so that its next
# run (or a bare ctest) in build-fuzz is its 15 s one again.
trap 'cmake -S . -B build-fuzz -DPTG_FUZZ_SECONDS=15 >/dev/null' EXIT
regex=""
for name in "$@"; do
	regex="$regex${regex:+|}^fuzz\\.$name\$"
done
ctest --test-dir build-fuzz --output-on-failure -L fuzz -j "$jobs" \
	${regex:+-R "$regex"}
