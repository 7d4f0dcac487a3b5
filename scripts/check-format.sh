#!/bin/sh
# Fails when a C file differs from the committed .clang-format (part of the
# test command). The version is pinned to Debian 12's clang-format 14:
# another version may lay the same code out differently.
# Fix a difference with: scripts/check-format.sh --fix
set -eu
cd "$(dirname "$0")/.."
cf=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$cf" ]; then
	echo "check-format: clang-format not found (scripts/install-deps.sh installs it)" >&2
	exit 1
fi
files=$(git ls-files '*.c' '*.h' | grep -v '^web/')
if [ "${1:-}" = --fix ]; then
	# shellcheck disable=SC2086
	"$cf" -i $files
	exit 0
fi
# shellcheck disable=SC2086
if ! "$cf" --dry-run -Werror $files 2>/tmp/check-format.$$; then
	grep -oE '^[^ :]+\.[ch]:[0-9]+' /tmp/check-format.$$ | uniq | head -20 >&2
	n=$(grep -cE '^[^ :]+\.[ch]:[0-9]+:[0-9]+: error' /tmp/check-format.$$ || true)
	rm -f /tmp/check-format.$$
	echo "check-format: $n lines differ from .clang-format; run scripts/check-format.sh --fix" >&2
	exit 1
fi
rm -f /tmp/check-format.$$
echo "check-format: every C file matches .clang-format"
