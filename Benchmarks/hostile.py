#!/usr/bin/env python3
"""Hostile clients against `pushproof serve` (issue 9), one fresh server per attack.

    hostile.py PUSHPROOF WORKDIR [ATTACK ...]

Everything is on 127.0.0.1, bounded in count and time. For each attack one line: the outcome,
the server's peak RSS (VmHWM: each attack has a server of its own) and the worst wait of a
normal request sent meanwhile by a prober (a fresh HTTP/1.1 connection every 100 ms, to the
same single event loop: every server runs with --threads 1). Standard library only.
"""
import os
import re
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import urllib.request

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
SETTINGS_ACK = b"\x00\x00\x00\x04\x01\x00\x00\x00\x00"
GOAWAY_CODES = {0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR", 3: "FLOW_CONTROL_ERROR",
                6: "FRAME_SIZE_ERROR", 7: "REFUSED_STREAM", 9: "COMPRESSION_ERROR", 11: "ENHANCE_YOUR_CALM"}
# HPACK: POST, http, /, :authority "x" (literal without indexing).
POST_HEADERS = b"\x83\x86\x84\x01\x01x"
GET_HEADERS = b"\x82\x86\x84\x01\x01x"


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def frames(data):
    """(type, flags, stream, payload) of every whole frame in data."""
    out, index = [], 0
    while index + 9 <= len(data):
        length = int.from_bytes(data[index:index + 3], "big")
        if index + 9 + length > len(data):
            break
        out.append((data[index + 3], data[index + 4], int.from_bytes(data[index + 5:index + 9], "big") & 0x7FFFFFFF,
                    data[index + 9:index + 9 + length]))
        index += 9 + length
    return out


def goaway_of(data):
    for kind, _, _, payload in frames(data):
        if kind == 7 and len(payload) >= 8:
            return GOAWAY_CODES.get(int.from_bytes(payload[4:8], "big"), "code %d" % int.from_bytes(payload[4:8], "big"))
    return None


