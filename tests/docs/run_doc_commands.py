#!/usr/bin/env python3
"""Runs every command block of the docs that is marked as runnable on a CPU, so the docs cannot
rot. A block is marked by the word `cpu` after its language:

    ```sh cpu
    etcc samples/mlp.etir --emit=tasks
    ```

Each Markdown file's marked blocks run in order, with bash -e -o pipefail (so a block must not
cut a pipe short: `| head` can kill the writer with SIGPIPE under load; use `| sed -n 1,5p`), in one fresh
directory per file (a later block sees what an earlier one wrote) that holds links to the
repository's samples/, docs/, python/, tests/ and tools/ and `build` -> the build under test;
etcc and etc-run of that build are first on PATH. A block fails if any command fails or runs
longer than its time limit.

Usage: run_doc_commands.py REPO BUILD_DIR [FILE.md ...]   (default: README.md and docs/*.md)
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^(\s*)(`{3,})(.*)$")
LIMIT_S = 300


def marked_blocks(path):
    """(line number, text) of each fenced block whose info string has `cpu` after the language."""
    blocks, inside, start, body, marked, fence = [], False, 0, [], False, ""
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = FENCE.match(line.rstrip("\n"))
            if not inside and m:
                inside, fence, start, body = True, m.group(2), n, []
                words = m.group(3).split()
                marked = len(words) >= 2 and "cpu" in words[1:]
            elif inside and m and m.group(2) == fence and not m.group(3).strip():
                inside = False
                if marked:
                    blocks.append((start, "".join(body)))
            elif inside:
                body.append(line)
    if inside:
        raise SystemExit(f"{path}:{start}: unclosed code fence")
    return blocks


# Commands that stop reading their input early: under `pipefail` the writer's SIGPIPE fails the
# block, but only when it is still writing, i.e. only sometimes.
PIPE_CUT_SHORT = re.compile(r"\|\s*head\b|\bgrep\s+(-\w*m|--max-count)|\|\s*grep\s+-q")


def sandbox(repo, build):
    d = tempfile.mkdtemp(prefix="etc_docs_")
    for name in ("samples", "docs", "python", "tests", "tools"):
        os.symlink(os.path.join(repo, name), os.path.join(d, name))
    os.symlink(build, os.path.join(d, "build"))
    bindir = os.path.join(d, ".bin")
    os.mkdir(bindir)
    os.symlink(os.path.join(build, "etcc"), os.path.join(bindir, "etcc"))
    os.symlink(os.path.join(build, "tools", "etc-run"), os.path.join(bindir, "etc-run"))
    return d, bindir


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    repo, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    files = sys.argv[3:] or [os.path.join(repo, "README.md")] + sorted(glob.glob(os.path.join(repo, "docs", "*.md")))
    failures = ran = 0
    for path in files:
        blocks = marked_blocks(path)
        if not blocks:
            continue
        d, bindir = sandbox(repo, build)
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
                   ETC_RUNTIME_LIB=os.path.join(build, "runtime", "libetcrt.so"),
                   PYTHONPATH=os.path.join(repo, "python"))
        try:
            for line, text in blocks:
                ran += 1
                where = f"{os.path.relpath(path, repo)}:{line}"
                if PIPE_CUT_SHORT.search(text):
                    failures += 1
                    print(f"FAIL {where}: a pipe cut short (head, grep -m, grep -q) fails at random under "
                          "pipefail; use sed -n 1,Np or grep without -m")
                    continue
                try:
                    r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text], cwd=d, env=env,
                                       capture_output=True, text=True, timeout=LIMIT_S)
                    ok, out = r.returncode == 0, r.stdout + r.stderr
                except subprocess.TimeoutExpired:
                    ok, out = False, f"(ran longer than {LIMIT_S} s)"
                print(f"{'ok  ' if ok else 'FAIL'} {where}")
                if not ok:
                    failures += 1
                    print("  | " + text.rstrip().replace("\n", "\n  | "))
                    print("  output:\n    " + out.rstrip()[-3000:].replace("\n", "\n    "))
        finally:
            shutil.rmtree(d)
    print(f"{ran} documented command blocks, {failures} failed")
    if ran == 0:
        print("no block marked `cpu` found: the docs test tests nothing")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
