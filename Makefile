# The two set-up commands of the README:
#   make demo   scan the bundled fixtures
#   make test   run every test
# Both install the Debian packages the build and the sandbox need when they
# are missing and you are root (see scripts/deps); otherwise they say which.

GO      ?= go
TAGS    ?= seccomp
PYTHON  ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
BIN     := bin/nondet-sandbox

.PHONY: demo test build deps bench

deps:
	@scripts/deps

build: deps
	$(GO) build -tags "$(TAGS)" -o $(BIN) ./cmd/nondet-sandbox

demo: build
	$(BIN) run --python $(PYTHON) fixtures/known.py; test $$? -le 1

test: deps
	$(GO) test -tags "$(TAGS)" -count=1 -timeout 30m ./...

bench: build
	$(BIN) bench --python $(PYTHON) fixtures/known.py
