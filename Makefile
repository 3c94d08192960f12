# pushproof: `make demo` and `make test` are the whole setup on a fresh Debian machine (as root).
# Each installs the missing system packages first, then builds.

SWIFT       ?= swift
BUILD_FLAGS ?=
# Debian packages the build, the tests and the benchmarks need.
DEB_PACKAGES := pkg-config libnghttp2-dev libssl-dev libcurl4-openssl-dev libsqlite3-dev \
                libhttp-parser-dev libpcre2-dev nghttp2-client nghttp2-server curl openssl sqlite3 ca-certificates python3

.PHONY: all deps build release test demo bench clean

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

build: deps
	$(SWIFT) build $(BUILD_FLAGS)

release: deps
	$(SWIFT) build -c release $(BUILD_FLAGS)

# Serial: the live tests block while curl, h2load and `pushproof serve` run, and on a 2-core
# machine Swift's cooperative pool has 2 threads; run in parallel they starved the Driver's
# timed load-run tests (all counts 0 in 1 run of 2). Serial takes ~70 s instead of ~40 s.
test: deps
	$(SWIFT) build --build-tests $(BUILD_FLAGS)
	$(SWIFT) test --skip-build --no-parallel $(BUILD_FLAGS)

demo: release
	./Scripts/demo.sh

bench: release
	./Benchmarks/run-all.sh

clean:
	rm -rf .build out
