#!/bin/sh
# The one test command: installs dependencies, builds a normal and an
# ASan+UBSan configuration with -Wall -Wextra -Werror, and runs every
# test of both with CTest (each test its own process with a timeout);
# then builds the libFuzzer harnesses with clang and runs each briefly.
set -eu
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
# Every C file as the committed .clang-format lays it out (fails first,
# before minutes of building).
./scripts/check-format.sh
# CODE-MAP.md true to the tree: every path it names exists, one row per
# source file, no row twice.
./scripts/check-codemap.py
# The tests' and scripts' Python without unused imports or undefined names.
/usr/bin/python3 -m pyflakes tests scripts
# The browser terminal's files (npm ci from web/package-lock.json), served
# by the gateway in e2e.web and driven there in headless chromium.
./scripts/build-web.sh

jobs=$(nproc 2>/dev/null || echo 2)
for cfg in release asan; do
	dir="build-$cfg"
	flags="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DPTG_WERROR=ON"
	[ "$cfg" = asan ] && flags="-DCMAKE_BUILD_TYPE=Debug -DPTG_SANITIZE=ON -DPTG_WERROR=ON"
	echo "== $cfg: configure and build in $dir"
	# shellcheck disable=SC2086
	cmake -S . -B "$dir" $flags >/dev/null
	cmake --build "$dir" -j "$jobs"
	# Every product object's external names carry its module's prefix
	# (CODE-MAP's naming rule), read with nm from the release build,
	# and the files of each library call one way (no circle of calls).
	if [ "$cfg" = release ]; then
		./scripts/check-names.py "$dir"
		./scripts/check-calls.py "$dir"
	fi
	echo "== $cfg: test"
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --test-dir "$dir" --output-on-failure -j "$jobs"
done
# Each harness starts from its committed seed corpus (tests/fuzz/corpus/)
# and dictionary; what it discovers stays in build-fuzz, never the tree.
echo "== fuzz: clang libFuzzer harnesses (${PTG_FUZZ_SECONDS:-15}s each)"
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DPTG_FUZZ=ON \
	-DPTG_FUZZ_SECONDS="${PTG_FUZZ_SECONDS:-15}" >/dev/null
cmake --build build-fuzz -j "$jobs" --target fuzzers
ctest --test-dir build-fuzz --output-on-failure -L fuzz -j "$jobs"
echo "== all tests passed (release, asan, fuzz)"
