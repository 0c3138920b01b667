# navd — two commands: `make run` and `make test`. Everything else is a helper.
SWIFT      ?= swift
SOCKET     ?= $(if $(filter /%,$(XDG_RUNTIME_DIR)),$(XDG_RUNTIME_DIR)/navd.sock,/tmp/navd-$(shell id -u).sock)
# Debian packages navd builds or tests with.
DEB_PACKAGES := libuv1-dev libsimdjson-dev socat tmux graphviz sqlite3 libsqlite3-dev procps python3 python3-venv libpq-dev postgresql postgresql-contrib lcov systemd
# The browser nav-web's tests drive, and node for its page's unit tests (make test-web, make
# bench-web; not needed to run navd).
WEB_DEB_PACKAGES := chromium chromium-driver nodejs
SUDO       := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

PYENV      := .build/pyenv
# Release builds of navd tuned with the flags Package.swift keeps behind NAVD_TUNED.
export NAVD_TUNED ?= 1

.PHONY: web-deps install-missing bench-web web embed-web test-web install uninstall man man-check chaos chaos-smoke run test test-python python-deps deps build build-debug embed protocol graph-png build-no-cluster bench bench-instructions bench-durable bench-scale bench-cpu bench-graph bench-core bench-parse pgo-profile demo cluster-demo bench-cluster clean help fuzz fuzz-smoke test-asan soak attacks

## make help: every target, one line each (scripts/tests/test_install.py checks that none is missing).
help:
	@echo "make run            - install what is missing, build (release), start navd on the example graph"
	@echo "make test           - install what is missing, build, run every test"
	@echo
	@echo "Build and install:"
	@echo "  deps              - install the Debian packages that are missing"
	@echo "  web-deps          - install chromium and chromium-driver (nav-web's browser tests) when missing"
	@echo "  install-missing   - install PACKAGES=\"…\" from Debian when missing"
	@echo "  build             - release build (tuned, profile-guided, the Swift runtime linked statically)"
	@echo "  build-debug       - debug build with the tests"
	@echo "  build-no-cluster  - navd without cluster mode (no libpq), checked to refuse --store"
	@echo "  install           - binaries, man pages, completions, systemd user unit under PREFIX (DESTDIR, CONFIG=debug)"
	@echo "  uninstall         - remove what install put there"
	@echo "  man               - regenerate man/*.1 from the argument definitions"
	@echo "  protocol          - assemble openrpc.json, its embedded copy, the method specs and PROTOCOL.md's method table from Protocol/methods/*.json"
	@echo "  embed             - make protocol, and regenerate the Swift file embedding the example graph"
	@echo "  graph-png         - redraw the example graph's picture (graphviz)"
	@echo "  clean             - remove the build folders"
	@echo "Demos:"
	@echo "  demo              - navd, two nav-tui and a navctl tour in tmux"
	@echo "  web               - navd and nav-web: navd in a browser (prints the URL with its token)"
	@echo "  embed-web         - regenerate nav-web's embedded page from Clients/web/Assets"
	@echo "  cluster-demo      - PostgreSQL, two navd nodes, a nav-tui on each, in tmux"
	@echo "Longer tests:"
	@echo "  test-python       - the Python client's tests against the debug navd"
	@echo "  test-web          - nav-web's page: its mirror (node --test), then the page in a headless Chromium (part of make test)"
	@echo "  fuzz              - every fuzz target for FUZZ_SECONDS (300)"
	@echo "  fuzz-smoke        - every fuzz target for 6 s (part of make test)"
	@echo "  chaos             - CHAOS_SECONDS (300) of faults on a three-node cluster, history checked"
	@echo "  chaos-smoke       - 60 s of the same against the debug navd (part of make test)"
	@echo "  soak              - SOAK_SECONDS (600) of load with kill -9 every minute"
	@echo "  attacks           - the hardening attacks against the release navd"
	@echo "  test-asan         - the end-to-end and nav-web server tests with AddressSanitizer"
	@echo "Benchmarks (they print figures):"
	@echo "  bench             - the navbench matrix beside the C echo server and Redis"
	@echo "  bench-durable     - ephemeral, process and full beside Redis AOF"
	@echo "  bench-scale       - cost curves: sessions, connections, subscribers, stack, graph, keys, restart (tables, PNG plots)"
	@echo "  bench-instructions - instructions per request (navigate/dismiss, ping) and per fanned-out message (callgrind)"
	@echo "  bench-cpu         - CPU time and syscalls per request beside Redis and the echo server; the goals' budget"
	@echo "  bench-cluster     - the PostgreSQL store beside SQLite and pgbench; takeover time"
	@echo "  bench-graph       - loading a graph of 10,000 coordinators"
	@echo "  bench-core        - the navigation core alone"
	@echo "  bench-parse       - the request lines parsed by simdjson's DOM and On-Demand APIs"
	@echo "  bench-web         - nav-web's CPU and memory with 10 pages on a busy session"
	@echo "  pgo-profile       - retake the profile that lays out release builds"
	@echo "  python-deps       - the Python virtual environment (pytest, the client)"

