# aasa-edge — the two commands a newcomer needs are `make run` and `make test`.
SWIFT ?= swift
# bash with pipefail: `make test` tees each part's output and still fails when the part fails.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SYSTEM_PACKAGES := libcurl4-openssl-dev libsqlite3-dev
# The HTTPS test origin (Tests/TestOrigin/test-origin.py) needs python3 with `cryptography`.
TEST_PACKAGES := python3
BIN := .build/debug/aasa-edge
RELEASE_BIN := .build/release/aasa-edge
SHARED := ../shared/conformance
EXAMPLE := examples/apple-overview.json
EXAMPLE_APP := ABCDE12345.com.example.app

.PHONY: all deps test-deps build release test run demo conformance bench deploy-check admin-api-check readme-check screenshots bench-all reliability reliability-quick clean

all: build

# Installs the system libraries the package links against, only when missing.
deps:
	@missing=""; \
	for p in $(SYSTEM_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  $(SUDO) apt-get install -y $$missing || { $(SUDO) apt-get update && $(SUDO) apt-get install -y $$missing; }; \
	fi

# What the tests need besides the build: python3 and its cryptography package for the test origin,
# and Debian's PostgreSQL server (tests run initdb/pg_ctl in a temporary folder on a free port).
test-deps: deps
	@command -v python3 >/dev/null || { export DEBIAN_FRONTEND=noninteractive; \
	  $(SUDO) apt-get install -y $(TEST_PACKAGES) || { $(SUDO) apt-get update && $(SUDO) apt-get install -y $(TEST_PACKAGES); }; }
	@python3 -c "import cryptography" 2>/dev/null || python3 -m pip install --quiet cryptography \
	  || { export DEBIAN_FRONTEND=noninteractive; $(SUDO) apt-get install -y python3-cryptography; }
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { echo "installing: postgresql (the shared-store tests start a real server)"; \
	  export DEBIAN_FRONTEND=noninteractive; $(SUDO) apt-get install -y postgresql || { $(SUDO) apt-get update && $(SUDO) apt-get install -y postgresql; }; }

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# Every test: unit tests of each module, the conformance corpus (when ../shared is beside the
# project), the fetcher against a real HTTPS origin on loopback, and end-to-end tests of the binary.
# Each part's output is also kept in .build/test-logs/, and a summary of all parts ends the run.
LOGS := .build/test-logs
test: test-deps
	$(SWIFT) build --build-tests
	@mkdir -p $(LOGS)
	$(SWIFT) test --skip-build 2>&1 | tee $(LOGS)/swift-test.log
	@if [ -f $(SHARED)/cases.json ]; then $(MAKE) --no-print-directory conformance 2>&1 | tee $(LOGS)/conformance.log; \
	else echo "conformance: $(SHARED) not found, skipped" | tee $(LOGS)/conformance.log; fi
	@$(MAKE) --no-print-directory deploy-check 2>&1 | tee $(LOGS)/deploy-check.log
	@$(MAKE) --no-print-directory admin-api-check 2>&1 | tee $(LOGS)/admin-api-check.log
	@$(MAKE) --no-print-directory reliability-quick 2>&1 | tee $(LOGS)/reliability-quick.log
	@$(MAKE) --no-print-directory readme-check 2>&1 | tee $(LOGS)/readme-check.log
	@# The dashboard in a real browser when this machine has one (make screenshots installs it).
	@if command -v chromium >/dev/null && python3 -c "import playwright" 2>/dev/null; then \
	  python3 scripts/screenshots.py $(BIN) $(LOGS)/screenshots 2>&1 | tee $(LOGS)/browser-check.log && echo "browser-check: passed" | tee -a $(LOGS)/browser-check.log; \
	else echo "browser-check: skipped (no chromium or playwright here; make screenshots installs them)" | tee $(LOGS)/browser-check.log; fi
	@echo; echo "== make test: every part passed =="
	@grep -h -E "Test run with [0-9]+ tests? .*passed" $(LOGS)/swift-test.log | tail -1 | sed 's/^/  swift test: /'
	@tail -n 1 $(LOGS)/conformance.log | sed 's/^/  /'
	@grep -h -E "^(deploy-check|admin-api-check|crash|soak|fuzz [a-z-]+|readme-check|browser-check): " $(LOGS)/deploy-check.log $(LOGS)/admin-api-check.log $(LOGS)/reliability-quick.log $(LOGS)/readme-check.log $(LOGS)/browser-check.log | tail -n 10 | sed 's/^/  /'

# The short reliability runs (part of make test): 3 kill -9 rounds, a 15 s soak, 200k fuzz runs.
# The fault matrix, hostile-HTTP and SSRF suites are Swift tests (Tests/EdgeTests).
reliability-quick: build
	python3 scripts/reliability.py crash --rounds 3 --hosts 100 --bin $(BIN)
	python3 scripts/reliability.py soak --seconds 15 --bin $(BIN)
	bash scripts/fuzz.sh quick

# The full reliability suite on the release binary: 20 kill -9 rounds during release refetches
# under load, a soak (60 s; MINUTES=N for longer), the hostile-client run (floods, slowloris,
# slow bodies, 3,000 cold hosts, fd exhaustion against the bounds), 10 M fuzz executions. Figures in
# bench/results/reliability-*.json.
MINUTES ?=
reliability: release
	python3 scripts/reliability.py crash --rounds 20 --bin $(RELEASE_BIN) --json bench/results/reliability-crash.json
	python3 scripts/reliability.py soak $(if $(MINUTES),--minutes $(MINUTES),--seconds 60) --bin $(RELEASE_BIN) --json bench/results/reliability-soak.json
	python3 scripts/reliability.py hostile --bin $(RELEASE_BIN) --json bench/results/reliability-hostile.json
	bash scripts/fuzz.sh long

# The admin API against docs/openapi.yaml with schemathesis (installed from PyPI when missing;
# skipped, and said so, when it cannot be), plus the token rules (401s, token file mode 0600).
admin-api-check: build
	BIN=$(BIN) bash scripts/admin-api-check.sh

# The README's dashboard screenshots (docs/screenshots/*.png) in headless Chromium through
# Playwright, each page checked for what it must show; installs chromium and playwright if missing.
screenshots: build
	@command -v chromium >/dev/null || { export DEBIAN_FRONTEND=noninteractive; $(SUDO) apt-get install -y chromium || { $(SUDO) apt-get update && $(SUDO) apt-get install -y chromium; }; }
	@python3 -c "import playwright" 2>/dev/null || python3 -m pip install --quiet playwright || python3 -m pip install --quiet --break-system-packages playwright
	python3 scripts/screenshots.py $(BIN) docs/screenshots

# The README's commands against the code: every flag in its command blocks is in that command's
# --help, every `make` target exists, and recipes 1-4 run as written (about a minute; they use
# ports 8080-8082, 8443, 8444 and ./var).
readme-check: build
	python3 scripts/readme-check.py $(BIN)

# Offline checks of deploy/: hadolint, systemd-analyze verify + exposure, kubernetes-validate
# (strict, each manifest and the kustomize output), compose structure, and the variables and
# dashboard metrics against the real binary. Tools that cannot be installed are reported skipped.
deploy-check: build
	BIN=$(BIN) bash scripts/deploy-check.sh

# Runs the edge with the defaults: http://127.0.0.1:8080, store ./var/aasa-edge.sqlite (the admin
# token is written beside it on first start). Extra flags: make run ARGS="--ttl 60 --allow-domain example.com".
run: build
	$(BIN) serve $(ARGS)

# The engine on the bundled example (Apple's applinks example): validate, then match a few URLs.
demo: build
	$(BIN) validate $(EXAMPLE)
	$(BIN) match $(EXAMPLE) --app-id $(EXAMPLE_APP) --domain example.com \
	  https://example.com/buy/42 \
	  'https://example.com/buy/42#no_universal_links' \
	  'https://example.com/help/website/faq?articleNumber=4815' \
	  'https://example.com/help/123?articleNumber=4815' \
	  'https://example.com/help/123?articleNumber=481' \
	  https://example.com/elsewhere

# The shared swcutil-verified corpus through the binary's `match --jsonl` protocol.
conformance: build
	scripts/conformance.sh $(BIN) $(SHARED)

bench: deps
	bench/run-matcher-bench.sh

# Every benchmark in one command: P1-P3 and P5 against nginx/Varnish/curl, C1-C3 on PostgreSQL, P4.
bench-all: deps
	bench/run-all.sh

clean:
	rm -rf .build bench/MatcherBench/.build
