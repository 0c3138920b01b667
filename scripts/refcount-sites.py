#!/usr/bin/env python3
"""refcount-sites.py — where a request's reference counting runs, by calling function.

    python3 scripts/refcount-sites.py CALLGRIND_FILE BINARY REQUESTS [FUNCTIONS]

Reads a callgrind file written with --dump-instr=yes (``scripts/instructions.sh`` with ``RC=1``)
and the binary it counted: each call of the Swift runtime's retain and release functions
(`swift_nonatomic_retain`, `swift_bridgeObjectRelease`, …) found in the binary's code, times the
number of times that call instruction ran, divided by REQUESTS. Prints the calls per request in
all, then the FUNCTIONS (default 40) functions that make the most, with how many of each kind.
A compiler-made `destroy for T` is the value of type T being dropped: its fields released.

callgrind's own caller tree says how often the runtime function was entered from each caller; this
says from which call instruction, so that a function's several sites (and those of functions inlined
into it) are told apart when read beside `objdump -dl` of a build with line tables
(``PROFILE=1``). BENCHMARKS.md "Where a request's reference counting is" has what it found.
"""

import collections
import importlib.util
import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("hot_code", HERE / "hot-code.py")
hot_code = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hot_code)

FUNCTION = re.compile(r"^([0-9a-f]+) <(.+)>:$")
CALL = re.compile(r"^\s*([0-9a-f]+):\s+(?:call|jmp)\w*\s+\S+ <(swift_(?:nonatomic_)?(?:unknownObject|bridgeObject)?(?:[Rr]etain|[Rr]elease)(?:_n)?)(?:@plt)?>")


def disassemble(binary):
    return subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], capture_output=True, text=True, check=True).stdout


def sites(disassembly):
    """Each call of a retain or release in `objdump -d`'s text: (address, calling function, runtime
    function). The runtime's own functions, which call each other, are left out."""
    function = None
    for line in disassembly.splitlines():
        m = FUNCTION.match(line)
        if m:
            function = m.group(2)
            continue
        m = CALL.match(line)
        if m and function is not None and not function.startswith("swift_"):
            yield int(m.group(1), 16), function, m.group(2)


def demangled(names):
    out = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
    return dict(zip(names, out)) if len(out) == len(names) else {n: n for n in names}


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    path, binary, requests = sys.argv[1], sys.argv[2], int(sys.argv[3])
    top = int(sys.argv[4]) if len(sys.argv) > 4 else 40
    own, _, names = hot_code.parse(path)
    # The binary's own object in the callgrind file (its path ends with the binary's name).
    objects = [ob for ob, name in names["ob"].items() if name.endswith("/" + pathlib.Path(binary).name)]
    ran = {address: count for (ob, address), count in own.items() if ob in objects}
    by_function = collections.defaultdict(collections.Counter)
    for address, function, runtime in sites(disassemble(binary)):
        count = ran.get(address, 0)
        if count:
            kind = "retain" if "etain" in runtime else "release"
            by_function[function][kind] += count / requests
    total = collections.Counter()
    for kinds in by_function.values():
        total.update(kinds)
    print(f"reference counting per request: {total['release']:.1f} releases, {total['retain']:.1f} retains "
          f"(calls of the runtime, from {len(by_function)} functions)")
    readable = demangled(list(by_function))
    print("releases retains  function")
    ranked = sorted(by_function.items(), key=lambda item: -(item[1]["release"] + item[1]["retain"]))
    for function, kinds in ranked[:top]:
        print(f"{kinds['release']:8.2f} {kinds['retain']:7.2f}  {readable.get(function, function)[:120]}")


if __name__ == "__main__":
    main()
