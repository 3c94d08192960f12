#!/usr/bin/env bash
# Checks the Containerfile's runtime closure without an image registry or a container engine
# (none is reachable on the machines pushproof is built on): a minimal Debian root
# (debootstrap --variant=minbase, the base the runtime stage's image is made from) gets exactly
# the Containerfile's runtime packages, the binary built as the build stage builds it
# (--static-swift-stdlib) and the shipped specs at the same paths; then, chrooted as the image's
# user (65534), it runs what a pod runs:
#   - `pushproof credentials` and `pushproof serve` (TLS, strict auth, shipped specs, a record),
#   - `pushproof send ring` through the reference sender (libcurl, HTTP/2, TLS) against it,
#   - `pushproof check` of the record, and `pushproof drive --scenario` with its embedded gateway.
# Any library the binary needs and the packages lack makes the first run fail ("error while
# loading shared libraries"); ldd inside the root is printed first.
#
#   Scripts/check-container-closure.sh [ROOT=.build/closure/root]
#
# Needs root (debootstrap, chroot, mount) and Debian's mirrors (apt); the root is kept and
# reused, and only the packages are installed again. PUSHPROOF_BIN=path skips the build.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
ROOT="$(mkdir -p "${1:-$REPO/.build/closure/root}" && cd "${1:-$REPO/.build/closure/root}" && pwd)"
SUITE="${SUITE:-bookworm}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
[ "$(id -u)" = 0 ] || { echo "check-container-closure: needs root (debootstrap, chroot)" >&2; exit 2; }
command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap

# The runtime stage's packages: the install line of the Containerfile's last stage.
PACKAGES=$(awk '/^FROM /{stage++; lines=""} {if (stage) all[stage]=all[stage] "\n" $0} END{print all[stage]}' "$REPO/Containerfile" \
  | awk '/--no-install-recommends/{getline; gsub(/\\/, ""); print; exit}')
[ -n "$PACKAGES" ] || { echo "check-container-closure: no runtime packages found in the Containerfile" >&2; exit 2; }
echo "runtime packages (Containerfile):$PACKAGES" | tr -s ' '

if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
  echo "debootstrap --variant=minbase $SUITE into $ROOT"
  debootstrap --variant=minbase "$SUITE" "$ROOT" "$MIRROR" >/dev/null
fi
cleanup() { umount "$ROOT/proc" 2>/dev/null || true; umount "$ROOT/dev" 2>/dev/null || true; }
trap cleanup EXIT
mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"
mountpoint -q "$ROOT/dev" || mount --bind /dev "$ROOT/dev"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
# shellcheck disable=SC2086
chroot "$ROOT" /bin/sh -c "apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $PACKAGES >/dev/null"

BIN="${PUSHPROOF_BIN:-}"
if [ -z "$BIN" ]; then
  (cd "$REPO" && swift build -c release --product pushproof --static-swift-stdlib >/dev/null)
  BIN="$(cd "$REPO" && swift build -c release --static-swift-stdlib --show-bin-path)/pushproof"
fi
install -D -m 755 "$BIN" "$ROOT/usr/local/bin/pushproof"
rm -rf "$ROOT/usr/local/share/pushproof" && mkdir -p "$ROOT/usr/local/share/pushproof"
cp -R "$REPO/Specs" "$ROOT/usr/local/share/pushproof/Specs"
WORK=/tmp/closure-check
rm -rf "$ROOT$WORK" && mkdir -p "$ROOT$WORK" && chown 65534:65534 "$ROOT$WORK"
cp "$REPO/Specs/scenarios/poolse-01-ring-group.json" "$ROOT$WORK/scenario.json"

echo "--- ldd /usr/local/bin/pushproof (in the root)"
chroot "$ROOT" ldd /usr/local/bin/pushproof | tee "$ROOT$WORK/ldd.txt"
if grep -q "not found" "$ROOT$WORK/ldd.txt"; then echo "check-container-closure: FAILED: a library is missing" >&2; exit 1; fi
if grep -q "/opt/swift\|libswiftCore" "$ROOT$WORK/ldd.txt"; then echo "check-container-closure: FAILED: the Swift runtime is not linked in" >&2; exit 1; fi

# As the image runs it: user 65534, in /tmp, pushproof on PATH.
in_root() { chroot --userspec=65534:65534 "$ROOT" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$WORK" /bin/sh -c "cd $WORK && $*"; }
echo "--- pushproof credentials, serve, send ring, check"
in_root "pushproof credentials --out creds --bundle-id com.example.loop --project poolse-example >/dev/null"
# exec all the way down, so $! is serve itself (chroot, env and sh each exec the next).
chroot --userspec=65534:65534 "$ROOT" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin /bin/sh -c \
  "cd $WORK && exec pushproof serve --listen 127.0.0.1:0 --admin 127.0.0.1:0 --config creds/gateway.json --specs shipped --record record.jsonl > ready.txt 2> serve.log" &
SERVE=$!
for _ in $(seq 100); do [ -s "$ROOT$WORK/ready.txt" ] && break; sleep 0.1; done
READY=$(head -1 "$ROOT$WORK/ready.txt"); echo "$READY"
PORT=$(sed -n 's/.*ready https:\/\/127.0.0.1:\([0-9]*\).*/\1/p' <<< "$READY")
CERT=$(sed -n 's/.* cert \([^ ]*\).*/\1/p' <<< "$READY")
[ -n "$PORT" ] || { cat "$ROOT$WORK/serve.log" >&2; echo "check-container-closure: FAILED: serve did not start" >&2; exit 1; }
in_root "pushproof send ring --members 50 --gateway https://127.0.0.1:$PORT --ca $CERT --apns-key creds/apns-key.p8 --key-id ABC123DEFG --team-id TEAM123456 --service-account creds/service-account.json --token-url https://127.0.0.1:$PORT/token" | tail -4
kill -TERM "$SERVE"; wait "$SERVE" || true
in_root "pushproof check record.jsonl" | tail -3
echo "--- pushproof drive --scenario (embedded gateway, the reference sender)"
in_root "pushproof drive --scenario scenario.json --rate 20" | tail -4
echo "check-container-closure: the runtime closure holds: $(tr -s ' ' <<< "$PACKAGES" | sed 's/^ //')"
