"""The Python client and its pytest plugin against a real navd (started per test by the plugin)."""

import json
import os
import socket
import threading

import pytest

import navd_client
from navd_client import (Cancelled, Client, ConnectError, InvalidParams, InvalidSetup, NavdError, NotAllowed,
                         PreconditionFailed, Provider, Timeout, TreeMirror, UnknownTarget, expand)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def write_graph(tmp_path, text):
    d = tmp_path / "graph"
    d.mkdir()
    (d / "app.yaml").write_text(text)
    return str(d)


def test_call_and_typed_errors(navd_client):
    assert navd_client.ping() == "pong"
    r = navd_client.navigate("shop.Product", with_={"id": "p1"})
    assert r["version"] == 1 and r["node"] == r["visible"][-1]
    with pytest.raises(InvalidSetup) as e:
        navd_client.navigate("shop.Product", with_={"id": ""})
    assert e.value.code == -32002 and e.value.kind == "invalidSetup" and e.value.data["pointer"] == "/id"
    with pytest.raises(UnknownTarget) as e:
        navd_client.navigate("shop.Prodcut")
    assert "did you mean `shop.Product`" in e.value.message
    with pytest.raises(NotAllowed):
        navd_client.navigate("account.Orders")
    with pytest.raises(InvalidParams) as e:
        navd_client.call("navigate", {"to": 5})
    assert isinstance(e.value, NavdError) and e.value.data["param"] == "to"
    with pytest.raises(NavdError) as e:
        navd_client.call("no.such.method")
    assert e.value.kind == "methodNotFound" and e.value.code == -32601


def test_mirror_follows_every_change_of_another_client(navd):
    watcher, driver = navd.client(), navd.client()
    tree = watcher.subscribe()
    assert tree.path == ["shop.Home"] and tree.version == 0
    driver.set_facts(loggedIn=True, **{"cart.items": 2})
    driver.navigate("shop.Product", with_={"id": "p7"})
    driver.navigate("shop.Reviews")
    driver.dismiss()
    driver.navigate(route="account")
    driver.navigate("account.Orders")
    driver.call("update", node=driver.tree().top["id"], with_={})
    driver.open("/product/p9")
    driver.call("reset")
    for _ in range(8):
        watcher.wait_for("stackChanged")
    # The mirror, kept current from stackChanged alone, equals a fresh snapshot.
    fresh = driver.tree()
    assert tree.version == fresh.version == 8
    assert tree.root == fresh.root and tree.visible == fresh.visible


def test_the_mirror_replays_the_shared_change_fixtures():
    """Tests/Fixtures/changes.json (recorded from a real navd by scripts/change-fixtures.py), which
    the Swift mirror and nav-web's page replay too: after every change the mirror is navd's tree."""
    with open(os.path.join(ROOT, "Tests/Fixtures/changes.json")) as f:
        cases = json.load(f)["cases"]
    assert len(cases) >= 2
    for case in cases:
        mirror = TreeMirror(case["snapshot"])
        for change in case["stackChanged"]:
            assert mirror.apply(change), change["version"]
        final = case["final"]
        assert (mirror.version, mirror.root, mirror.visible) == (final["version"], final["root"], final["visible"]), case["name"]
        # The same commits heard in the compact form: each expands to the full notification, and
        # a mirror fed them reaches the same tree.
        snapshot = case["compactSnapshot"]
        assert snapshot["notifications"] == "compact" and isinstance(snapshot["ref"], int)
        assert len(case["compactStackChanged"]) == len(case["stackChanged"])
        compact = TreeMirror(snapshot)
        for heard, full in zip(case["compactStackChanged"], case["stackChanged"]):
            assert heard[0] == snapshot["ref"]
            assert expand(heard, snapshot["session"]) == full
            assert compact.apply(expand(heard, snapshot["session"]))
        assert (compact.version, compact.root, compact.visible) == (final["version"], final["root"], final["visible"]), case["name"]


def test_a_compact_subscriber_hears_the_same_commits(navd):
    """hello {notifications: "compact"}: navd sends stackChanged as arrays, the client hands them on
    in the full form, and its mirror stays navd's tree."""
    with navd.client() as driver, navd.client() as full, navd.client(notifications="compact") as compact:
        full_tree = full.subscribe()
        compact_tree = compact.subscribe()
        assert list(compact.refs.values()) == ["main"]
        driver.navigate("shop.Product", with_={"id": "p1"}, hints={"animated": True})
        driver.navigate("shop.Reviews")
        driver.dismiss()
        heard_full = [full.wait_for("stackChanged") for _ in range(3)]
        heard_compact = [compact.wait_for("stackChanged") for _ in range(3)]
        for a, b in zip(heard_full, heard_compact):
            assert b["session"] == "main" and b["version"] == a["version"] and b["visible"] == a["visible"]
            assert [{k: v for k, v in ch.items() if k != "hints"} for ch in a["changes"]] == b["changes"]
        assert heard_full[0]["hints"] == heard_compact[0]["hints"] == {"animated": True}
        fresh = driver.tree()
        for t in (full_tree, compact_tree):
            assert (t.version, t.root, t.visible) == (fresh.version, fresh.root, fresh.visible)
        assert compact.call("subscribe", notifications="full")["notifications"] == "full"
        with pytest.raises(InvalidParams, match="\"full\" or \"compact\""):
            compact.call("subscribe", notifications="tiny")


