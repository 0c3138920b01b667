"""scripts/refcount-sites.py on a callgrind file and a disassembly written by hand: each retain or
release call instruction counted as often as it ran, by the function it is in, per request; the
runtime's own calls and other objects left out."""
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("refcount_sites", os.path.join(HERE, "..", "refcount-sites.py"))
refcount = importlib.util.module_from_spec(spec)
spec.loader.exec_module(refcount)

CALLGRIND = """positions: instr
events: Ir
ob=(1) /tmp/w/navd
fn=(1) $s4main4plan
0x1000 100
0x1005 100
0x100a 50
fn=(2) swift_nonatomic_release
0x2000 300
ob=(2) /lib/libc.so
fn=(3) memcpy
0x1000 999
"""

DISASSEMBLY = """
/tmp/w/navd:     file format elf64-x86-64

Disassembly of section .text:

0000000000001000 <$s4main4plan>:
    1000:	call   2000 <swift_nonatomic_release>
    1005:	call   3000 <swift_nonatomic_bridgeObjectRetain>
    100a:	jmp    2000 <swift_nonatomic_release>
    100f:	call   4000 <memcpy@plt>

0000000000002000 <swift_nonatomic_release>:
    2000:	call   2100 <swift_nonatomic_release_dealloc>
"""


def test_calls_by_site_per_request(tmp_path, capsys, monkeypatch):
    path = tmp_path / "cg.out"
    path.write_text(CALLGRIND)
    monkeypatch.setattr(refcount, "disassemble", lambda binary: DISASSEMBLY)
    monkeypatch.setattr(refcount, "demangled", lambda names: {n: "plan" for n in names})
    monkeypatch.setattr("sys.argv", ["refcount-sites.py", str(path), "/tmp/w/navd", "50"])
    refcount.main()
    out = capsys.readouterr().out
    # Releases at 0x1000 (100 runs) and 0x100a (50, a tail call): 3 a request; the retain 2. Not the
    # runtime's own call at 0x2000, nor libc's instruction at the same address as the first.
    assert "3.0 releases, 2.0 retains (calls of the runtime, from 1 functions)" in out, out
    assert "    3.00    2.00  plan" in out, out


def test_sites_name_the_runtime_function():
    found = list(refcount.sites(DISASSEMBLY))
    assert found == [(0x1000, "$s4main4plan", "swift_nonatomic_release"),
                     (0x1005, "$s4main4plan", "swift_nonatomic_bridgeObjectRetain"),
                     (0x100a, "$s4main4plan", "swift_nonatomic_release")]
