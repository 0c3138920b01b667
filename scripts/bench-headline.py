#!/usr/bin/env python3
"""Rewrites BENCHMARKS.md's headline table (between its `headline:begin` and `headline:end`
markers) from the rows `make bench` wrote (`HEADLINE=1 make bench` calls it), with the machine,
the commit and the date, so that the table is never copied by hand.

    scripts/bench-headline.py ROWS.md RUNS DUR
"""
import datetime
import os
import platform
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DOC = os.path.join(ROOT, "BENCHMARKS.md")
BEGIN, END = "<!-- headline:begin -->", "<!-- headline:end -->"


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kib = int(next(line.split()[1] for line in f if line.startswith("MemTotal")))
            mem = ", %.0f GiB" % (kib / 1024 / 1024)
    except (OSError, StopIteration, ValueError):
        pass
    return "%d × %s%s, Linux %s" % (os.cpu_count() or 0, model, mem, platform.release())


def commit():
    def git(*args):
        # Only the last newline goes: `git status --porcelain` starts a line with a space.
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.rstrip("\n")
    c = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = [line[3:] for line in git("status", "--porcelain", "--untracked-files=no").splitlines()]
    return c + (" with uncommitted changes to " + ", ".join(changed) if changed else "")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    rows_file, runs, dur = sys.argv[1:]
    with open(rows_file) as f:
        rows = f.read().strip()
    if not rows:
        sys.exit("bench-headline: %s holds no rows (did the side-by-side runs happen?)" % rows_file)
    text = open(DOC).read()
    if BEGIN not in text or END not in text:
        sys.exit("bench-headline: BENCHMARKS.md has no %s … %s markers" % (BEGIN, END))
    block = "\n".join([
        BEGIN,
        "Written by `HEADLINE=1 make bench` (scripts/bench-headline.py); do not edit by hand.",
        "Commit %s, %s, %s; median of %s runs of %s s per cell; servers on cpu0, load generators on cpu1."
        % (commit(), machine(), datetime.date.today().isoformat(), runs, dur),
        "",
        rows,
        END,
    ])
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    with open(DOC, "w") as f:
        f.write(head + block + tail)
    print("bench-headline: rewrote BENCHMARKS.md's headline table (commit %s)" % commit())


if __name__ == "__main__":
    main()
