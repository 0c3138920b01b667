"""`navd explore --plan` and the pytest plugin's navigation coverage, end to end: the generated
plan runs against live navds (one per sequence, the plugin's way) and the merged coverage report
takes every edge exploration found reachable by facts alone, on the example and on the graph with
planted defects."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def navd_bin():
    return os.environ.get("NAVD_BIN") or os.path.join(ROOT, ".build", "debug", "navd")


def explore(graph, plan_dir, *extra):
    done = subprocess.run([navd_bin(), "explore", graph, "--format", "json", "--plan", str(plan_dir), "--depth", "8",
                           "--max-states", "4000"] + list(extra), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def run_plan(plan_dir, *extra):
    report = plan_dir / "coverage.json"
    lcov = plan_dir / "coverage.lcov"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(plan_dir / "test_navd_plan.py"),
                           "--navd-coverage", "--navd-coverage-json", str(report), "--navd-coverage-lcov", str(lcov)] + list(extra),
                          capture_output=True, text=True, timeout=600, cwd=str(plan_dir),
                          env=dict(os.environ, NAVD_BIN=navd_bin()))
    return done, (json.loads(report.read_text()) if report.exists() else None), lcov


def taken(report):
    return {"%s → %s" % (e["from"], e["to"]) for e in report["edges"] if e["taken"]}


def test_the_plan_takes_every_reachable_edge_of_the_example(tmp_path):
    found = explore(os.path.join(ROOT, "Examples", "shop"), tmp_path)
    assert [f for f in found["findings"] if not f["note"]] == []
    reachable = {"%s → %s" % (e["from"], e["to"]) for e in found["edges"] if e["byFactsAlone"]}
    assert len(reachable) == found["declaredEdges"] == 23
    done, report, lcov = run_plan(tmp_path, "--navd-cov-fail-under=100")
    assert done.returncode == 0, done.stdout + done.stderr
    assert taken(report) == reachable
    assert report["totals"]["edges"] == {"covered": 23, "total": 23}
    # Every route and deep link the plan follows is counted too, and the summary says so.
    assert report["totals"]["routes"]["covered"] == report["totals"]["routes"]["total"]
    assert report["totals"]["links"]["covered"] == report["totals"]["links"]["total"]
    assert "opens edges taken: 23/23 (100.0 %)" in done.stdout
    assert "TOTAL" in done.stdout and lcov.read_text().startswith("TN:navd-merged")


def test_the_plan_of_the_planted_graph_reaches_its_reachable_edges_and_fail_under_fails(tmp_path):
    planted = os.path.join(ROOT, "Tests", "Fixtures", "planted")
    found = explore(planted, tmp_path)
    kinds = {f["kind"] for f in found["findings"] if not f["note"]}
    assert {"unreachable", "deadEnd", "incompleteFlow", "brokenLink", "cycle", "route", "recovery"} <= kinds
    reachable = {"%s → %s" % (e["from"], e["to"]) for e in found["edges"] if e["byFactsAlone"]}
    assert "app.Home → app.Vault" not in reachable and "app.Orphan → app.Deep" not in reachable
    done, report, _ = run_plan(tmp_path, "--navd-cov-fail-under=100")
    # Every sequence passes, every reachable edge is taken, and the unreachable ones fail the bar.
    assert "failed" not in done.stdout.split("\n")[-2], done.stdout
    assert taken(report) == reachable
    assert report["totals"]["edges"]["covered"] == len(reachable) < report["totals"]["edges"]["total"]
    assert done.returncode == 1
    assert "under --navd-cov-fail-under=100" in done.stdout


GRAPH_BEYOND_EDGES = """
root: {tabs: [Home, Other], back: history}
coordinators:
  Home: {opens: [Wizard, Settings]}
  Other: {}
  Settings: {leave: [saved]}
  Wizard: {flow: {steps: [One, Two, Three], result: {type: object, properties: {ok: {type: boolean}}}, then: Done}, presentations: [present]}
  One: {}
  Two: {}
  Three: {}
  Done: {}
preconditions:
  saved: {check: {fact: dirty, notEquals: true}}
"""


def test_the_plan_reaches_what_no_edge_does(tmp_path):
    """Screens no `opens` edge leads to (a flow's steps that declare none, a flow's `then`), a tab
    container's `back:` and a leave guard: the plan has a sequence for each, and the run covers
    the whole graph."""
    graph = tmp_path / "graph"
    graph.mkdir()
    (graph / "app.yaml").write_text(GRAPH_BEYOND_EDGES)
    plan_dir = tmp_path / "plan"
    found = explore(str(graph), plan_dir)
    assert [f for f in found["findings"] if not f["note"]] == []
    names = [s["name"] for s in json.loads((plan_dir / "navd-plan.json").read_text())["sequences"]]
    assert {"back-root", "show-Two", "show-Three", "show-Done", "meet-saved"} <= set(names), names
    done, report, _ = run_plan(plan_dir, "--navd-cov-fail-under=100")
    assert done.returncode == 0, done.stdout + done.stderr
    for part in ["coordinators", "edges", "preconditions", "flows", "tabBacks"]:
        assert report["totals"][part]["covered"] == report["totals"][part]["total"] > 0, (part, report["totals"])
    assert "Everything was exercised." in done.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="gives a folder to another uid (chown)")
def test_the_plan_goes_only_into_a_folder_of_ones_own(tmp_path):
    """test_navd_plan.py runs as whoever runs pytest: a folder another user owns or may write is
    refused (status 64, nothing written), and a link planted under a plan file's name is replaced,
    not followed."""
    shop = os.path.join(ROOT, "Examples", "shop")
    theirs, shared, mine = tmp_path / "theirs", tmp_path / "shared", tmp_path / "mine"
    for d in (theirs, shared, mine):
        d.mkdir()
    os.chown(theirs, 65534, 65534)
    shared.chmod(0o777)
    for folder, why in [(theirs, "belongs to uid 65534"), (shared, "is writable by other users")]:
        done = subprocess.run([navd_bin(), "explore", shop, "--plan", str(folder)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 64 and why in done.stderr, done.stderr
        assert list(folder.iterdir()) == []
    victim = tmp_path / "victim"
    (mine / "test_navd_plan.py").symlink_to(victim)
    explore(shop, mine)
    assert not victim.exists() and not (mine / "test_navd_plan.py").is_symlink()
    assert "run_sequence" in (mine / "test_navd_plan.py").read_text()
