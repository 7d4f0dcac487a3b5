#!/usr/bin/env python3
"""Checks that CODE-MAP.md tells the truth about the tree (part of the test
command).

  scripts/check-codemap.py [ROOT]      (ROOT defaults to the repository)

A row is a list item whose head is one or more backticked names before the
colon: "- `shared/ring.c`: ...". A name is a file, a directory ending in "/"
(it covers every file beneath it), or a pattern where "<word>" stands for
letters, digits and underscores ("tests/unit/test_<module>.c").

Checked:
  - every path CODE-MAP names, in a row's head or in its prose, exists
    (a backticked text counts as a path when its first component is a
    top-level entry of ROOT; a pattern must match at least one file; a
    path git ignores, a build output such as web/dist, may be absent);
  - no name heads two rows;
  - every source file (*.c, *.h) is covered by exactly one row, in the
    product's directories and in tests/ (unit, integration, bench, fuzz):
    CODE-MAP covers the tests too.
Source files are those git tracks when ROOT is a git checkout, else every
*.c and *.h under the checked directories.
"""
import os
import re
import subprocess
import sys

CHECKED_DIRS = ("auth", "cli", "gateway", "shared", "sidecar", "wsproto", "tests")
ROW_HEAD = re.compile(r"^- ((?:`[^`]+`(?:, )?)+):")
BACKTICKED = re.compile(r"`([^`]+)`")


def source_files(root):
    """Every *.c and *.h of the checked directories, relative to root."""
    if os.path.isdir(os.path.join(root, ".git")):
        out = subprocess.run(
            ["git", "-C", root, "ls-files", "--", "*.c", "*.h"],
            check=True, capture_output=True, text=True).stdout
        files = out.split()
    else:
        files = []
        for top in CHECKED_DIRS:
            for d, _, names in os.walk(os.path.join(root, top)):
                files += [os.path.relpath(os.path.join(d, n), root)
                          for n in names if n.endswith((".c", ".h"))]
    return sorted(f for f in files if f.split("/")[0] in CHECKED_DIRS
                  and os.path.exists(os.path.join(root, f)))


def name_regex(name):
    """A row's name as a regex over paths: a file, a directory or a pattern."""
    if name.endswith("/"):
        return re.compile(re.escape(name) + ".+")
    parts = re.split(r"<[A-Za-z]+>", name)
    return re.compile("[A-Za-z0-9_]+".join(re.escape(p) for p in parts))


def is_path(text, top_entries):
    first = text.split("/")[0]
    return "/" in text and " " not in text and first in top_entries


def ignored(root, path):
    """A path git ignores is a build output (web/dist): it may be absent."""
    if not os.path.isdir(os.path.join(root, ".git")):
        return False
    # An absent path is asked as a directory too: a "dist/" pattern only
    # matches directories, and git cannot tell what an absent path was.
    return any(subprocess.run(["git", "-C", root, "check-ignore", "-q", p]).returncode == 0
               for p in (path, path.rstrip("/") + "/"))


def all_files(root):
    out = []
    for top in os.listdir(root):
        if top.startswith("build") or top in (".git", "node_modules"):
            continue
        p = os.path.join(root, top)
        if os.path.isfile(p):
            out.append(top)
            continue
        for d, dirs, names in os.walk(p):
            dirs[:] = [x for x in dirs if x != "node_modules"]
            out += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return out


def check(root):
    errors = []
    path = os.path.join(root, "CODE-MAP.md")
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        return [f"CODE-MAP.md: cannot read: {e.strerror}"]
    top_entries = set(os.listdir(root))
    everything = None
    rows = {}  # name -> line numbers of the rows it heads
    for no, line in enumerate(lines, 1):
        head = ROW_HEAD.match(line)
        names = BACKTICKED.findall(head.group(1)) if head else []
        for name in names:
            rows.setdefault(name, []).append(no)
        for text in BACKTICKED.findall(line):
            if text not in names and not is_path(text, top_entries):
                continue
            if "<" in text:
                everything = everything or all_files(root)
                rx = name_regex(text)
                if not any(rx.fullmatch(f) for f in everything):
                    errors.append(f"CODE-MAP.md:{no}: {text}: no file matches this pattern")
            elif not os.path.exists(os.path.join(root, text)) and not ignored(root, text):
                errors.append(f"CODE-MAP.md:{no}: {text}: no such file or directory")
    for name, nos in rows.items():
        if len(nos) > 1:
            where = ", ".join(str(n) for n in nos)
            errors.append(f"CODE-MAP.md:{nos[1]}: {name}: row listed twice (lines {where})")
    matchers = [(name, name_regex(name)) for name in rows]
    for src in source_files(root):
        hits = [name for name, rx in matchers if rx.fullmatch(src)]
        if not hits:
            errors.append(f"{src}: source file with no row in CODE-MAP.md")
        elif len(hits) > 1:
            errors.append(f"{src}: covered by {len(hits)} rows of CODE-MAP.md ({', '.join(hits)})")
    return errors


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    errors = check(os.path.abspath(root))
    for e in errors:
        print(f"check-codemap: {e}", file=sys.stderr)
    if errors:
        print(f"check-codemap: {len(errors)} problems; CODE-MAP.md has one row per file",
              file=sys.stderr)
        return 1
    print("check-codemap: every path CODE-MAP.md names exists, every source file has one row")
    return 0


if __name__ == "__main__":
    sys.exit(main())