## make install: binaries, man pages, shell completions, a systemd user unit and the docs under
## PREFIX (/usr/local), staged under DESTDIR when set; CONFIG=debug installs the debug build.
PREFIX ?= /usr/local
CONFIG ?= release
install: $(if $(filter debug,$(CONFIG)),build-debug,build)
	PREFIX=$(PREFIX) DESTDIR=$(DESTDIR) CONFIG=$(CONFIG) scripts/install.sh install

## make uninstall: removes what make install put under PREFIX (DESTDIR); sessions kept stay.
uninstall:
	PREFIX=$(PREFIX) DESTDIR=$(DESTDIR) scripts/install.sh uninstall

## make man: regenerate man/*.1 from the argument definitions (checked in make test).
man: build-debug
	scripts/man.sh

## Install the Debian packages that are missing (apt-get update once, only when needed).
deps:
	@$(MAKE) -s install-missing PACKAGES="$(DEB_PACKAGES)"

## The Debian packages of nav-web's browser tests, when missing.
web-deps:
	@$(MAKE) -s install-missing PACKAGES="$(WEB_DEB_PACKAGES)"

## Installs the Debian packages of PACKAGES that are missing (apt-get update once, only then).
install-missing:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

build: deps
	SWIFT=$(SWIFT) scripts/build-release.sh

build-debug: deps
	SWIFT=$(SWIFT) scripts/build-debug.sh

run: build
	@echo "navd will listen on $(SOCKET)"
	@echo "try:  echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}' | socat - UNIX-CONNECT:$(SOCKET)"
	@echo "stop: Ctrl-C"
	exec .build/release/navd --socket $(SOCKET)

## make test: scripts/test.sh (the order and what runs beside what are described there).
test: deps web-deps python-deps
	MAKE="$(MAKE)" SWIFT=$(SWIFT) CHAOS_SMOKE="$(CHAOS_SMOKE)" scripts/test.sh

## navd without cluster mode (NAVD_CLUSTER=off): NavCluster and libpq are not built or linked, and
## `--store` says so (scripts/check-no-cluster.sh). `make test` checks the same of the navd that
## scripts/client-package.sh builds.
build-no-cluster: deps
	NAVD_CLUSTER=off $(SWIFT) build --product navd --scratch-path .build-nocluster
	scripts/check-no-cluster.sh .build-nocluster/debug

## A virtual environment with pytest (from PyPI) and the Python client (Clients/python) installed.
python-deps: deps
	@[ -f $(PYENV)/.ready ] || { python3 -m venv $(PYENV) && $(PYENV)/bin/pip install -q --upgrade pytest setuptools wheel && touch $(PYENV)/.ready; }
	@$(PYENV)/bin/python -c "import selenium" 2>/dev/null || $(PYENV)/bin/pip install -q selenium
	@$(PYENV)/bin/python -c "import xdist" 2>/dev/null || $(PYENV)/bin/pip install -q pytest-xdist
	@$(PYENV)/bin/pip install -q --no-build-isolation --no-deps ./Clients/python

## The Python client's tests and the README's pytest example, against the debug navd; PYTEST_WORKERS
## processes at once (pytest-xdist; default one per cpu: the tests wait on navd more than they compute).
PYTEST_WORKERS ?= auto
test-python: python-deps
	NAVD_BIN=$(CURDIR)/.build/debug/navd $(PYENV)/bin/python -m pytest -q -p no:cacheprovider --rootdir=$(CURDIR) \
	  -n $(PYTEST_WORKERS) Clients/python/tests Clients/python/examples scripts/tests