def test_a_mirror_of_a_closed_session_is_marked_closed(navd):
    with navd.client() as driver, navd.client(notifications="compact") as watcher:
        driver.call("session.open", name="kiosk")
        tree = watcher.subscribe(session="kiosk")
        driver.navigate("shop.Product", with_={"id": "p1"}, session="kiosk")
        driver.call("session.close", name="kiosk")
        assert watcher.wait_for("sessionClosed") == {"session": "kiosk", "version": 1}
        assert tree.closed and tree.version == 1 and tree.path[-1] == "shop.Product"
        assert "kiosk" not in watcher.mirrors and "kiosk" not in watcher.refs.values()
        # Opened again under the name, the session starts over; the old mirror stays as it was.
        driver.call("session.open", name="kiosk")
        driver.navigate("shop.Product", with_={"id": "p2"}, session="kiosk")
        assert watcher.ping() == "pong" and tree.version == 1 and tree.closed


def test_the_change_fixtures_are_what_navd_sends():
    """The fixtures are navd's own: recorded again, they are the same (else run scripts/change-fixtures.py)."""
    import subprocess
    import sys
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts/change-fixtures.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_mirror_gap_is_refused():
    t = TreeMirror({"session": "main", "version": 3, "root": {"id": "n1", "kind": "stack", "children": []}, "visible": ["n1"]})
    assert not t.apply({"session": "main", "version": 3, "changes": [], "visible": []})
    with pytest.raises(navd_client.OutOfStep):
        t.apply({"session": "main", "version": 5, "changes": [], "visible": []})


def test_pending_navigation_notifications_and_cancel(navd_client):
    tree = navd_client.subscribe()
    navd_client.navigate(route="account")
    rid = navd_client.send("navigate", route="orders")
    pending = navd_client.wait_for("navigationPending")
    assert pending["waitingFor"] == "account.loggedIn" and pending["flow"]["coordinator"] == "account.Login"
    assert tree.top["coordinator"] == "account.Credentials"
    assert navd_client.cancel(pending["navigation"])
    with pytest.raises(Cancelled):
        navd_client.reply(rid)


def test_provider_helper_answers_on_its_own_thread(navd, tmp_path):
    asked = []

    def authorize(request):
        asked.append(request["precondition"])
        return True

    c = navd.client()
    c.set_facts(loggedIn=True, **{"cart.items": 2})
    with Provider(navd.socket, {"cart.paymentAuthorized": authorize}):
        c.navigate("cart.Cart", by="select")
        flow = c.navigate("cart.Checkout", by="present")["node"]
        c.navigate("cart.Payment")
        c.navigate("cart.Confirm", with_={"total": 12.5})
        done = c.flow_complete(flow, result={"orderId": "ord-7"})
    assert asked == ["cart.paymentAuthorized"] and flow in done["removed"]


def test_a_name_the_graph_never_asks_for_is_warned_about(navd):
    with navd.client() as c:
        with pytest.warns(UserWarning, match="asks no client for shop.paymentAuthorised"):
            result = c.provide({"shop.paymentAuthorised": lambda request: True})
        assert result["notAsked"] == ["shop.paymentAuthorised"]


def test_provider_refusal_is_precondition_failed(navd):
    c = navd.client()
    c.set_facts(loggedIn=True, **{"cart.items": 2})
    with Provider(navd.socket, {"cart.paymentAuthorized": lambda r: "card declined"}):
        c.navigate("cart.Cart", by="select")
        c.navigate("cart.Checkout", by="present")
        with pytest.raises(PreconditionFailed) as e:
            c.navigate("cart.Payment")
    assert e.value.data["precondition"] == "cart.paymentAuthorized" and "card declined" in e.value.data["reason"]


