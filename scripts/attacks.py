#!/usr/bin/env python3
"""Replay the attacks of the hardening work against a running build of navd, as a hostile local
client would, while another client pings navd every 20 ms. Each attack passes when navd refuses
or survives it as PROTOCOL.md and SECURITY.md say, and the pinging client's slowest answer during
it stays under a second. Prints one line per attack (ping p50, p99 and max while it ran, navd's
resident memory after it, the longest read its slow log kept meanwhile) and exits 1 if any failed.

    scripts/attacks.py NAVD        (make attacks: a release build; ATTACKS=17,21 runs those alone)

The first six are the attacks of the first hardening pass; the next ten those of the robustness
issue (depth, committed replies, a provider flood, recovery facts, memory, per-uid fairness, the
socket path, pending work, clients against a stuck server, restored state); the last five those of
the durable store's integrity (a damaged log, reloads with compactions and kill -9, refused keys,
planted state files); the twenty-second and twenty-third, pipelined requests that each cost much
(names compared with thousands, values checked against hostile patterns); the twenty-fifth, what
another user could have written: the example's script folder, a policy file, a graph; the twenty-sixth,
sessions filled to their bounds against --max-data-bytes; the twenty-seventh, connections each
holding a message without its end against --max-total-input; the twenty-eighth and twenty-ninth,
subscriptions and guessed tokens from another uid; the thirty-first, names and setup models too
long or too wide to be compared one by one with what the graph declares. The attacker runs as
uid 65534 (setpriv) where the attack is about another user. Each also stays as a test of
`make test` (Tests/EndToEndTests/AttackTests.swift, HardeningTests.swift, Tests/NavServerTests/
FairnessTests.swift, Clients/python/tests/test_hostile_server.py). The attacks are in
attacks_protocol.py (1-15, 22-24, 26-31) and attacks_state.py (16-21, 25), what they share in attacks_common.py.
"""
import os
import shutil
import subprocess
import sys
import time
import traceback

from attacks_common import GRAPH, NAVCTL, NAVD, SOCK, WORK, Client, Pinger, rss_mb, stop_started
from attacks_protocol import *  # noqa: F401,F403 - attacks 1-15
from attacks_state import *  # noqa: F401,F403 - attacks 16-21


ATTACKS = [
    ("1. placeholder-shaped values in a command's argv", placeholder_values),
    ("2. graph.reload, provide, others' facts without a role", reload_without_role),
    ("3. 600-byte YAML alias bomb (check and reload)", alias_bomb),
    ("4. 9,000-request batch; 1,000 context.get of 10,000 facts", big_batches),
    ("5. 2,000 pipelined requests while reading", pipelining_reader),
    ("6. --socket at a regular file or past the length limit", socket_paths),
    ("7. deep nesting: presents until refused, kill -9, restart", deep_nesting),
    ("8. a waiting navigation that replaces its source", committed_answers),
    ("9. 100,000 provider navigations from another uid", provider_flood),
    ("10. recover.facts written by another uid", recovery_facts),
    ("11. 64 KiB facts and 900 KB params without end", memory_bounds),
    ("12. one uid takes every share; another is served", per_uid_fairness),
    ("13. --socket \"\" and abstract names", socket_empty),
    ("14. 20,000 guarded dismisses; 300 slow commands", pending_work),
    ("15. clients against a stopped navd", stuck_server),
    ("16. a state file that breaks the rules", restored_state),
    ("17. a flipped bit in a log record's length, kill -9", flipped_log_length),
    ("18. graph.reload during a compaction, kill -9", reload_during_compaction),
    ("19. a forced graph.reload, kill -9, restart", forced_reload_then_kill),
    ("20. 100,000 refused keyed navigations from another uid", refused_keys),
    ("21. state files planted by another uid", planted_state_files),
    ("22. 2,000 pipelined costly unknown names, 10,000 coordinators", costly_names),
    ("23. 200 pipelined values against hostile patterns", costly_patterns),
    ("24. setup models of 50,000 members: push, update, merge", costly_members),
    ("25. an example folder, a policy, a graph planted or open to all", planted_configuration),
    ("26. sessions filled to their bounds until memory runs out", data_ceiling),
    ("27. 2,000 connections each holding 1 MiB of a message", unfinished_messages),
    ("28. 200,000 subscriptions from another uid", subscription_flood),
    ("29. 5,000 guessed tokens at once", token_guessing),
    ("30. small files of huge graphs: sets, guards, recovery chains, links", small_files_of_huge_graphs),
    ("31. 800 KB names and keys, setups of 50,000 members and 10,000 fields", long_names_and_wide_setups),
]


def main():
    if not os.access(NAVCTL, os.X_OK):
        shutil.rmtree(WORK, ignore_errors=True)
        sys.exit("attacks: %s is missing; attacks 7 and 15 run the navctl built beside navd (make build builds both)" % NAVCTL)
    log = open(WORK + "/navd.log", "wb")  # read by nobody while it runs: a pipe would fill up and stall navd
    navd = subprocess.Popen([NAVD, "--graph", GRAPH, "--socket", SOCK, "--ephemeral"], stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 20
    while not os.path.exists(SOCK):
        if navd.poll() is not None or time.monotonic() > deadline:
            sys.exit("navd did not start: %s" % open(WORK + "/navd.log").read())
        time.sleep(0.05)
    os.chmod(SOCK, 0o666)
    pinger = Pinger()
    pinger.start()
    # navd's own view of each attack: the longest read it handled (its slow log, from 10 ms),
    # forgotten between attacks. navd's uid holds admin, which slowlog.get needs.
    admin = Client()
    failures = 0
    only = os.environ.get("ATTACKS", "")  # ATTACKS=17,18 runs those alone
    for name, attack in ATTACKS:
        if only and name.split(".")[0] not in only.split(","):
            continue
        pinger.window()
        try:
            ok, detail = attack()
        except Exception as e:  # noqa: BLE001 - an exception is a failed attack check
            ok, detail = False, "raised %r at %s" % (e, " < ".join("%s:%d" % (f.name, f.lineno) for f in reversed(traceback.extract_tb(e.__traceback__))))
        stop_started()
        worst = pinger.window()
        slow = admin.call("slowlog.get").get("result", {}).get("entries", []) if navd.poll() is None else []
        if slow:
            admin.call("slowlog.reset")
        p50, p99, _ = pinger.last
        alive = navd.poll() is None and pinger.failed is None
        held = ok and alive and worst < 1.0
        failures += not held
        longest = max(slow, key=lambda e: e["ms"]) if slow else None
        held_loop = "loop held %5.1f ms (%s)" % (longest["ms"], ",".join(longest["methods"]) if longest["kind"] == "read" else longest["what"]) \
            if longest else "nothing held the loop 10 ms"
        print("%-58s %-4s ping p50 %5.2f p99 %6.2f max %6.1f ms, RSS %4.0f MB, %s  %s" % (
            name, "held" if held else "FAIL", p50 * 1000, p99 * 1000, worst * 1000, rss_mb(navd.pid) if alive else 0, held_loop, detail), flush=True)
        if not alive:
            print("navd stopped or stopped answering: %s" % (pinger.failed or "exit %s" % navd.poll()))
            break
    pinger.stop.set()
    pinger.proc.kill()
    navd.terminate()
    navd.wait(10)
    shutil.rmtree(WORK, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
