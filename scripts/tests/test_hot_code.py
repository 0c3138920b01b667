"""scripts/hot-code.py on callgrind files written by hand: own costs counted by address (relative
positions followed, a call's inclusive cost left out), lines of 64 bytes, the threshold of once per
two requests."""
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("hot_code", os.path.join(HERE, "..", "hot-code.py"))
hot_code = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hot_code)

CALLGRIND = """# callgrind format
version: 1
positions: instr line
events: Ir Dr
summary: 5430

ob=(1) /bin/navd
fl=(1) ???
fn=(1) hot
0x1000 0 100 1
+4 * 100
+60 * 100
calls=100 0x2000 0
+2 * 5000
+3 * 100
fn=(2) cold
0x3000 0 10
cfn=(1)
calls=1 0x1000 0
* * 20
ob=(2) /lib/libc.so
fn=(3) memcpy
0x10 0 60
"""


def test_own_costs_by_address_without_calls(tmp_path):
    path = tmp_path / "cg.out"
    path.write_text(CALLGRIND)
    own, function_of, names = hot_code.parse(str(path))
    assert own[("1", 0x1000)] == 100 and own[("1", 0x1004)] == 100 and own[("1", 0x1040)] == 100
    assert own[("1", 0x1045)] == 100
    assert ("1", 0x1042) not in own  # the call's inclusive cost, at the call's position
    assert own[("1", 0x3000)] == 10 and function_of[("1", 0x3000)] == "2"
    assert own[("2", 0x10)] == 60 and names["fn"]["3"] == "memcpy" and names["ob"]["2"] == "/lib/libc.so"


def test_lines_run_once_per_two_requests(tmp_path, capsys, monkeypatch):
    path = tmp_path / "cg.out"
    path.write_text(CALLGRIND)
    monkeypatch.setattr("sys.argv", ["hot-code.py", str(path), "100", "5"])
    hot_code.main()
    out = capsys.readouterr().out
    # 0x1000, 0x1004 (line 64), 0x1040, 0x1045 (line 65) and memcpy's 0x10: cold (10 runs) is not.
    assert "5 instructions in 3 lines of 64 bytes (0.2 KiB)" in out, out
    assert "    2 lines  /bin/navd" in out and "    1 lines  /lib/libc.so" in out, out
    assert "     2.0  hot" in out and "cold" not in out, out


def test_one_position_column(tmp_path):
    path = tmp_path / "cg.out"
    path.write_text("positions: instr\nevents: Ir\nob=(1) /x\nfn=(1) f\n0x40 7\n+1 8\n")
    own, _, _ = hot_code.parse(str(path))
    assert own[("1", 0x40)] == 7 and own[("1", 0x41)] == 8
