#!/usr/bin/env python3
"""check-calls: the files of each product library call one way.

Reads the release build's objects with nm: a file calls another when it
uses a name the other defines (in the same library, ptg_X.dir). A circle
of files calling each other (A calls B, B calls A, or longer) is reported
with the names each file takes from the next, unless listed below with
its reason; an exception that no longer matches is noted for removal.

  check-calls.py BUILD_DIR [--root ROOT]
"""
import os
import subprocess
import sys

PRODUCT_DIRS = ("auth", "cli", "gateway", "shared", "sidecar", "wsproto")

# Circles that stay for now, each with its reason. "(in flux)": the files
# are being rewritten by other work; untie them there.
EXCEPTIONS = {}


def libraries(build, root):
    """{library dir: {source path relative to root: object path}}."""
    libs = {}
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
            if src.split("/")[0] in PRODUCT_DIRS and os.path.exists(os.path.join(root, src)):
                libs.setdefault(rel[0], {})[src] = obj
    return libs


def symbols(obj):
    """(defined external names, undefined names) of one object."""
    out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True,
                         text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 2:
            continue
        if f[1] == "U":
            used.add(f[0])
        elif f[1] in "TDBRCVW":
            defined.add(f[0])
    return defined, used


def calls(objs):
    """{file: {file it calls: sorted names it takes from it}}."""
    syms = {src: symbols(obj) for src, obj in objs.items()}
    graph = {}
    for a, (_, used) in syms.items():
        graph[a] = {}
        for b, (defined, _) in syms.items():
            names = sorted(used & defined) if a != b else []
            if names:
                graph[a][b] = names
    return graph


def circles(graph):
    """The strongly connected sets of more than one file (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(frozenset(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def check(build, root):
    errors, used = [], set()
    libs = libraries(build, root)
    if not libs:
        return [f"{build}: no product objects found (build it first)"], []
    for lib in sorted(libs):
        graph = calls(libs[lib])
        for comp in circles(graph):
            if comp in EXCEPTIONS:
                used.add(comp)
                continue
            edges = [f"{a} -> {b} ({', '.join(graph[a][b][:4])})"
                     for a in sorted(comp) for b in sorted(graph[a]) if b in comp]
            errors.append("a circle of calls: " + "; ".join(edges))
    checked = {src for objs in libs.values() for src in objs}
    stale = sorted(sorted(e) for e in set(EXCEPTIONS) - used if e <= checked)
    return errors, stale


def main(argv):
    if len(argv) < 2 or argv[1].startswith("-"):
        print("usage: check-calls.py BUILD_DIR [--root ROOT]", file=sys.stderr)
        return 2
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    if len(argv) == 4 and argv[2] == "--root":
        root = argv[3]
    errors, stale = check(os.path.abspath(argv[1]), os.path.abspath(root))
    for e in errors:
        print(f"check-calls: {e}", file=sys.stderr)
    for files in stale:
        print(f"check-calls: note: exception {', '.join(files)} is no circle now; remove it",
              file=sys.stderr)
    if errors:
        return 1
    print(f"check-calls: the files of each library call one way "
          f"({len(EXCEPTIONS) - len(stale)} circles listed as exceptions)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