def test_provider_named_unqualified_evaluates_and_recovers(tmp_path, request):
    graph = write_graph(tmp_path, "module: app\nroot: {stack: Home}\ncoordinators:\n  Home: {opens: [Vault, Safe]}\n"
                        "  Vault: {preconditions: [vault]}\n  Safe: {preconditions: [safe]}\npreconditions:\n"
                        "  vault: {provider: true, recover: {provider: vault}}\n"
                        "  safe: {provider: true, recover: {provider: locksmith}}\n")
    from navd_client.pytest_plugin import Navd
    d = Navd(request.config.getoption("--navd-binary") or os.environ["NAVD_BIN"], graph)
    asked, unlocked = [], set()

    def answer(r):
        asked.append((r["precondition"], r.get("provider")))
        if "provider" in r or (r["precondition"] == "app.vault" and len(asked) == 2):
            unlocked.add(r["precondition"])  # a recovery
            return True
        return r["precondition"] in unlocked

    try:
        # Named as in the graph ("vault", not "app.vault"): navd asks by the qualified name.
        with Provider(d.socket, {"vault": answer, "locksmith": answer, "app.safe": answer}), d.client() as c:
            assert c.navigate("app.Vault")["version"] == 1
            c.dismiss()
            assert c.navigate("app.Safe")["version"] == 3
    finally:
        assert d.stop() == 0
    assert asked == [("app.vault", None), ("app.vault", None), ("app.vault", None),
                     ("app.safe", None), ("app.safe", "locksmith"), ("app.safe", None)]


def test_graph_marker_serves_that_graph(tmp_path, request):
    graph = write_graph(tmp_path, "module: app\nroot: {stack: Home}\ncoordinators:\n  Home: {opens: [Detail]}\n  Detail: {}\n")
    from navd_client.pytest_plugin import Navd
    d = Navd(request.config.getoption("--navd-binary") or os.environ["NAVD_BIN"], graph)
    try:
        with d.client() as c:
            assert c.navigate("app.Detail")["version"] == 1
            assert c.tree().stack == ["app.Home", "app.Detail"]
    finally:
        assert d.stop() == 0
    assert "navd listening" in d.log


def test_a_bad_graph_is_reported_with_navds_diagnostic(tmp_path, request):
    graph = write_graph(tmp_path, "module: app\nroot: {stack: Hom}\ncoordinators:\n  Home: {}\n")
    from navd_client.pytest_plugin import Navd
    with pytest.raises(RuntimeError) as e:
        Navd(request.config.getoption("--navd-binary") or os.environ["NAVD_BIN"], graph)
    assert "did you mean `app.Home`" in str(e.value)


def test_timeouts_and_connect_errors(navd_client, tmp_path):
    with pytest.raises(Timeout):
        navd_client.next_notification(timeout=0.2)
    with pytest.raises(ConnectError) as e:
        Client(str(tmp_path / "nobody.sock"))
    assert "cannot connect to navd" in str(e.value)


def test_notifications_arriving_during_a_call_are_queued(navd):
    a, b = navd.client(), navd.client()
    a.subscribe()
    b.navigate("shop.Product", with_={"id": "p1"})
    assert a.ping() == "pong"  # the stackChanged is read while waiting for this reply
    assert len(a.notifications) == 1 and a.next_notification()["method"] == "stackChanged"


def test_readme_shows_the_example_that_runs():
    readme = open(os.path.join(ROOT, "README.md")).read()
    example = open(os.path.join(ROOT, "Clients", "python", "examples", "test_example.py")).read()
    assert example.strip() in readme, "README's pytest example must be Clients/python/examples/test_example.py"


def test_peer_options_existing_merge_open_push(navd_client):
    """The options that came from other routers, through the Python client's named arguments."""
    p1 = navd_client.navigate("shop.Product", with_={"id": "p1"})
    # existing="top": the product on top is kept, its params replaced (one update, same node).
    kept = navd_client.navigate("shop.Product", with_={"id": "p2"}, existing="top")
    assert kept["node"] == p1["node"] and kept["version"] == 2
    # merge=True: fields merged into the params of the screen found.
    navd_client.navigate("shop.Product", with_={"ref": "mail"}, existing="top", merge=True)
    reviews = navd_client.navigate("shop.Reviews")
    assert reviews["version"] == 4
    # dismiss(result=…, merge=True): the result stays in the params of the screen below.
    navd_client.dismiss(result={"ref": "review"}, merge=True)
    tree = navd_client.tree()
    assert tree.node(p1["node"])["params"] == {"id": "p2", "ref": "review"}
    # open(by="push"): only the link's last screen, pushed from the visible product.
    opened = navd_client.open("/product/p9", by="push")
    assert navd_client.tree().node(opened["node"])["params"] == {"id": "p9"}
    # existing="pop": the nearest product screen (Product declares no identity) takes the params.
    back = navd_client.navigate("shop.Product", with_={"id": "p10"}, existing="pop")
    assert back["node"] == opened["node"] and back["visible"][-1] == opened["node"]
    assert navd_client.tree().node(opened["node"])["params"] == {"id": "p10"}
    with pytest.raises(InvalidParams) as e:
        navd_client.navigate("shop.Product", with_={"id": "p3"}, existing="sometimes")
    assert e.value.data["param"] == "existing"


