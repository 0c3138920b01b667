#!/usr/bin/env python3
"""hot-code.py — the code a request runs, from a callgrind file written with --dump-instr=yes.

    python3 scripts/hot-code.py CALLGRIND_FILE REQUESTS [FUNCTIONS]

Counts the 64-byte lines of code holding an instruction run at least once per two requests (the
benchmark's pairs alternate navigate and dismiss): what the processor's first-level instruction
cache (32 KiB on the machines navd is measured on) must hold for the request path to run without
missing it. Prints the total, the lines of each object file, and the FUNCTIONS (default 0)
holding the most lines (a line shared by several functions counts a share to each).
``scripts/instructions.sh`` runs it with ``CODE=1``; BENCHMARKS.md "The instruction cache and the
durable cell" has what it found.
"""

import collections
import re
import sys

NAME = re.compile(r"^(c?ob|c?fn|c?fi|c?fe|c?fl)=\((\d+)\)(?: (.*))?$")


def parse(path):
    """Own instruction counts by (object id, address), each address's function, and the names."""
    own = collections.Counter()
    function_of = {}
    names = {"ob": {}, "fn": {}}
    ob = fn = None
    last = 0
    positions = 1  # columns before the costs: `positions: instr line` (callgrind's --dump-instr) has two
    after_calls = False  # the cost line after `calls=` is the call's inclusive cost: not own
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            m = NAME.match(line)
            if m:
                key, ident, name = m.groups()
                kind = key.lstrip("c") if key in ("cob", "cfn") else key
                if name is not None and kind in names:
                    names[kind][ident] = name
                if key == "ob":
                    ob = ident
                elif key == "fn":
                    fn = ident
                continue
            if line.startswith("positions:"):
                positions = len(line.split()) - 1
                continue
            if line.startswith("calls="):
                after_calls = True
                continue
            if line[0] not in "0123456789+-*":
                continue
            fields = line.split()
            position = fields[0]
            if position.startswith("0x"):
                address = int(position, 16)
            elif position[0] in "+-":
                step = int(position[1:], 0)
                address = last + step if position[0] == "+" else last - step
            elif position == "*":
                address = last
            else:
                address = int(position)
            last = address
            if after_calls:
                after_calls = False
                continue
            own[(ob, address)] += int(fields[positions]) if len(fields) > positions else 0  # Ir, the first event
            function_of[(ob, address)] = fn
    return own, function_of, names


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    path, requests = sys.argv[1], int(sys.argv[2])
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    own, function_of, names = parse(path)
    hot = [key for key, count in own.items() if count * 2 >= requests]
    lines = collections.defaultdict(set)
    for ob, address in hot:
        lines[(ob, address // 64)].add(function_of[(ob, address)])
    print(f"code run at least once per two requests: {len(hot)} instructions in {len(lines)} lines "
          f"of 64 bytes ({len(lines) * 64 / 1024:.1f} KiB)")
    by_object = collections.Counter(names["ob"].get(ob, ob) for ob, _ in lines)
    for name, count in by_object.most_common():
        print(f"  {count:5d} lines  {name}")
    if top:
        by_function = collections.Counter()
        for functions in lines.values():
            for fn in functions:
                by_function[fn] += 1 / len(functions)
        print("functions holding the most of those lines:")
        for fn, count in by_function.most_common(top):
            print(f"  {count:6.1f}  {names['fn'].get(fn, fn)[:140]}")


if __name__ == "__main__":
    main()
