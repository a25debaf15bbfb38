# The two set-up commands of the README:
#   make demo   scan the bundled fixtures
#   make test   run every test
# Both install the Debian packages the build and the sandbox need when they
# are missing and you are root (scripts/deps); `make test` also starts a
# Docker engine and builds the probe image offline (scripts/start-docker,
# images/build-offline.sh) so the docker runtime's tests run too, and a
# single-node Kubernetes cluster for the kubernetes runtime's
# (scripts/start-kubernetes; stopped when the tests end).

GO      ?= go
TAGS    ?= seccomp
PYTHON  ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
BIN     := bin/nondet-sandbox

.PHONY: demo test test-unit build deps corpus test-deps runsc docker image kubernetes bench bench-env

deps:
	@scripts/deps

# The real-world corpus: Debian's python3-* packages (fixtures/corpus).
corpus:
	@scripts/corpus-deps

# What the tests read the reports with (junitparser for --format junit).
test-deps:
	@scripts/test-deps

# gVisor's runsc for the oci runtime's runsc tests (built from the module
# proxy when missing).
runsc:
	@scripts/runsc

build: deps
	$(GO) build -tags "$(TAGS)" -o $(BIN) ./cmd/nondet-sandbox

demo: build
	$(BIN) run --python $(PYTHON) fixtures/known.py; test $$? -le 1

# The docker runtime's engine and image; as a non-root user without Docker
# this says why and the docker tests skip.
docker:
	@if [ "$$(id -u)" = 0 ] || docker info >/dev/null 2>&1; then scripts/start-docker; \
	else echo "no Docker engine and not root: the docker runtime's tests will skip" >&2; fi

image: docker
	@if docker info >/dev/null 2>&1; then images/build-offline.sh >/dev/null; fi

# A single-node Kubernetes cluster for the kubernetes runtime's tests, built
# offline from the Go module proxy (about 9 min the first time, cached after)
# with its own containerd; the probe image goes in from Docker. As a
# non-root user this says why and those tests skip. `make test` stops it
# when the tests end.
kubernetes: image
	@if [ "$$(id -u)" = 0 ]; then scripts/start-kubernetes >/dev/null; \
	else echo "not root: no Kubernetes cluster; the kubernetes runtime's tests will skip" >&2; fi

# The unit tier: no root, no packages installed, no daemon; Python 3 only.
test-unit:
	$(GO) test -short -count=1 ./...

test: deps corpus test-deps runsc image kubernetes
	@s=0; $(GO) test -race -tags "$(TAGS)" -count=1 -p 1 -timeout 60m ./... || s=$$?; \
	if [ "$$(id -u)" = 0 ]; then scripts/stop-kubernetes >/dev/null 2>&1 || true; fi; exit $$s

bench: build
	$(BIN) bench --python $(PYTHON) --runtimes host,embedded,oci,docker fixtures/known.py

# The environment audit of docs/benchmark.md (scripts/bench-env-audit).
bench-env: build
	BIN=$(BIN) PYTHON=$(PYTHON) scripts/bench-env-audit