def test_a_mirror_follows_the_tab_history(request, tmp_path):
    """Tabs with ``back: history``: the history the select changes carry keeps a mirror equal to the tree."""
    graph = write_graph(tmp_path, "module: app\nroot: {tabs: [A, B, C], back: history}\ncoordinators:\n  A: {}\n  B: {}\n  C: {}\n")
    from navd_client.pytest_plugin import Navd
    d = Navd(request.config.getoption("--navd-binary") or os.environ["NAVD_BIN"], graph)
    try:
        with d.client() as c, d.client() as watcher:
            mirror = watcher.subscribe()
            for tab in ["app.B", "app.C", "app.A"]:
                c.navigate(tab, by="select")
            c.dismiss()
            assert c.tree().root["history"] == [1]
            c.dismiss()
            tree = c.tree()
            assert tree.root["selected"] == 1 and "history" not in tree.root
            while mirror.version < tree.version:
                watcher.next_notification()
            assert mirror.root == tree.root
    finally:
        assert d.stop() == 0


def test_replacements_run_leave_guards_unless_forced(request, tmp_path):
    """reset/open/navigate by replace or root run the leave guards of what they remove; force skips them."""
    graph = write_graph(tmp_path, "module: app\nroot: {stack: Home}\ncoordinators:\n  Home: {opens: [Editor]}\n"
                                  "  Editor: {leave: [saved]}\npreconditions:\n  saved: {check: {fact: saved, equals: true}}\n")
    from navd_client.pytest_plugin import Navd
    d = Navd(request.config.getoption("--navd-binary") or os.environ["NAVD_BIN"], graph)
    try:
        with d.client() as c:
            c.navigate("app.Editor")
            with pytest.raises(PreconditionFailed):
                c.reset()
            with pytest.raises(PreconditionFailed):
                c.navigate("app.Home", by="root")
            assert c.reset(force=True)["version"] == 2
    finally:
        assert d.stop() == 0


def test_pushed_params_and_a_link_with_pop_up_to(navd_client):
    """update(push=True) keeps the earlier params, which dismiss restores; open(by="push", pop_up_to=…)."""
    node = navd_client.navigate("shop.Product", with_={"id": "p1"})["node"]
    navd_client.update(node, with_={"id": "p2"}, push=True)
    top = navd_client.tree().top
    assert top["params"] == {"id": "p2"} and top["paramsHistory"] == [{"id": "p1"}]
    assert navd_client.dismiss()["removed"] == []
    top = navd_client.tree().top
    assert top["id"] == node and top["params"] == {"id": "p1"} and "paramsHistory" not in top
    navd_client.navigate("shop.Product", with_={"id": "p3"})
    navd_client.open("/product/p9", by="push", pop_up_to="shop.Home")
    assert navd_client.tree().stack == ["shop.Home", "shop.Product"] and navd_client.tree().top["params"] == {"id": "p9"}


def test_a_connection_closed_by_client_kill_raises_why(navd):
    # navd tells a client why it closes its connection (an error with id null) before closing it:
    # the client raises that error, not a bare end of the stream.
    watcher, admin = navd.client(), navd.client()
    watcher.subscribe()
    mine = watcher.call("hello", client="watcher")["connection"]
    listed = {e["id"]: e for e in admin.call("client.list")["clients"]}
    assert listed[mine]["client"] == "watcher" and listed[mine]["subscribedTo"] == ["main"]
    assert admin.call("client.kill", connection=mine) == {"closed": mine}
    with pytest.raises(NavdError) as e:
        watcher.next_notification(timeout=5)
    assert e.value.kind == "disconnected" and e.value.code == -32600 and e.value.data["by"] == admin.call("hello")["connection"]


def test_the_default_socket_path_ignores_a_relative_runtime_directory(monkeypatch):
    """As navd and navctl choose it: an empty or relative XDG_RUNTIME_DIR is not a runtime directory."""
    monkeypatch.delenv("NAVD_SOCKET", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    assert navd_client.client.default_socket_path() == "/run/user/1000/navd.sock"
    for relative in ["", "run/user/1000"]:
        monkeypatch.setenv("XDG_RUNTIME_DIR", relative)
        assert navd_client.client.default_socket_path() == "/tmp/navd-%d.sock" % os.getuid()
