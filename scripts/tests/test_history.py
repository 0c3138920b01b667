"""The history checker (scripts/history.py) on histories made by hand: a valid one passes, and each
property it promises is broken once to see it reported."""
import copy
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import history  # noqa: E402

LEASE = 1.0


def tabs(selected):
    return {"id": "n1", "kind": "tabs", "selected": selected, "children": [
        {"id": "n2", "kind": "stack", "children": [{"id": "n4", "kind": "screen", "coordinator": "shop.Home"}]},
        {"id": "n3", "kind": "stack", "children": [{"id": "n5", "kind": "screen", "coordinator": "cart.Cart"}]}]}


def select(index):
    return [{"op": "select", "parent": "n1", "index": index}]


def valid():
    """Three ops on session s (versions 1-3: tabs 1, 0, 1), a subscriber that hears all of them,
    a second that hears 1 then a snapshot at 3, final trees from a node and PostgreSQL."""
    h = []
    t = 0.0
    for v, sel in [(1, 1), (2, 0), (3, 1)]:
        h.append({"t": "op", "s": "s", "k": "s-%d" % v, "invoke": t, "at": t + 0.1, "outcome": "ok", "v": v,
                  "visible": ["n1", "n3" if sel else "n2"], "answers": [[v, "x%d" % v]]})
        t += 0.2
    h.append({"t": "sub", "id": "a", "s": "s", "v": 0, "root": tabs(0), "at": 0.0})
    h.append({"t": "sub", "id": "b", "s": "s", "v": 0, "root": tabs(0), "at": 0.0})
    for v, sel in [(1, 1), (2, 0), (3, 1)]:
        h.append({"t": "note", "id": "a", "s": "s", "v": v, "changes": select(sel), "at": v * 0.2})
    h.append({"t": "note", "id": "b", "s": "s", "v": 1, "changes": select(1), "at": 0.2})
    h.append({"t": "note", "id": "b", "s": "s", "v": 3, "changes": [{"op": "reset", "root": tabs(1), "removed": []}], "at": 0.7})
    h.append({"t": "final", "id": "a", "s": "s", "v": 3, "at": 1.0})
    h.append({"t": "final", "id": "b", "s": "s", "v": 3, "at": 1.0})
    for src in ["A.sock", "PostgreSQL"]:
        h.append({"t": "tree", "s": "s", "v": 3, "root": tabs(1), "visible": ["n1", "n3"], "source": src, "at": 1.0})
    return h


def problems(h):
    return history.check(h, LEASE)[0]


def test_a_valid_history_passes():
    violations, figures = history.check(valid(), LEASE)
    assert violations == []
    assert figures["acknowledged"] == 3 and figures["notifications"] == 5 and figures["snapshots"] == 1


def test_a_version_acknowledged_twice_is_reported():
    h = valid()
    h[1]["v"] = 1
    assert any("acknowledged twice" in p for p in problems(h))


def test_versions_going_back_in_real_time_are_reported():
    h = valid()
    h[1]["v"], h[2]["v"] = 3, 2
    assert any("before it was sent" in p for p in problems(h))


def test_a_key_answered_differently_is_reported():
    h = valid()
    h[0]["answers"].append([4, "other"])
    assert any("answered differently" in p for p in problems(h))


def test_a_lost_acknowledged_change_is_reported():
    h = [r for r in valid() if r["t"] != "tree"]
    for src in ["A.sock", "PostgreSQL"]:
        h.append({"t": "tree", "s": "s", "v": 2, "root": tabs(0), "visible": ["n1", "n2"], "source": src, "at": 1.0})
    assert any("was lost" in p for p in problems(h))


def test_nodes_disagreeing_on_the_final_tree_are_reported():
    h = valid()
    h[-1] = dict(h[-1], root=tabs(0))
    assert any("final trees differ" in p for p in problems(h))


def test_a_gap_without_a_snapshot_is_reported():
    h = valid()
    snap = next(r for r in h if r["t"] == "note" and r["id"] == "b" and r["v"] == 3)
    snap["changes"] = select(1)
    assert any("version 3 after version 1 without a snapshot" in p for p in problems(h))


def test_a_repeated_version_is_reported():
    h = valid()
    i = next(i for i, r in enumerate(h) if r["t"] == "note" and r["id"] == "a" and r["v"] == 2)
    h.insert(i + 1, copy.deepcopy(h[i]))
    assert any("version 2 after version 2" in p for p in problems(h))


def test_a_fork_is_reported():
    h = valid()
    # Subscription b hears a different change as version 1 (tab 0 stays selected: another node's
    # version 1).
    note = next(r for r in h if r["t"] == "note" and r["id"] == "b" and r["v"] == 1)
    note["changes"] = [{"op": "push", "parent": "n2", "node": {"id": "n9", "kind": "screen", "coordinator": "shop.Product"}}]
    assert any("fork at version 1" in p for p in problems(h))


def test_a_subscriber_left_behind_is_reported():
    h = [r for r in valid() if not (r["t"] == "note" and r["id"] == "a" and r["v"] == 3)]
    assert any("ended at version 2" in p for p in problems(h))


def test_unavailability_beyond_two_leases_is_reported_unless_postgresql_was_down():
    h = valid()
    h += [{"t": "attempt", "s": "s", "kind": "Timeout", "invoke": 10.0 + i * 0.5, "at": 10.5 + i * 0.5} for i in range(6)]
    h.append({"t": "op", "s": "s", "k": "s-4", "invoke": 10.0, "at": 13.2, "outcome": "ok", "v": 4, "answers": [[4, "y"]]})
    for r in h:
        if r["t"] == "tree":
            r["v"] = 4
    h = [r for r in h if r["t"] != "final"]
    assert any("could not be changed for 3.20 s" in p for p in problems(h))
    h.append({"t": "fault", "kind": "pg-restart", "at": 9.9, "until": 11.0})
    assert not any("could not be changed" in p for p in problems(h))
