#!/usr/bin/env python3
"""Tests of scripts/check-codemap.py, scripts/check-names.py and
scripts/check-calls.py on tiny fixture trees made in a temporary
directory: a missing file, a row listed twice, a source file with no row,
a misnamed symbol and a circle of calls are each reported, and a true
tree passes.

  test_checks.py [CC]      (CTest: scripts.checks)
"""
import os
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "..", "..", "scripts")
CC = sys.argv[1] if len(sys.argv) > 1 else "cc"
failures = []


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as f:
        f.write(textwrap.dedent(text))


def run(script, *args):
    p = subprocess.run([sys.executable, os.path.join(SCRIPTS, script), *args],
                       capture_output=True, text=True)
    return p.returncode, p.stderr


def expect(what, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)
        print(textwrap.indent(detail, "     "))


GOOD_MAP = """\
# Code map
- `shared/ring.c`, `shared/ring.h`: ring: the ring, used by `shared/ring.c`
- `tests/unit/test_<module>.c`: one test per module
- `tests/fuzz/`: harnesses
"""


def codemap_tree(root, code_map):
    write(root, "CODE-MAP.md", code_map)
    for f in ("shared/ring.c", "shared/ring.h", "tests/unit/test_ring.c",
              "tests/fuzz/fuzz_ring.c"):
        write(root, f, "/* fixture */\n")


def test_codemap():
    with tempfile.TemporaryDirectory() as root:
        codemap_tree(root, GOOD_MAP)
        rc, err = run("check-codemap.py", root)
        expect("codemap: a true map passes", rc == 0, err)

    with tempfile.TemporaryDirectory() as root:
        codemap_tree(root, GOOD_MAP + textwrap.dedent("""\
            - `shared/ring.h`: ring: listed again
            - `shared/gone.c`: a file that moved away
            - `tests/bench/bench_<name>.c`: a pattern nothing matches
            Prose naming `shared/moved.h` that is gone.
            """))
        write(root, "shared/orphan.c", "/* no row */\n")
        write(root, "shared/README", "not a source file: needs no row\n")
        rc, err = run("check-codemap.py", root)
        expect("codemap: a bad map fails", rc == 1, err)
        expect("codemap: a row's missing file is reported",
               "CODE-MAP.md:6: shared/gone.c: no such file or directory" in err, err)
        expect("codemap: a missing file named in prose is reported",
               "CODE-MAP.md:8: shared/moved.h: no such file or directory" in err, err)
        expect("codemap: a row listed twice is reported",
               "shared/ring.h: row listed twice (lines 2, 5)" in err, err)
        expect("codemap: a pattern matching nothing is reported",
               "tests/bench/bench_<name>.c: no file matches this pattern" in err, err)
        expect("codemap: a source file with no row is reported",
               "shared/orphan.c: source file with no row in CODE-MAP.md" in err, err)
        expect("codemap: a file that is not source needs no row", "README" not in err, err)
        expect("codemap: exactly those problems", err.count("\n") == 6, err)

    with tempfile.TemporaryDirectory() as root:
        rc, err = run("check-codemap.py", root)
        expect("codemap: no CODE-MAP.md is an error", rc == 1 and "cannot read" in err, err)

    # A fresh clone: a build output named in prose, ignored by a "dir/"
    # pattern, is absent until built; a path merely absent is still reported.
    with tempfile.TemporaryDirectory() as root:
        codemap_tree(root, GOOD_MAP + "Built into `web/dist` and `web/gone`.\n")
        write(root, "web/.gitignore", "dist/\n")
        subprocess.run(["git", "init", "-q", root], check=True)
        rc, err = run("check-codemap.py", root)
        expect("codemap: an ignored build directory may be absent", "web/dist" not in err, err)
        expect("codemap: an absent path not ignored is reported", "web/gone" in err, err)


def compile_into(root, build, src):
    obj = os.path.join(build, "CMakeFiles", "ptg_shared.dir", src + ".o")
    os.makedirs(os.path.dirname(obj), exist_ok=True)
    subprocess.run([CC, "-c", "-o", obj, os.path.join(root, src)], check=True)