def connect(port, timeout=5.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_all(s, seconds=3.0):
    """Everything the server sends until it closes or `seconds` of silence; and whether it closed."""
    s.settimeout(seconds)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data, True
            data += chunk
    except ConnectionResetError:
        return data, True
    except (socket.timeout, OSError):
        return data, False


class Server:
    def __init__(self, binary, workdir, args, nofile=None):
        command = [binary, "serve", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--threads", "1",
                   "--stop-on-stdin-eof", "--quiet"] + args
        if nofile:
            command = ["prlimit", "--nofile=%d:%d" % (nofile, nofile)] + command
        self.workdir = workdir
        self.process = subprocess.Popen(command, cwd=workdir, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)
        line = self.process.stdout.readline().decode()
        if "ready" not in line:
            raise RuntimeError("serve did not start: " + line)
        scheme = "https://127.0.0.1:" if "https://" in line else "http://127.0.0.1:"
        self.port = int(line.split(scheme, 1)[1].split()[0])
        self.admin_port = int(line.split("admin http://127.0.0.1:", 1)[1].split()[0])
        self.tls = scheme.startswith("https")

    def status(self, field):
        with open("/proc/%d/status" % self.process.pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
        return 0

    def cpu_seconds(self):
        with open("/proc/%d/stat" % self.process.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        peak = self.status("VmHWM")
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        return peak


class Prober(threading.Thread):
    """A normal request on a fresh connection every 100 ms; keeps the worst wait (10 s = no answer)."""

    def __init__(self, port, tls=False):
        super().__init__(daemon=True)
        self.port, self.tls = port, tls
        self.worst, self.failures, self.sent = 0.0, 0, 0
        self.running = True

    def once(self):
        start = time.monotonic()
        try:
            s = connect(self.port, timeout=10)
            if self.tls:
                context = ssl.create_default_context()
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
                s = context.wrap_socket(s)
            s.settimeout(max(0.1, 10 - (time.monotonic() - start)))
            s.sendall(b"GET /probe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = s.recv(64)
            s.close()
            ok = answer.startswith(b"HTTP/1.1 ")
        except OSError:
            ok = False
        waited = min(10.0, time.monotonic() - start)
        if not ok:
            self.failures += 1
            waited = 10.0
        self.worst = max(self.worst, waited)
        self.sent += 1

    def run(self):
        while self.running:
            self.once()
            time.sleep(0.1)

    def finish(self):
        self.running = False
        self.join(12)
        return "worst wait %.2f s (%d probes, %d unanswered)" % (self.worst, self.sent, self.failures)


def h2_connection(port):
    s = connect(port)
    s.sendall(PREFACE + SETTINGS + SETTINGS_ACK)
    return s


# --- the attacks: each returns an outcome text ---

def body_budget(server, max_body, streams):
    """Row 2: many streams, each sent max-body - 1 bytes without END_STREAM, keeping to flow control."""
    s = h2_connection(server.port)
    s.settimeout(2)
    windows, connection_window, reset, pending, closed = {}, 65535, {}, b"", False
    chunk = b"a" * 16384

    def read_some():
        nonlocal pending, connection_window, closed
        try:
            data = s.recv(65536)
        except (socket.timeout, OSError):
            return False
        if not data:
            closed = True
            return False
        pending += data
        got = frames(pending)
        pending = pending[sum(9 + len(f[3]) for f in got):]
        for kind, _, stream, payload in got:
            value = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF if len(payload) >= 4 else 0
            if kind == 8 and stream == 0:
                connection_window += value
            elif kind == 8:
                windows[stream] = windows.get(stream, 0) + value
            elif kind == 3:
                reset[stream] = value
            elif kind == 7:
                closed = True
        return True

    deadline = time.monotonic() + 60
    for index in range(streams):
        stream = 1 + 2 * index
        s.sendall(frame(1, 4, stream, POST_HEADERS))
        windows[stream] = 65535
        remaining = max_body - 1
        while remaining > 0 and stream not in reset and not closed and time.monotonic() < deadline:
            count = min(remaining, 16384, connection_window, windows[stream])
            if count <= 0:
                if not read_some():
                    break
                continue
            s.sendall(frame(0, 0, stream, chunk[:count]))
            connection_window -= count
            windows[stream] -= count
            remaining -= count
    time.sleep(0.3)
    while read_some():
        pass
    rss = server.status("VmRSS")
    s.close()
    refused = sum(1 for code in reset.values() if code == 7)
    return "%d of %d streams refused (REFUSED_STREAM), RSS with all held %d MB" % (refused, streams, rss >> 20)


def descriptors(server, count):
    """Row 3: more idle connections than descriptors."""
    held = []
    for _ in range(count):
        try:
            held.append(connect(server.port, timeout=2))
        except OSError:
            break
    time.sleep(0.5)
    before = server.cpu_seconds()
    time.sleep(2)
    cpu = server.cpu_seconds() - before
    # Two thirds close: more than the backlog queued ahead of the probe.
    for s in held[:2 * len(held) // 3]:
        s.close()
    start = time.monotonic()
    probe = Prober(server.port)
    probe.once()
    waited = time.monotonic() - start if probe.failures == 0 else None
    for s in held[2 * len(held) // 3:]:
        s.close()
    served = "served %.2f s after 2/3 closed" % waited if waited is not None else "not served within 10 s"
    return "%d connections held; server CPU %.2f s in 2 s; %s" % (len(held), cpu, served)


def slowloris(server, count, seconds):
    """Row 4: connections trickling a request head, one byte a second."""
    clients = []
    for _ in range(count):
        s = connect(server.port)
        s.sendall(b"G")
        clients.append(s)
    head = b"ET /slow HTTP/1.1\r\nHost: x\r\nX-Padding: " + b"a" * 100
    for second in range(seconds):
        time.sleep(1)
        for s in clients:
            try:
                s.send(head[second:second + 1])
            except OSError:
                pass
    open_count = 0
    for s in clients:
        s.setblocking(False)
        try:
            s.recv(4096)  # EOF or the 408: closed by the server
        except BlockingIOError:
            open_count += 1  # nothing to read: still open
        except OSError:
            pass
        s.close()
    return "%d of %d still open after %d s" % (open_count, count, seconds)


def hpack_bomb(server, connections, frames_each, seconds):
    """Row 5: 16 KB HEADERS frames of 1-byte references to a 4 KB table entry."""
    insert = b"\x40\x06x-bomb\x7f\xa1\x1e" + b"b" * 4000
    first = GET_HEADERS + insert
    first += b"\xbe" * (16384 - len(first))
    rest = GET_HEADERS + b"\xbe" * (16384 - len(GET_HEADERS))
    attack = PREFACE + SETTINGS + SETTINGS_ACK + frame(1, 5, 1, first)
    attack += b"".join(frame(1, 5, 3 + 2 * i, rest) for i in range(frames_each - 1))
    outcomes = []
    deadline = time.monotonic() + seconds

    def attacker():
        while time.monotonic() < deadline:
            try:
                s = connect(server.port)
                s.sendall(attack)
                data, _ = read_all(s, 3)
                outcomes.append(goaway_of(data) or "no GOAWAY")
                s.close()
            except OSError as error:
                outcomes.append(type(error).__name__)

    threads = [threading.Thread(target=attacker, daemon=True) for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 15)
    kinds = sorted(set(outcomes))
    return "%d bomb connections; GOAWAY: %s" % (len(outcomes), ", ".join(kinds))


def pipelining(server, seconds):
    """Row 6: HTTP/1.1 pipelining under a 20 s latency fault."""
    s = connect(server.port)
    s.setblocking(False)
    request = b"POST /v1/projects/p/messages:send HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
    batch = request * 1000
    sent, peak, deadline = 0, 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            # A partial send continues where it stopped: requests must stay whole.
            sent += s.send(batch[sent % len(batch):])
        except BlockingIOError:
            time.sleep(0.01)
        except OSError:
            break
        peak = max(peak, server.status("VmRSS"))
    s.close()
    return "%d requests taken by the socket in %d s, RSS at most %d MB" % (sent // len(request), seconds, peak >> 20)


def non_reader(server, connections):
    """Clients that send requests and never read the answers."""
    clients = []
    request = b"POST /v1/projects/p/messages:send HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
    for _ in range(connections):
        s = connect(server.port)
        s.setblocking(False)
        clients.append(s)
    batch = request * 1000
    sent = [0] * len(clients)
    for _ in range(40):
        for index, s in enumerate(clients):
            try:
                sent[index] += s.send(batch[sent[index] % len(batch):])  # requests stay whole
            except OSError:
                pass
        time.sleep(0.05)
    rss = 0
    for _ in range(30):  # until the server has read what it will read
        time.sleep(0.1)
        rss = max(rss, server.status("VmRSS"))
    for s in clients:
        s.close()
    return "%d connections not reading: RSS at most %d MB" % (connections, rss >> 20)


def h2_single(server, payload, read_seconds=3):
    s = h2_connection(server.port)
    try:
        s.sendall(payload)
    except OSError:
        pass
    data, closed = read_all(s, read_seconds)
    s.close()
    return data, closed


def flood(server, name, unit, count, prefix=b""):
    data, closed = h2_single(server, prefix + unit * count)
    return "%s flood (%d frames): GOAWAY %s%s" % (name, count, goaway_of(data), ", closed" if closed else "")


def continuation_flood(server):
    payload = frame(1, 0, 1, GET_HEADERS) + b"".join(frame(9, 0, 1, b"\x40\x01a\x01b") for _ in range(10000))
    data, closed = h2_single(server, payload)
    return "CONTINUATION flood: GOAWAY %s%s" % (goaway_of(data), ", closed" if closed else "")


def rapid_reset(server):
    payload = b"".join(frame(1, 5, 1 + 2 * i, GET_HEADERS) + frame(3, 0, 1 + 2 * i, b"\x00\x00\x00\x08")
                       for i in range(3000))
    data, closed = h2_single(server, payload)
    return "3000 streams reset at once: GOAWAY %s%s" % (goaway_of(data), ", closed" if closed else "")


def invalid_frames(server):
    data, closed = h2_single(server, b"this is not an HTTP/2 frame at all, not even close" * 10)
    return "garbage after the preface: GOAWAY %s%s" % (goaway_of(data), ", closed" if closed else "")


def huge_headers(server):
    # 50 KB: nghttp2's HPACK decoder refuses any single field over 64 KB (COMPRESSION_ERROR).
    size = 50000 - 127
    big = b"\x00\x05x-big\x7f" + bytes([0x80 | size & 0x7F, 0x80 | (size >> 7) & 0x7F, size >> 14]) + b"h" * 50000
    block = GET_HEADERS + big
    chunks = [block[i:i + 16384] for i in range(0, len(block), 16384)]
    payload = frame(1, 1, 1, chunks[0])  # END_STREAM; END_HEADERS on the last CONTINUATION
    for index, piece in enumerate(chunks[1:], 1):
        payload += frame(9, 4 if index == len(chunks) - 1 else 0, 1, piece)
    data, _ = h2_single(server, payload, 2)
    answered = [f for f in frames(data) if f[0] in (1, 3) and f[2] == 1]
    h2 = "h2 50 KB header: %s" % ("HEADERS" if any(f[0] == 1 for f in answered) else
                                   "RST_STREAM" if answered else goaway_of(data) or "nothing")
    s = connect(server.port)
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"h" * 100000 + b"\r\n\r\n")
    data, _ = read_all(s, 2)
    s.close()
    return "%s; http/1.1 100 KB header: %s" % (h2, data[:12].decode(errors="replace") or "nothing")


SMUGGLING = {
    "TE-space": b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
    "CL+TE": b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "CL,CL": b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde",
    "TE-obsfold": b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
    "TE-xchunked": b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
    "CL-negative": b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
}


def smuggling(server):
    results = []
    for name, request in SMUGGLING.items():
        s = connect(server.port)
        s.sendall(request)
        data, _ = read_all(s, 1)
        s.close()
        results.append("%s %s" % (name, data[9:12].decode(errors="replace") or "-"))
    return ", ".join(results)


def tls_garbage(server, half_open):
    s = connect(server.port)
    s.sendall(os.urandom(4096))
    _, closed = read_all(s, 3)
    s.close()
    partial = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"  # a ClientHello that stops early
    clients = []
    for _ in range(half_open):
        c = connect(server.port)
        c.sendall(partial)
        clients.append(c)
    start = time.monotonic()
    still = half_open
    while still and time.monotonic() - start < 20:
        still = 0
        for c in clients:
            c.setblocking(False)
            try:
                still += 1 if c.recv(1) else 0
            except BlockingIOError:
                still += 1
            except OSError:
                pass
        time.sleep(0.5)
    for c in clients:
        c.close()
    return "garbage: %s; %d stalled handshakes: %s" % (
        "closed" if closed else "left open", half_open,
        "all closed after %.1f s" % (time.monotonic() - start) if still == 0 else "%d still open after 20 s" % still)


def push_burst(server, count):
    """count APNs VoIP pushes of ~1.1 KB record lines, with h2load: its req/s."""
    body = os.path.join(server.workdir, "padded.json")
    with open(body, "w") as f:
        f.write('{"aps":{},"pad":"%s"}' % ("p" * 600))
    out = subprocess.run(["h2load", "-n", str(count), "-c", "2", "-m", "20", "-d", body, "-H", "authorization: bearer any",
                          "-H", "apns-push-type: voip", "-H", "apns-topic: com.example.loop.voip",
                          "http://127.0.0.1:%d/3/device/%s" % (server.port, "ab" * 32)],
                         capture_output=True, text=True).stdout
    found = re.search(r"([0-9.]+) req/s", out)
    return float(found.group(1)) if found else 0.0


def long_polls(server, query, count):
    """count long polls on the control API, each on a thread until it is answered or serve stops."""
    def poll():
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/requests?%s" % (server.admin_port, query), timeout=120).read()
        except OSError:
            pass
    for _ in range(count):
        threading.Thread(target=poll, daemon=True).start()
    time.sleep(1)


def journal_never_met(server, polls, pushes):
    """Issue 19 row 1: polls waiting for more matches than will come, while pushes arrive."""
    long_polls(server, "wait_ms=60000&min=100000", polls)
    before = server.status("VmRSS")
    rate = push_burst(server, pushes)
    return "%d polls never met, %d pushes at %.0f/s: RSS %d -> %d MB" % (
        polls, pushes, rate, before >> 20, server.status("VmRSS") >> 20)


def journal_token_polls(server, polls, pushes):
    """Row 2: polls waiting on a token no push names; the pushes' rate and CPU, alone and with them."""
    push_burst(server, 5000)
    cpu = server.cpu_seconds()
    alone = push_burst(server, pushes)
    cpu_alone = server.cpu_seconds() - cpu
    long_polls(server, "token=%s&wait_ms=60000" % ("cd" * 32), polls)
    cpu = server.cpu_seconds()
    waited = push_burst(server, pushes)
    cpu_waited = server.cpu_seconds() - cpu
    return "pushes %.0f/s (%.1f us CPU each) alone, %.0f/s (%.1f us) with %d token polls waiting" % (
        alone, cpu_alone / pushes * 1e6, waited, cpu_waited / pushes * 1e6, polls)


def journal_unread(server, connections):
    """Row 3: a full journal's GET /requests asked on connections that never read the answer."""
    push_burst(server, 20000)
    before = server.status("VmRSS")
    clients = []
    for _ in range(connections):
        s = connect(server.admin_port)
        s.sendall(b"GET /requests HTTP/1.1\r\nHost: x\r\n\r\n")
        clients.append(s)
    rss = 0
    for _ in range(30):
        time.sleep(0.1)
        rss = max(rss, server.status("VmRSS"))
    for s in clients:
        s.close()
    return "%d unread answers of a full journal: RSS %d -> at most %d MB" % (connections, before >> 20, rss >> 20)


# name: (serve arguments, RLIMIT_NOFILE, attack)
ATTACKS = {
    "body-budget": (["--h2c", "--max-body", "262144"], None, lambda s: body_budget(s, 262144, 400)),
    "descriptors": (["--h2c"], 256, lambda s: descriptors(s, 400)),
    "slowloris": (["--h2c", "--header-timeout", "5"], None, lambda s: slowloris(s, 200, 12)),
    "hpack-bomb": (["--h2c"], None, lambda s: hpack_bomb(s, 4, 40, 6)),
    "pipelining": (["--h2c", "--config", "{WORK}/latency.json"], None, lambda s: pipelining(s, 10)),
    "non-reader": (["--h2c"], None, lambda s: non_reader(s, 400)),
    "settings-flood": (["--h2c"], None, lambda s: flood(s, "SETTINGS", SETTINGS, 20000)),
    "ping-flood": (["--h2c"], None, lambda s: flood(s, "PING", frame(6, 0, 0, b"pingpong"), 20000)),
    "empty-data-flood": (["--h2c"], None,
                         lambda s: flood(s, "empty DATA", frame(0, 0, 1), 20000, prefix=frame(1, 4, 1, POST_HEADERS))),
    "continuation-flood": (["--h2c"], None, continuation_flood),
    "rapid-reset": (["--h2c"], None, rapid_reset),
    "invalid-frames": (["--h2c"], None, invalid_frames),
    "huge-headers": (["--h2c"], None, huge_headers),
    "smuggling": (["--h2c"], None, smuggling),
    "tls-garbage": ([], None, lambda s: tls_garbage(s, 100)),
    "journal-never-met": (["--h2c"], None, lambda s: journal_never_met(s, 8, 30000)),
    "journal-token-polls": (["--h2c"], None, lambda s: journal_token_polls(s, 100, 20000)),
    "journal-unread": (["--h2c"], None, lambda s: journal_unread(s, 150)),
}


def supported(binary, args):
    """args without the options this build of serve does not have (an older build, for "before")."""
    help_text = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True).stdout
    kept, index = [], 0
    while index < len(args):
        if args[index].startswith("--") and args[index] not in help_text:
            index += 2
            continue
        kept.append(args[index])
        index += 1
    return kept


def main():
    binary, workdir = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or list(ATTACKS)
    with open(os.path.join(workdir, "latency.json"), "w") as f:
        f.write('{"faults": {"fcm": {"latency": {"fixed_ms": 20000}}}}')
    print("%-18s  %-8s  %-44s  %s" % ("attack", "peak_rss", "normal request meanwhile", "outcome"))
    for name in names:
        args, nofile, attack = ATTACKS[name]
        args = supported(binary, [a.replace("{WORK}", workdir) for a in args])
        try:
            server = Server(binary, workdir, args, nofile)
        except (RuntimeError, OSError) as error:
            print("%-18s  %s" % (name, error), flush=True)
            continue
        prober = Prober(server.port, server.tls)
        prober.start()
        try:
            outcome = attack(server)
        except Exception as error:  # an attack that breaks is reported, and the rest still run
            outcome = "attack failed: %r" % error
        waited = prober.finish()
        alive = server.process.poll() is None
        peak = server.stop()
        if not alive:
            outcome += " (SERVER DIED)"
        print("%-18s  %5d MB  %-44s  %s" % (name, peak >> 20, waited, outcome), flush=True)


if __name__ == "__main__":
    main()