## make fuzz: each libFuzzer target (framing, json, graph, argv, state, session, log, coverage, policy, pattern, link, http, websocket) for FUZZ_SECONDS (default 300) from
## the seed corpus in Fuzz/corpus; a crash fails and leaves its input in .build-fuzz/artifacts/.
FUZZ_SECONDS ?= 300
fuzz: deps
	scripts/fuzz.sh $(FUZZ_SECONDS)

## The short run `make test` makes beside nav-web's tests: 6 s per target (the seeds, then a little more), one target per cpu at a time;
## `make fuzz` is the search.
fuzz-smoke: deps
	scripts/fuzz.sh 6

## make chaos: CHAOS_SECONDS (default 300) of keyed navigations and subscribers on three cluster nodes
## (a private PostgreSQL) while faults are injected at random: kill -9, SIGSTOP past the lease, a
## second process under a live node's name, PostgreSQL restarted, its backends terminated, commits
## held by a lock. Then scripts/history.py checks the history (unique increasing versions, nothing
## acknowledged lost or applied twice, no fork, subscribers complete or given snapshots, no session
## unavailable beyond two leases while PostgreSQL is up) and prints its verdict and figures.
CHAOS_SECONDS ?= 300
chaos: build
	python3 scripts/chaos.py --navd .build/release/navd --seconds $(CHAOS_SECONDS)

## The short run `make test` makes (beside the background builds): 60 s against the debug navd, at navd's
## default lease (2 s), not make chaos's 1 s: why in Protocol/CLUSTER.md, "Checking it".
CHAOS_SMOKE := python3 scripts/chaos.py --navd .build/debug/navd --seconds 60 --lease-ms 2000
chaos-smoke: build-debug
	$(CHAOS_SMOKE)

## make test-asan: the end-to-end tests and nav-web's server tests against navd, its clients and nav-web
## built with AddressSanitizer.
test-asan: deps
	scripts/test-asan.sh

## make soak: 10 minutes (SOAK_SECONDS) of mixed navigations, preconditions, churning subscribers and
## graph reloads every 2 s (SOAK_RELOAD_SECONDS),
## navd killed with -9 and restarted every minute; checks that no acknowledged version is lost and
## that descriptors, child processes and memory stay flat. Prints its figures.
soak: build
	scripts/soak.sh

## make attacks: the hardening attacks against the release navd while another client pings: the first
## pass's (placeholder values, reload without a role, an alias bomb, huge batches, pipelining, bad
## --socket paths) and the robustness issue's ten (depth, committed replies, a provider flood, recovery
## facts, memory, per-uid fairness, --socket "", pending work, clients against a stopped navd,
## restored state). Prints ping p50/p99/max and navd's RSS after each.
attacks: build
	python3 scripts/attacks.py .build/release/navd

## Assemble the protocol from one file per method (Protocol/methods/<name>.json): openrpc.json,
## its embedded copy, Generated/MethodDeclarations.swift and PROTOCOL.md's method table.
protocol:
	python3 scripts/protocol.py

## Regenerate the Swift files that embed Protocol/openrpc.json and the example graph.
embed: protocol
	python3 scripts/embed-resources.py

## Benchmarks (release builds; they print figures, they do not pass or fail).
## make bench: the navbench matrix, durable modes, and (with ../shared/perf-anchors) navd side by side
## with the C echo server and Redis, plus 10,000 idle connections. Knobs: DUR, RUNS, PERF_ANCHORS.
bench: deps
	scripts/bench.sh

## make bench-durable: navd's durable modes (ephemeral, process, full; 50 and 10,000 sessions) beside
## Redis with appendfsync no and always, in one run: throughput ratios and bytes written per request.
bench-durable: deps
	PERF_ANCHORS=$(or $(PERF_ANCHORS),../shared/perf-anchors) scripts/bench-durable.sh

## make bench-scale: the cost curves (latency p50/p99 and RSS against sessions up to 1,000,000 and
## idle connections up to 10,000, a commit reaching 10 to 10,000 subscribers, commit and tree time
## against stack size, graph load and navd check against coordinators, keyed navigations against
## the keys one uid keeps, restart time against state size), Redis beside the sessions curve;
## Markdown tables on stdout, PNG plots in Benchmarks/scale. SCALE_MAX caps the largest session
## count and the keys kept.
bench-scale: build
	@$(MAKE) -s install-missing PACKAGES="gnuplot-nox redis-server"
	python3 scripts/bench-scale.py .build/release/navd Benchmarks/scale

