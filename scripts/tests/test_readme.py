"""The README's shell examples, run in the order written against a fresh navd (as `make run`
starts it: the embedded example graph), as doctest runs a docstring: every command must exit 0,
and a line under a command that is not itself a command is that command's expected output. So the
README cannot drift from what navd does.

Lines not run, each for a reason printed: `make …` (the test suite itself runs under make; its
targets have their own tests), nav-tui (needs a terminal: TUITests drive it in tmux), and commands
that install files outside the checkout (completion scripts into /etc or ~)."""
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
COMMANDS = ("navctl ", "echo ", "navd ")
# Commands that run until interrupted (the README says so): started in the background, as a reader
# starts them in another terminal, and checked to be running (and, for watch, to have printed).
BACKGROUND = ("navctl watch", "navctl provide ")


def blocks(text):
    """The ```sh blocks of the README, in order: (line number, [lines])."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```sh":
            start = i + 1
            j = start
            while lines[j].strip() != "```":
                j += 1
            out.append((start + 1, lines[start:j]))
            i = j
        i += 1
    return out


def strip_comment(line):
    """The command without its trailing `# comment` (a # inside quotes stays)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] == " "):
            return line[:i].rstrip()
    return line.rstrip()


def stats(sock):
    """navd's `stats` result, asked on a connection of its own."""
    with socket.socket(socket.AF_UNIX) as c:
        c.connect(sock)
        c.sendall(b'{"jsonrpc":"2.0","id":1,"method":"stats"}\n')
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = c.recv(65536)
            assert chunk, "navd closed the connection before answering stats"
            reply += chunk
    return json.loads(reply)["result"]


def test_every_shell_example_of_the_readme_runs_in_order():
    navd_bin = os.environ["NAVD_BIN"]
    bindir = os.path.dirname(navd_bin)
    work = tempfile.mkdtemp(prefix="navd-readme-")
    sock = os.path.join(work, "navd.sock")
    path = os.path.join(work, "bin")
    os.mkdir(path)
    for tool in ["navd", "navctl", "nav-tui", "navbench"]:
        os.symlink(os.path.join(bindir, tool), os.path.join(path, tool))
    env = dict(os.environ, NAVD_SOCKET=sock, PATH=path + ":" + os.environ["PATH"], NO_COLOR="1", HOME=work)
    navd = subprocess.Popen([navd_bin, "--socket", sock, "--state", os.path.join(work, "state.sqlite")],
                            stderr=open(os.path.join(work, "navd.log"), "w"))
    ran, skipped, background = 0, [], []
    try:
        for _ in range(400):
            try:
                socket.socket(socket.AF_UNIX).connect(sock)
                break
            except OSError:
                time.sleep(0.025)
        readme = open(os.path.join(ROOT, "README.md")).read()
        for first, lines in blocks(readme):
            last = None  # (line number, command, output) of the command run last in the block
            for n, raw in enumerate(lines, first):
                line = strip_comment(raw)
                if not line:
                    continue
                command = re.sub(r"(^|[;|] *)\.build/release/", r"\1", line)
                if command.startswith("make ") or command.startswith("nav-tui") or ("> /etc/" in command or "> ~" in command
                                                                                        or '> "${fpath' in command):
                    skipped.append((n, line))
                    last = None
                    continue
                if not command.startswith(COMMANDS):
                    # Expected output of the command above.
                    assert last is not None, "README.md:%d: %r is neither a command nor under one" % (n, line)
                    assert line.strip() in last[2], "README.md:%d: %s printed\n%s\nnot %r" % (last[0], last[1], last[2], line.strip())
                    continue
                command = command.replace("/tmp/navd-0.sock", sock)
                if command.startswith(BACKGROUND):
                    # It subscribes (or offers) before the next command runs: navd's counter says when.
                    counter = "subscriptions" if command.startswith("navctl watch") else "provided"
                    before = stats(sock)[counter]
                    out = tempfile.TemporaryFile(mode="w+")
                    p = subprocess.Popen(["bash", "-c", "exec " + command], env=env, cwd=ROOT, stdout=out,
                                         stderr=subprocess.STDOUT, text=True)
                    background.append((n, line, p, out))
                    deadline = time.monotonic() + 30
                    while stats(sock)[counter] == before and p.poll() is None and time.monotonic() < deadline:
                        time.sleep(0.01)
                    assert stats(sock)[counter] > before, "README.md:%d: %s did not raise navd's %s" % (n, line, counter)
                    last = None
                    ran += 1
                    continue
                r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", command], env=env, cwd=ROOT,
                                   capture_output=True, text=True, timeout=30)
                assert r.returncode == 0, "README.md:%d: %s\nexit status %d\n%s%s" % (n, line, r.returncode, r.stdout, r.stderr)
                last = (n, line, r.stdout)
                ran += 1
        for n, line, p, out in background:
            out.seek(0)
            printed = out.read()
            assert p.poll() is None, "README.md:%d: %s ended (%s):\n%s" % (n, line, p.returncode, printed)
            if "watch" in line:
                assert "stackChanged" in printed, "README.md:%d: %s heard nothing:\n%s" % (n, line, printed)
    finally:
        for _, _, p, _ in background:
            p.terminate()
        navd.terminate()
        navd.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    print("README examples: %d commands run, %d not run:" % (ran, len(skipped)))
    for n, line in skipped:
        print("  README.md:%d: %s" % (n, line))
    assert ran >= 15, ran
