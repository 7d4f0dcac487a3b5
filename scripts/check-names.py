#!/usr/bin/env python3
"""Checks the naming rule of CODE-MAP.md ("Naming and layout") on built
objects (part of the test command, after a build).

  scripts/check-names.py BUILD_DIR [--root ROOT]

Every product .c file (auth, cli, gateway, shared, sidecar, wsproto) is a
module named by its file: the functions and variables it defines with
external linkage must start with that name and "_" (ring.c: ring_*).
Also allowed:
  - a module split in several files shares the header X_int.h in their
    directory: a file named X_*.c (or listed in SPLIT) exports X_* and
    X__* (routes_json.c with gateway/http/routes_int.h: routes_*, routes__*),
    and X.c itself exports X__* too;
  - main in main.c;
  - the EXCEPTIONS below, each with its reason.
The symbols are read with nm from the objects CMake built for each source
(BUILD_DIR/CMakeFiles/TARGET.dir/DIR/FILE.c.o); an object whose source is
gone is stale and skipped.
"""
import fnmatch
import os
import re
import subprocess
import sys

PRODUCT_DIRS = ("auth", "cli", "gateway", "shared", "sidecar", "wsproto")

# Files of a module split in several whose names do not start with the
# module's: they share its X_int.h and export its X_* names.
SPLIT = {
    "sidecar/join.c": "session",  # the join flows of session.h, on session_int.h
    "sidecar/replay.c": "session",  # a join's disk replay, on session_int.h
    "sidecar/approval.c": "session",  # the approve control policy, on session_int.h
}

# (source file, symbol glob): why the symbol keeps its name. "(in flux)":
# the file is being rewritten by other work; rename it there.
EXCEPTIONS = {
    ("shared/xalloc.c", "x*"): "xmalloc, xcalloc, xrealloc, xstrdup, xstrndup: the "
    "C idiom for allocation that cannot fail (git, OpenSSH), read as malloc at "
    "every call",
    ("gateway/config.c", "gw_config_*"): "(in flux: gateway/config.c and its callers "
    "are being rewritten) the gateway's and the sidecar's config modules share a "
    "file name",
    ("gateway/ws.c", "wsframe_*"): "(in flux: gateway/ws.c)",
    ("wsproto/wshandshake.c", "wshs_*"): "(in flux: wsproto/)",
    ("shared/b64.c", "b64url_*"): "(in flux: wsproto/wshandshake.c calls b64url_decode)",
    ("shared/timeutil.c", "time_*"): "(in flux: shared/log.c calls time_now_ms, "
    "time_format_ms)",
    ("gateway/http/peers.c", "peer_*"): "(in flux: gateway/http/http.c, being edited, calls most)",
    ("shared/fdio.c", "f[ds]_*"): "(in flux: gateway/config.c, being edited, calls "
    "fd_read_file)",
}


def objects(build, root):
    """{source path relative to root: object path}, one object per source."""
    found = {}
    top = os.path.join(build, "CMakeFiles")
    for d, _, names in os.walk(top):
        for n in names:
            if not n.endswith(".c.o"):
                continue
            obj = os.path.join(d, n)
            rel = os.path.relpath(obj, top).split(os.sep)
            if len(rel) < 3 or not rel[0].endswith(".dir"):
                continue
            src = "/".join(rel[1:])[: -len(".o")]
            if src.split("/")[0] not in PRODUCT_DIRS:
                continue
            if os.path.exists(os.path.join(root, src)):
                found.setdefault(src, obj)
    return found


def defined_globals(obj):
    """The object's defined external symbols that name C functions and
    variables: what a compiler adds under names that are no C identifier
    (ASan's __odr_asan.NAME) is not the source's."""
    out = subprocess.run(["nm", "-P", "-g", "--defined-only", obj],
                         check=True, capture_output=True, text=True).stdout
    syms = [line.split()[0] for line in out.splitlines() if line.strip()]
    return [s for s in syms if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", s)]


def allowed_prefixes(src, root):
    d, base = os.path.split(src)
    module = base[: -len(".c")]
    prefixes = [module + "_"]
    for n in sorted(os.listdir(os.path.join(root, d) if d else root)):
        m = re.fullmatch(r"(.+)_int\.h", n)
        if not m:
            continue
        whole = m.group(1)
        if module.startswith(whole + "_") or SPLIT.get(src) == whole:
            prefixes += [whole + "_", whole + "__"]
        elif module == whole:
            prefixes.append(whole + "__")
    return module, prefixes


def check(build, root):
    """The violations, and the exceptions that no longer match anything
    in a file that was checked."""
    errors, used = [], set()
    objs = objects(build, root)
    if not objs:
        return [f"{build}: no product objects found (build it first)"], []
    for src in sorted(objs):
        module, prefixes = allowed_prefixes(src, root)
        for sym in defined_globals(objs[src]):
            if sym.startswith(tuple(prefixes)):
                continue
            if sym == "main" and module == "main":
                continue
            hit = [(f, g) for f, g in EXCEPTIONS if f == src and fnmatch.fnmatchcase(sym, g)]
            if hit:
                used.update(hit)
                continue
            want = " or ".join(p + "*" for p in prefixes)
            errors.append(f"{src}: {sym}: an external name of module {module} must be {want}")
    stale = sorted(e for e in set(EXCEPTIONS) - used if e[0] in objs)
    return errors, stale


def main(argv):
    if len(argv) < 2 or argv[1].startswith("-"):
        print("usage: check-names.py BUILD_DIR [--root ROOT]", file=sys.stderr)
        return 2
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    if len(argv) == 4 and argv[2] == "--root":
        root = argv[3]
    errors, stale = check(os.path.abspath(argv[1]), os.path.abspath(root))
    for e in errors:
        print(f"check-names: {e}", file=sys.stderr)
    for f, g in stale:
        print(f"check-names: note: exception {f}: {g} matches nothing now; remove it",
              file=sys.stderr)
    if errors:
        print(f"check-names: {len(errors)} names break CODE-MAP's naming rule", file=sys.stderr)
        return 1
    print(f"check-names: every external name carries its module's prefix "
          f"({len(EXCEPTIONS)} exceptions listed)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
