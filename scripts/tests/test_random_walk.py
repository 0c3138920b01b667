"""scripts/random-walk.py against the debug navd: random graphs, random walks through the socket,
every step checked by its oracles (mirrors in both forms, dryRun, the tree's shape, the stack a
link built, keyed retries, every navigation answered once; with restarts, what navd acknowledged
survives kill -9)."""
import glob
import importlib.util
import os
import shutil

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("random_walk", os.path.join(HERE, "..", "random-walk.py"))
random_walk = importlib.util.module_from_spec(spec)
spec.loader.exec_module(random_walk)


@pytest.mark.skipif(not os.environ.get("NAVD_BIN"), reason="needs NAVD_BIN (make test-python sets it)")
@pytest.mark.parametrize("first", [0, 5, 10, 15, 20])
def test_random_walks_on_random_graphs_agree_with_the_tree(capsys, first):
    # 25 graphs of seed 11, five at a time, so that the test's workers share them.
    # nav-web's mirror replays the walks too, where node is installed (make test-web installs it).
    js = ["--js-mirror"] if shutil.which("node") else []
    assert random_walk.main(["--navd", os.environ["NAVD_BIN"], "--graphs", "5", "--first-graph", str(first), "--steps", "250",
                             "--seed", "11"] + js) == 0
    assert "every mirror, dryRun and tree agreed" in capsys.readouterr().out


@pytest.mark.skipif(not os.environ.get("NAVD_BIN"), reason="needs NAVD_BIN (make test-python sets it)")
def test_random_walks_where_a_flows_then_replaces_a_guarded_screen(capsys):
    # Random graphs complete few flows whose `then` replaces a guarded screen: this graph makes it
    # common (the screen below flows that continue by replace, and by root from a tab).
    graph = os.path.join(HERE, "graphs", "flow-then-guards")
    assert random_walk.main(["--navd", os.environ["NAVD_BIN"], "--graph", graph, "--walks", "6", "--steps", "300", "--seed", "15"]) == 0
    assert "every mirror, dryRun and tree agreed" in capsys.readouterr().out


@pytest.mark.skipif(not os.environ.get("NAVD_BIN"), reason="needs NAVD_BIN (make test-python sets it)")
def test_random_walks_survive_kill_nine(capsys):
    assert random_walk.main(["--navd", os.environ["NAVD_BIN"], "--graphs", "3", "--walks", "1", "--steps", "200", "--seed", "12",
                             "--restarts"]) == 0
    assert "every mirror, dryRun and tree agreed" in capsys.readouterr().out


@pytest.mark.skipif(not os.environ.get("NAVD_BIN"), reason="needs NAVD_BIN (make test-python sets it)")
@pytest.mark.skipif(not glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), reason="needs PostgreSQL (make deps installs it)")
def test_random_walks_on_a_cluster_node_survive_kill_nine(capsys):
    # The same oracles with navd as a cluster node on PostgreSQL, killed and restarted under its name.
    assert random_walk.main(["--navd", os.environ["NAVD_BIN"], "--graphs", "3", "--walks", "1", "--steps", "200", "--seed", "13",
                             "--restarts", "--cluster"]) == 0
    assert "every mirror, dryRun and tree agreed" in capsys.readouterr().out


@pytest.mark.skipif(not os.environ.get("NAVD_BIN"), reason="needs NAVD_BIN (make test-python sets it)")
@pytest.mark.skipif(not glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), reason="needs PostgreSQL (make deps installs it)")
def test_random_walks_on_two_cluster_nodes_agree(capsys):
    # A subscriber on a second node follows every commit of the first, through graph reloads too.
    assert random_walk.main(["--navd", os.environ["NAVD_BIN"], "--graphs", "3", "--walks", "1", "--steps", "250", "--seed", "14",
                             "--cluster"]) == 0
    assert "every mirror, dryRun and tree agreed" in capsys.readouterr().out


def test_the_link_chain_of_a_visible_path():
    tree = {"root": {"id": "n1", "kind": "tabs", "selected": 0, "children": [
        {"id": "n2", "kind": "stack", "children": [
            {"id": "n3", "kind": "screen", "coordinator": "a.Home", "presented": {"id": "n6", "kind": "stack", "children": [
                {"id": "n4", "kind": "flow", "coordinator": "a.F", "children": [
                    {"id": "n5", "kind": "screen", "coordinator": "a.S1"}, {"id": "n7", "kind": "screen", "coordinator": "a.S2"}]}]}}]}]},
        "visible": ["n1", "n2", "n3", "n6", "n4", "n7"]}
    assert random_walk.link_chain(tree) == ["a.Home", "a.F", "a.S2"]
