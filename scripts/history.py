#!/usr/bin/env python3
"""history.py — checks a history of navd operations for the properties cluster mode promises.

In the spirit of Jepsen's checkers (Knossos, Elle), at navd's scale: clients record every
operation they invoke and how it ended, subscribers every ``stackChanged`` they receive, the fault
injector what it did and when; this module checks the records, per session, and measures what the
faults cost. ``scripts/chaos.py`` writes such histories; ``python3 scripts/history.py FILE`` checks
one written before (JSON lines).

Records (dicts, each with ``t``: its type, and ``at``: seconds on a monotonic clock):

- ``op``: one keyed navigation, ``s`` session, ``k`` key, ``invoke``/``at`` times, ``outcome``
  ``ok`` (with ``v`` its version, ``r`` a digest of its result, ``via`` the socket that answered)
  or ``fail`` (``kind``: a definite refusal: nothing applied) or ``info`` (unknown: given up);
  ``answers``: every answer its key got (``[v, r]``), retries included.
- ``attempt``: one try of an op that did not succeed (``s``, ``kind``, ``invoke``, ``at``).
- ``sub``: a subscription began: ``id``, ``s``, ``v`` and ``root`` of its snapshot.
- ``note``: a ``stackChanged`` a subscription received: ``id``, ``s``, ``v``, ``changes``.
- ``final``: a subscription's last state after the run: ``id``, ``s``, ``v``.
- ``tree``: a session's final tree: ``s``, ``v``, ``root``, ``visible``, ``source`` (a node, or
  PostgreSQL).
- ``fault``: ``kind``, ``at``, ``until`` (when its effect ended), ``node``, and for some
  ``takeover`` (seconds until the node's sessions were another's).

Checked, per session:

1. acknowledged versions are unique, and increase in real time (an op that completed before
   another was invoked has the smaller version);
2. every answer a key got is the same (a retried keyed navigation is applied once);
3. the final tree is at the last acknowledged version or past it only by ops whose outcome is
   unknown, every node and PostgreSQL hold the same final tree, and the last acknowledged op's
   result is the final tree's (what was acknowledged is there);
4. no fork: every subscription, replaying what it received, has the same tree at each version,
   and the final tree at the final version;
5. each subscription received every version in order, or a snapshot (one ``reset``) covering a
   gap; none twice, none out of order;
6. unavailability: the longest time each session could not be changed (from the first try that
   failed to the next success); beyond ``2 × lease`` it is a violation unless it overlaps a
   PostgreSQL fault (PostgreSQL down or locked: no node could write).
"""
import collections
import copy
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "Clients", "python"))
import navd_client as nc  # noqa: E402