def test_names():
    with tempfile.TemporaryDirectory() as root:
        build = os.path.join(root, "build")
        write(root, "shared/ring.c", """\
            static int plain(void) { return 1; }
            int ring_count;
            int ring_ok(void) { return plain(); }
            int misnamed_fn(void) { return 2; }
            int misnamed_var = 3;
            int made_by_asan __asm__("__odr_asan.made_by_asan") = 4;
            """)
        write(root, "shared/routes_int.h", "/* the routes module's shared header */\n")
        write(root, "shared/routes_json.c", """\
            int routes_json_own(void) { return 1; }
            int routes_shared(void) { return 2; }
            int routes__helper(void) { return 3; }
            """)
        write(root, "shared/main.c", "int main(void) { return 0; }\n")
        write(root, "tests/unit/test_ring.c", "int helper_anything(void) { return 0; }\n")
        for src in ("shared/ring.c", "shared/routes_json.c", "shared/main.c",
                    "tests/unit/test_ring.c"):
            compile_into(root, build, src)
        # An object whose source is gone (a stale build) is not checked.
        write(root, "shared/gone.c", "int stale_name(void) { return 0; }\n")
        compile_into(root, build, "shared/gone.c")
        os.remove(os.path.join(root, "shared/gone.c"))

        rc, err = run("check-names.py", build, "--root", root)
        expect("names: a misnamed export fails", rc == 1, err)
        expect("names: the misnamed function is reported with its file",
               "shared/ring.c: misnamed_fn: an external name of module ring must be ring_*"
               in err, err)
        expect("names: the misnamed variable is reported",
               "shared/ring.c: misnamed_var:" in err, err)
        for ok in ("ring_ok", "ring_count", "plain", "routes_json_own", "routes_shared",
                   "routes__helper", "main", "helper_anything", "stale_name",
                   "made_by_asan"):
            expect(f"names: {ok} is not reported", ok not in err, err)
        expect("names: exactly those problems", err.count("\n") == 3, err)

        os.remove(os.path.join(build, "CMakeFiles/ptg_shared.dir/shared/ring.c.o"))
        rc, err = run("check-names.py", build, "--root", root)
        expect("names: a tree keeping the rule passes", rc == 0, err)

    with tempfile.TemporaryDirectory() as root:
        rc, err = run("check-names.py", root, "--root", root)
        expect("names: no objects is an error, not a pass",
               rc == 1 and "build it first" in err, err)


def test_calls():
    with tempfile.TemporaryDirectory() as root:
        build = os.path.join(root, "build")
        write(root, "shared/low.c", "int low_value(void) { return 1; }\n")
        write(root, "shared/mid.c", """\
            int low_value(void);
            int mid_value(void) { return low_value() + 1; }
            """)
        write(root, "shared/top.c", """\
            int mid_value(void);
            int top_value(void) { return mid_value() + 1; }
            """)
        for src in ("shared/low.c", "shared/mid.c", "shared/top.c"):
            compile_into(root, build, src)
        rc, err = run("check-calls.py", build, "--root", root)
        expect("calls: files calling one way pass", rc == 0, err)

        write(root, "shared/low.c", """\
            int top_value(void);
            int low_value(void) { return 1; }
            int low_back(void) { return top_value(); }
            """)
        compile_into(root, build, "shared/low.c")
        rc, err = run("check-calls.py", build, "--root", root)
        expect("calls: a circle of three files fails", rc == 1, err)
        for edge in ("shared/low.c -> shared/top.c (top_value)",
                     "shared/mid.c -> shared/low.c (low_value)",
                     "shared/top.c -> shared/mid.c (mid_value)"):
            expect(f"calls: {edge} is reported", edge in err, err)

    with tempfile.TemporaryDirectory() as root:
        rc, err = run("check-calls.py", root, "--root", root)
        expect("calls: no objects is an error, not a pass",
               rc == 1 and "build it first" in err, err)


test_codemap()
test_names()
test_calls()
if failures:
    print(f"{len(failures)} checks failed")
    sys.exit(1)
print("all checks passed")