## make bench-instructions: navd's instructions per request and per fanned-out message (callgrind).
bench-instructions: deps
	scripts/instructions.sh
	MODE=fanout scripts/instructions.sh
	MODE=ping scripts/instructions.sh

## make bench-cpu: CPU time and read/write calls per request, navd and its ping (loadgen) beside the echo server (loadgen) and Redis (redis-benchmark), and the budget the goals leave navd's own code.
## Knobs: C, P, N, NAVD.
bench-cpu: deps
	scripts/cpu-per-request.sh

## make pgo-profile: retake Profiles/navd.profdata, the profile that lays out release builds
## (after a change to the request path; see scripts/pgo-profile.sh). Needs ../shared/perf-anchors.
pgo-profile: deps
	scripts/pgo-profile.sh

bench-graph: deps
	SWIFT=$(SWIFT) scripts/build-release.sh --product graph-load-bench
	.build/release/graph-load-bench 100 100

bench-core: deps
	SWIFT=$(SWIFT) scripts/build-release.sh --product core-bench
	.build/release/core-bench

## make bench-parse: the benchmark's two request lines parsed by simdjson's DOM and On-Demand APIs,
## ns per message (Benchmarks/parse-shapes; figures in BENCHMARKS.md).
bench-parse: deps
	@mkdir -p .build
	g++ -O3 -march=native -std=c++17 Benchmarks/parse-shapes/parse_shapes.cpp -lsimdjson -o .build/parse-shapes
	$$(command -v taskset >/dev/null && echo taskset -c 1) .build/parse-shapes

## make demo: navd, two nav-tui side by side on one session, and a navctl tour, in tmux.
demo: build
	scripts/demo.sh

## Cluster mode in tmux: PostgreSQL, two navd nodes, a nav-tui on each, navctl driving one (Protocol/CLUSTER.md).
cluster-demo: build
	scripts/cluster-demo.sh

## Cluster mode's figures: req/s with the PostgreSQL store beside SQLite and pgbench; takeover time.
bench-cluster: build
	scripts/cluster-bench.sh

## Redraw the example graph shown in the README (needs graphviz).
graph-png: build-debug
	.build/debug/navd graph Examples/shop | dot -Tpng -o Examples/shop/graph.png

clean:
	rm -rf .build .build-fuzz .build-asan

## make web: navd (started on the default socket unless one answers there) and nav-web, navd in a
## browser; prints the URL with its token. WEB_PORT (8765), NAVWEB_ARGS (such as --read-only).
WEB_PORT ?= 8765
web: build
	@scripts/web.sh $(SOCKET) $(WEB_PORT) $(NAVWEB_ARGS)

## Regenerate nav-web's embedded page (Clients/web/Sources/NavWebServer/Assets.swift) from Clients/web/Assets.
embed-web:
	python3 scripts/embed-web.py

## nav-web's tests: its server over raw sockets and its parsers (Clients/web/Tests, part of
## `swift test`, run by make test with the other Swift tests), its page's mirror with node --test (Clients/web/tests/*.test.mjs, on the
## change fixtures every mirror replays), then the page in a headless Chromium (Selenium,
## chromium-driver).
## The browser tests mostly wait (Chromium starting, the page answering): two run at once.
WEB_TEST_WORKERS ?= 2
test-web: web-deps python-deps build-debug
	node --test Clients/web/tests/
	@rm -f .build/web-screenshots/figures.txt
	NAVD_BIN=$(CURDIR)/.build/debug/navd NAVWEB_BIN=$(CURDIR)/.build/debug/nav-web \
	  $(PYENV)/bin/python -m pytest -q -p no:cacheprovider --rootdir=$(CURDIR) -n $(WEB_TEST_WORKERS) Clients/web/tests
	@cat .build/web-screenshots/figures.txt 2>/dev/null || true

## make bench-web: nav-web's CPU and memory with PAGES (10) pages open on a session committing RATE
## (1,000) navigations a second for SECONDS (10); release navd, release nav-web.
bench-web: web-deps build python-deps
	$(PYENV)/bin/python scripts/bench-web.py