def digest(value):
    """A short stable digest of a JSON value (trees, results)."""
    return hashlib.sha1(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


Gap = nc.OutOfStep


def apply_changes(root, changes):
    """The tree after ``changes`` applied to a copy of ``root`` (the Python client's rules)."""
    return nc.apply_changes(copy.deepcopy(root), changes)


def is_snapshot(changes):
    return len(changes) == 1 and changes[0].get("op") == "reset"


def check(records, lease_s):
    """Checks a history; answers ``(violations, figures)``: a list of strings (empty: the history
    is valid) and a dict of what was measured."""
    violations = []
    ops = [r for r in records if r["t"] == "op"]
    attempts = [r for r in records if r["t"] == "attempt"]
    faults = [r for r in records if r["t"] == "fault"]
    trees = [r for r in records if r["t"] == "tree"]
    sessions = sorted({r["s"] for r in records if "s" in r})

    def bad(what):
        if len(violations) < 200:
            violations.append(what)

    # 1. Unique versions, increasing in real time.
    for s in sessions:
        acked = sorted((o for o in ops if o["s"] == s and o["outcome"] == "ok"), key=lambda o: o["at"])
        seen = {}
        for o in acked:
            if o["v"] in seen:
                bad("%s: version %d acknowledged twice (keys %s and %s)" % (s, o["v"], seen[o["v"]], o["k"]))
            seen[o["v"]] = o["k"]
        by_invoke = sorted(acked, key=lambda o: o["invoke"])
        best = None  # the op with the highest version among those completed before the current invoke
        done = sorted(acked, key=lambda o: o["at"])
        i = 0
        for o in by_invoke:
            while i < len(done) and done[i]["at"] < o["invoke"]:
                if best is None or done[i]["v"] > best["v"]:
                    best = done[i]
                i += 1
            if best is not None and o["v"] <= best["v"]:
                bad("%s: key %s acknowledged version %d although key %s had version %d before it was sent"
                    % (s, o["k"], o["v"], best["k"], best["v"]))

    # 2. A key's answers are all the same.
    for o in ops:
        answers = {tuple(a) for a in o.get("answers", [])}
        if len(answers) > 1:
            bad("%s: key %s answered differently: %s" % (o["s"], o["k"], sorted(answers)))

    # 3. Final trees.
    final = {}
    for s in sessions:
        mine = [t for t in trees if t["s"] == s]
        if not mine:
            if any(o["s"] == s for o in ops):
                bad("%s: no final tree was read" % s)
            continue
        if len({(t["v"], digest(t["root"])) for t in mine}) > 1:
            bad("%s: final trees differ: %s" % (s, ["%s v%d %s" % (t["source"], t["v"], digest(t["root"])) for t in mine]))
        f = mine[0]
        final[s] = f
        acked = [o for o in ops if o["s"] == s and o["outcome"] == "ok"]
        unknown = [o for o in ops if o["s"] == s and o["outcome"] == "info"]
        if not acked:
            continue
        top = max(acked, key=lambda o: o["v"])
        if f["v"] < top["v"]:
            bad("%s: version %d was acknowledged, the final tree is at %d: an acknowledged change was lost" % (s, top["v"], f["v"]))
        # Each op is one version: the final version counts the acknowledged ops and some unknown ones.
        if not (len(acked) <= f["v"] - f.get("base", 0) <= len(acked) + len(unknown)):
            bad("%s: %d ops acknowledged, %d unknown, but the session went from version %d to %d"
                % (s, len(acked), len(unknown), f.get("base", 0), f["v"]))
        if f["v"] == top["v"] and top.get("visible") is not None and top["visible"] != f.get("visible"):
            bad("%s: the last acknowledged op (key %s, v%d) answered visible %s, the final tree shows %s"
                % (s, top["k"], top["v"], top["visible"], f.get("visible")))

    # 4 and 5. Subscriptions: order, gaps, forks.
    subs = collections.OrderedDict()
    for r in records:
        if r["t"] == "sub":
            subs[r["id"]] = {"s": r["s"], "v": r["v"], "root": r["root"], "notes": [], "final": None}
        elif r["t"] == "note" and r["id"] in subs:
            subs[r["id"]]["notes"].append(r)
        elif r["t"] == "final" and r["id"] in subs:
            subs[r["id"]]["final"] = r
    tree_at = collections.defaultdict(dict)  # session -> version -> (digest, subscription)
    notes = snapshots = 0
    for sid, sub in subs.items():
        s, v, root = sub["s"], sub["v"], sub["root"]
        prev = tree_at[s].setdefault(v, (digest(root), sid))
        if prev[0] != digest(root):
            bad("%s: fork at version %d: subscription %s's snapshot differs from %s's tree" % (s, v, sid, prev[1]))
        broken = False
        for n in sub["notes"]:
            notes += 1
            snap = is_snapshot(n["changes"])
            snapshots += snap
            if snap:
                if n["v"] < v:
                    bad("%s: subscription %s got a snapshot of version %d after version %d" % (s, sid, n["v"], v))
            elif n["v"] != v + 1:
                bad("%s: subscription %s got version %d after version %d without a snapshot" % (s, sid, n["v"], v))
                broken = True
                break
            try:
                root = apply_changes(root, n["changes"])
            except Gap as e:
                bad("%s: subscription %s cannot apply version %d: %s" % (s, sid, n["v"], e))
                broken = True
                break
            v = n["v"]
            d = digest(root)
            prev = tree_at[s].setdefault(v, (d, sid))
            if prev[0] != d:
                bad("%s: fork at version %d: subscription %s's tree differs from %s's" % (s, v, sid, prev[1]))
        if broken:
            continue
        f = final.get(s)
        if sub["final"] is not None and f is not None:
            if v != f["v"]:
                bad("%s: subscription %s ended at version %d, the session is at %d" % (s, sid, v, f["v"]))
            elif digest(root) != digest(f["root"]):
                bad("%s: subscription %s's tree at version %d is not the final tree" % (s, sid, v))
    for s, f in final.items():
        at = tree_at[s].get(f["v"])
        if at is not None and at[0] != digest(f["root"]):
            bad("%s: fork at version %d: the final tree differs from subscription %s's" % (s, f["v"], at[1]))

    # 6. Unavailability.
    pg_windows = [(f["at"], f.get("until", f["at"]) + 2 * lease_s) for f in faults if f["kind"].startswith("pg-") or f["kind"] == "slow-commit"]
    longest = {}
    longest_pg = 0.0
    excused = 0
    for s in sessions:
        failed = sorted((a for a in attempts if a["s"] == s), key=lambda a: a["invoke"])
        oks = sorted(o["at"] for o in ops if o["s"] == s and o["outcome"] == "ok")
        worst = 0.0
        j = 0
        k = 0
        while j < len(failed):
            start = failed[j]["invoke"]
            while k < len(oks) and oks[k] <= start:
                k += 1
            end = oks[k] if k < len(oks) else failed[-1]["at"]
            length = end - start
            overlaps = any(a <= end and start <= b for a, b in pg_windows)
            if length > 2 * lease_s:
                if overlaps:
                    excused += 1
                else:
                    bad("%s: could not be changed for %.2f s (from %.2f), more than two leases, with no PostgreSQL fault then"
                        % (s, length, start))
            if not overlaps:
                worst = max(worst, length)
            else:
                longest_pg = max(longest_pg, length)
            while j < len(failed) and failed[j]["invoke"] < end:
                j += 1
        longest[s] = worst

    kinds = collections.Counter(f["kind"] for f in faults)
    takeovers = sorted(f["takeover"] for f in faults if f.get("takeover") is not None)
    figures = {
        "operations": len(ops),
        "acknowledged": sum(o["outcome"] == "ok" for o in ops),
        "unknown": sum(o["outcome"] == "info" for o in ops),
        "refused": sum(o["outcome"] == "fail" for o in ops),
        "retries": len(attempts),
        "subscriptions": len(subs),
        "notifications": notes,
        "snapshots": snapshots,
        "faults": dict(sorted(kinds.items())),
        "longest_unavailable_s": {s: round(v, 3) for s, v in longest.items()},
        "unavailable_beyond_2_leases_during_pg_faults": excused,
        "longest_unavailable_during_pg_faults_s": round(longest_pg, 3),
        "takeover_s": {
            "count": len(takeovers),
            "min": round(takeovers[0], 3) if takeovers else None,
            "median": round(takeovers[len(takeovers) // 2], 3) if takeovers else None,
            "max": round(takeovers[-1], 3) if takeovers else None,
        },
    }
    return violations, figures


def report(violations, figures, out=sys.stdout):
    verdict = "VALID" if not violations else "INVALID (%d violations)" % len(violations)
    print("chaos verdict: %s" % verdict, file=out)
    print("  operations %(operations)d (acknowledged %(acknowledged)d, unknown %(unknown)d, refused %(refused)d), "
          "failed tries retried %(retries)d" % figures, file=out)
    print("  subscriptions %(subscriptions)d, notifications checked %(notifications)d (snapshots %(snapshots)d)" % figures, file=out)
    print("  faults injected: %s" % ", ".join("%s %d" % kv for kv in figures["faults"].items()), file=out)
    t = figures["takeover_s"]
    print("  takeover after a node was killed or paused: %s" % (
        "n=%d min %.2f s, median %.2f s, max %.2f s" % (t["count"], t["min"], t["median"], t["max"]) if t["count"] else "none"), file=out)
    lu = figures["longest_unavailable_s"]
    if lu:
        print("  longest unavailability per session (outside PostgreSQL faults): max %.2f s; %s" % (
            max(lu.values()), ", ".join("%s %.2f" % kv for kv in sorted(lu.items()))), file=out)
    print("  while PostgreSQL was down or locked: longest unavailability %.2f s, %d times beyond two leases"
          % (figures["longest_unavailable_during_pg_faults_s"], figures["unavailable_beyond_2_leases_during_pg_faults"]), file=out)
    for v in violations[:30]:
        print("  VIOLATION: %s" % v, file=out)


def main(argv):
    if len(argv) < 2:
        print("usage: history.py HISTORY.jsonl [LEASE_SECONDS]", file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        records = [json.loads(line) for line in f if line.strip()]
    lease = float(argv[2]) if len(argv) > 2 else 1.0
    violations, figures = check(records, lease)
    report(violations, figures)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
