# pushproof: `make demo` and `make test` are the whole setup on a fresh Debian machine (as root).
# Each installs the missing system packages first, then builds.

SWIFT       ?= swift
BUILD_FLAGS ?=
# Debian packages the build, the tests and the benchmarks need.
DEB_PACKAGES := pkg-config libnghttp2-dev libssl-dev libcurl4-openssl-dev libsqlite3-dev \
                libhttp-parser-dev nghttp2-client nghttp2-server curl openssl sqlite3 ca-certificates python3

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

test: deps
	$(SWIFT) build --build-tests $(BUILD_FLAGS)
	$(SWIFT) test --skip-build $(BUILD_FLAGS)

demo: release
	./Scripts/demo.sh

bench: release
	./Benchmarks/run-all.sh

clean:
	rm -rf .build out
