"""make install into a temporary DESTDIR, as a packager runs it: every file where the layout says,
the installed binaries run (--version names the commit, navd serves and navctl talks to it), the man
pages render, the completions parse, the systemd unit names the installed navd; make uninstall
removes it all. Also: make help names every target of the Makefile."""
import os
import re
import socket
import subprocess
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOOLS = ["navd", "navctl", "nav-tui", "navbench", "nav-web"]
# Every tool is a product of the one package: each names the build's commit.
VERSIONED = TOOLS


def make(*args, **env):
    e = dict(os.environ, **env)
    e.pop("MAKEFLAGS", None)
    e.pop("MFLAGS", None)
    return subprocess.run(["make", "-s", "--no-print-directory", *args], cwd=ROOT, env=e, capture_output=True, text=True, timeout=600)


def installed_files(dest):
    out = []
    for d, _, files in os.walk(dest):
        out += [os.path.relpath(os.path.join(d, f), dest) for f in files]
    return sorted(out)


def test_make_install_and_uninstall_into_a_destdir():
    with tempfile.TemporaryDirectory() as dest:
        r = make("install", "DESTDIR=" + dest, "PREFIX=/usr", "CONFIG=debug")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "installed navd 0.1.0" in r.stdout, r.stdout
        files = installed_files(dest)
        for t in TOOLS:
            for f in ["usr/bin/%s" % t, "usr/share/man/man1/%s.1" % t, "usr/share/bash-completion/completions/%s" % t,
                      "usr/share/zsh/site-functions/_%s" % t, "usr/share/fish/vendor_completions.d/%s.fish" % t]:
                assert f in files, (f, files)
        for f in ["usr/lib/systemd/user/navd.service", "usr/lib/systemd/user/navd.socket", "usr/lib/systemd/system/navd@.service",
                  "usr/lib/systemd/system/navd@.socket", "usr/share/doc/navd/LICENSE",
                  "usr/share/doc/navd/PROTOCOL.md"]:
            assert f in files, (f, files)

        # --version: the release and the commit these sources are.
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip()
        for t in VERSIONED:
            v = subprocess.run([os.path.join(dest, "usr/bin", t), "--version"], capture_output=True, text=True)
            assert v.returncode == 0, v.stderr
            assert re.fullmatch(r"%s 0\.1\.0 \(commit %s(-dirty)?\)\n" % (re.escape(t), head), v.stdout), v.stdout

        # The man pages render; navctl's names its exit statuses.
        page = subprocess.run(["man", "-l", "-P", "cat", os.path.join(dest, "usr/share/man/man1/navctl.1")],
                              capture_output=True, text=True, env=dict(os.environ, MANWIDTH="80"))
        assert page.returncode == 0, page.stderr
        assert "navctl" in page.stdout and "EXIT STATUS" in page.stdout.upper(), page.stdout[:2000]
        # The bash completions are valid bash.
        for t in TOOLS:
            b = subprocess.run(["bash", "-n", os.path.join(dest, "usr/share/bash-completion/completions", t)], capture_output=True, text=True)
            assert b.returncode == 0, b.stderr
        # The unit runs the installed navd (PREFIX, not DESTDIR) and restarts it on a failure.
        unit = open(os.path.join(dest, "usr/lib/systemd/user/navd.service")).read()
        assert "\nExecStart=/usr/bin/navd serve $NAVD_ARGS\n" in unit and "\nRestart=on-failure\n" in unit, unit
        assert "\nEnvironmentFile=-%E/navd/navd.env\n" in unit, unit
        # It tells systemd when it serves, on the socket navd.socket holds (mode 0600) and passes it.
        assert "\nType=notify\n" in unit and "\nRequires=navd.socket\n" in unit, unit
        sock_unit = open(os.path.join(dest, "usr/lib/systemd/user/navd.socket")).read()
        assert "\nListenStream=%t/navd.sock\n" in sock_unit and "\nSocketMode=0600\n" in sock_unit, sock_unit
        # systemd reads the three units without a complaint (the binaries named where they were staged).
        staged = tempfile.mkdtemp(dir=dest)
        for u in ["navd.socket", "navd.service", "nav-web.service"]:
            text = open(os.path.join(dest, "usr/lib/systemd/user", u)).read().replace("/usr/bin/", os.path.join(dest, "usr/bin/"))
            open(os.path.join(staged, u), "w").write(text)
        v = subprocess.run(["systemd-analyze", "verify", "--man=no"] + [os.path.join(staged, u) for u in ["navd.socket", "navd.service", "nav-web.service"]],
                           capture_output=True, text=True)
        assert v.returncode == 0 and v.stdout + v.stderr == "", v.stdout + v.stderr
        # The system-wide template, one navd per backend user: as user root, whom every machine has.
        system = os.path.join(dest, "usr/lib/systemd/system")
        sys_service = open(os.path.join(system, "navd@.service")).read()
        assert "\nUser=%i\n" in sys_service and "\nType=notify\n" in sys_service, sys_service
        assert "\nExecStart=/usr/bin/navd serve --state %S/navd/%i/navd.sqlite $NAVD_ARGS\n" in sys_service, sys_service
        sys_socket = open(os.path.join(system, "navd@.socket")).read()
        assert "\nListenStream=/run/navd/%i.sock\n" in sys_socket and "\nSocketUser=%i\n" in sys_socket \
            and "\nSocketMode=0600\n" in sys_socket, sys_socket
        for u in ["navd@.socket", "navd@.service"]:
            text = open(os.path.join(system, u)).read().replace("/usr/bin/", os.path.join(dest, "usr/bin/"))
            open(os.path.join(staged, u.replace("@.", "@root.")), "w").write(text)
        v = subprocess.run(["systemd-analyze", "verify", "--man=no", os.path.join(staged, "navd@root.socket"), os.path.join(staged, "navd@root.service")],
                           capture_output=True, text=True)
        assert v.returncode == 0 and v.stdout + v.stderr == "", v.stdout + v.stderr
        # nav-web's unit starts after navd and keeps its token in a private file, not on its command line.
        web = open(os.path.join(dest, "usr/lib/systemd/user/nav-web.service")).read()
        assert "\nAfter=navd.service\n" in web and "\nExecStart=/usr/bin/nav-web --token-file %S/nav-web/token\n" in web, web
        assert "\nStateDirectoryMode=0700\n" in web and "--token " not in web, web
        help = subprocess.run([os.path.join(dest, "usr/bin/nav-web"), "--help"], capture_output=True, text=True)
        assert help.returncode == 0 and "--token-file" in help.stdout, help.stdout + help.stderr
        page = subprocess.run(["man", "-l", "-P", "cat", os.path.join(dest, "usr/share/man/man1/nav-web.1")],
                              capture_output=True, text=True, env=dict(os.environ, MANWIDTH="80"))
        assert page.returncode == 0 and "--token-file" in page.stdout, page.stdout[:2000]

        # The installed navd serves, the installed navctl drives it.
        sock = os.path.join(dest, "navd.sock")
        navd = subprocess.Popen([os.path.join(dest, "usr/bin/navd"), "--socket", sock, "--ephemeral"], stderr=subprocess.PIPE)
        try:
            for _ in range(200):
                if os.path.exists(sock):
                    try:
                        socket.socket(socket.AF_UNIX).connect(sock)
                        break
                    except OSError:
                        pass
                time.sleep(0.025)
            nav = subprocess.run([os.path.join(dest, "usr/bin/navctl"), "--socket", sock, "navigate", "shop.Product", "--with", "id=p1"],
                                 capture_output=True, text=True, timeout=10)
            assert nav.returncode == 0, nav.stdout + nav.stderr
            tree = subprocess.run([os.path.join(dest, "usr/bin/navctl"), "tree", "--socket", sock, "--json"], capture_output=True, text=True, timeout=10)
            assert '"shop.Product"' in tree.stdout, tree.stdout
        finally:
            navd.terminate()
            assert navd.wait(10) == 0

        r = make("uninstall", "DESTDIR=" + dest, "PREFIX=/usr")
        assert r.returncode == 0, r.stdout + r.stderr
        assert [f for f in installed_files(dest) if f.startswith("usr/")] == []


def test_make_help_names_every_target():
    makefile = open(os.path.join(ROOT, "Makefile")).read()
    targets = set(re.findall(r"^([a-z][a-z0-9-]*):", makefile, re.M)) - {"help"}
    out = make("help").stdout
    named = set(re.findall(r"^\s*(?:make )?([a-z][a-z0-9-]+)\s+-", out, re.M))
    assert targets - named == set(), "make help leaves out %s" % sorted(targets - named)
