"""Runs a test plan made by ``navd explore --plan DIR`` (``navd-plan.json``): each sequence in a
fresh session of its own, each step after setting the facts it needs, with a provider answering
the provider preconditions as the step says, checking the coordinator on top after it.

    from navd_client.plan import run_sequence

    def test_sequence(navd, navd_client, sequence):   # parametrized over PLAN["sequences"]
        run_sequence(navd, navd_client, sequence)
"""

from . import NavdError, Provider


def describe(step):
    """A step as a short text: ``navigate shop.Product (push)``."""
    p = step.get("params", {})
    what = p.get("to") or p.get("url") or p.get("flow") or ""
    by = " (%s)" % p["by"] if "by" in p else ""
    return ("%s %s%s" % (step.get("method"), what, by)).strip()


def run_sequence(navd, client, sequence, session=None, token=None):
    """Runs ``sequence`` (one of the plan's ``sequences``) on ``client`` in session ``session``
    (default: ``plan-<name>``, opened fresh: node ids in the plan are those of a fresh session);
    ``token``: given to ``hello`` first (the plan's ``token``, for the roles its targets admit).
    Raises AssertionError naming the step that went otherwise than the plan says."""
    session = session or "plan-" + sequence["name"]
    if token:
        client.call("hello", client="navd-plan", token=token)
    client.call("session.open", name=session)
    steps = sequence["steps"]
    wanted = {}
    names = sorted({n for s in steps for n in s.get("providers", {})})
    provider = Provider(navd.socket, {n: (lambda r, n=n: wanted.get(n, True)) for n in names}) if names else None
    try:
        for i, step in enumerate(steps, 1):
            wanted.update(step.get("providers", {}))
            if step.get("facts"):
                client.set_facts(step["facts"], session=session)
            params = dict(step.get("params", {}))
            params["session"] = session
            try:
                client.call(step["method"], params)
            except NavdError as e:
                needs = step.get("commands")
                hint = "; the plan assumes these commands pass or fail as said: %s" % needs if needs else ""
                raise AssertionError("%s step %d, %s: navd refused it: %s%s" % (sequence["name"], i, describe(step), e, hint)) from None
            top = client.tree(session=session).top["coordinator"]
            if step.get("expect") and top != step["expect"]:
                raise AssertionError("%s step %d, %s: %s is on top, the plan expects %s" % (sequence["name"], i, describe(step), top, step["expect"]))
    finally:
        if provider:
            provider.stop()
        try:
            client.call("session.close", name=session)
        except NavdError:
            pass
