#!/bin/sh
# Builds the browser terminal into web/dist (or the directory given):
# installs the pinned npm packages from web/package-lock.json (npm ci),
# then copies the page, its script and style, and xterm.js's files, each
# file but index.html renamed with a hash of its content so the gateway
# can mark it immutable (a new build is a new name; index.html is
# no-cache and names the current ones). Nothing is fetched at run time.
set -eu
cd "$(dirname "$0")/../web"
out=${1:-dist}

# One build at a time in this tree: the test suite's web tests each make
# sure the page is built, and two of them run at once (ctest -j2); their
# npm ci and dist.tmp would trample each other.
exec 9>.build-lock
flock 9

# npm ci is skipped when node_modules already matches the lockfile.
if [ ! -f node_modules/.package-lock.json ] ||
	! cmp -s package-lock.json .lock-installed 2>/dev/null; then
	npm ci --no-audit --no-fund --loglevel=error
	cp package-lock.json .lock-installed
fi

rm -rf "$out.tmp"
mkdir -p "$out.tmp"

# hashed NAME SRC: copies SRC as NAME-<12 hex>.EXT, prints the new name.
hashed() {
	h=$(sha256sum "$2" | cut -c1-12)
	f="${1%.*}-$h.${1##*.}"
	cp "$2" "$out.tmp/$f"
	echo "$f"
}
xterm_js=$(hashed xterm.js node_modules/@xterm/xterm/lib/xterm.js)
xterm_css=$(hashed xterm.css node_modules/@xterm/xterm/css/xterm.css)
fit_js=$(hashed addon-fit.js node_modules/@xterm/addon-fit/lib/addon-fit.js)
search_js=$(hashed addon-search.js node_modules/@xterm/addon-search/lib/addon-search.js)
links_js=$(hashed addon-web-links.js node_modules/@xterm/addon-web-links/lib/addon-web-links.js)
proto_js=$(hashed protocol.js src/protocol.js)
player_js=$(hashed player.js src/player.js)
# app.js imports protocol.js and player.js by name: rewrite the imports,
# then hash.
sed -e "s|\\./protocol\\.js|./$proto_js|" -e "s|\\./player\\.js|./$player_js|" \
	src/app.js >"$out.tmp/app.js.in"
app_js=$(hashed app.js "$out.tmp/app.js.in")
rm "$out.tmp/app.js.in"
style_css=$(hashed style.css src/style.css)
sed -e "s|@XTERM_JS@|$xterm_js|" -e "s|@XTERM_CSS@|$xterm_css|" \
	-e "s|@FIT_JS@|$fit_js|" -e "s|@APP_JS@|$app_js|" \
	-e "s|@SEARCH_JS@|$search_js|" -e "s|@LINKS_JS@|$links_js|" \
	-e "s|@STYLE_CSS@|$style_css|" -e "s|@PROTO_JS@|$proto_js|" \
	-e "s|@PLAYER_JS@|$player_js|" src/index.html >"$out.tmp/index.html"
cp node_modules/@xterm/xterm/LICENSE "$out.tmp/xterm-LICENSE.txt"

# An unchanged build leaves the directory as it is: a gateway serving it
# (a test running beside `scripts/run-local.sh`, say) keeps its files.
if [ -d "$out" ] && diff -r -q "$out" "$out.tmp" >/dev/null 2>&1; then
	rm -rf "$out.tmp"
else
	rm -rf "$out"
	mv "$out.tmp" "$out"
fi
echo "build-web: $(pwd)/$out"
