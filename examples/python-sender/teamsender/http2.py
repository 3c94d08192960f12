"""HTTP/2 through the `curl` command line (Python's standard library speaks HTTP/1.1 only).

APNs accepts HTTP/2 only; FCM accepts both. A batch is spread over LANES curl processes run at
once, each reading its requests from a config file on stdin (`-K -`) and sending them one after
another on one kept-alive connection, so a fan-out to thousands costs a few processes and a few
TLS handshakes, not thousands. Each transfer writes its body and headers to files of its own and
prints one status line.

Why not one `curl --parallel`: APNs (and pushproof's gateway, which answers as it does) allows one
stream on a new connection until the first authenticated request, so curl opened a new connection
for nearly every transfer (504 connections for 632 pushes); and curl 7.88 adds queued transfers
only when its poll wakes, up to a second later, which stalled a batch after each window.
"""

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field


@dataclass
class Request:
    url: str
    headers: list  # [(name, value)]
    body: bytes
    method: str = "POST"


@dataclass
class Response:
    """`status` 0 means no HTTP answer (connection refused, reset, timeout): `error` says why."""

    status: int
    headers: dict = field(default_factory=dict)  # lower-case names
    body: bytes = b""
    error: str = None


def _quote(value):
    """A curl config-file string: double quotes, backslash escapes (curl(1), -K)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r") + '"'


#: Concurrent curl processes a batch is spread over: each sends its share one after another
#: on one kept-alive HTTP/2 connection.
LANES = 8


class CurlHTTP2:
    """Sends batches of requests with curl over HTTP/2.

    `h2c`: plain-text HTTP/2 with prior knowledge (no TLS, no upgrade), as a test gateway may
    offer; otherwise TLS with ALPN h2, trusting `ca_file` when given.
    """

    def __init__(self, ca_file=None, h2c=False, lanes=LANES, timeout_seconds=10, curl="curl"):
        self.ca_file = ca_file
        self.h2c = h2c
        self.lanes = lanes
        self.timeout_seconds = timeout_seconds
        self.curl = curl

    def send_all(self, requests):
        """Every request's response, in the order given."""
        if not requests:
            return []
        directory = tempfile.mkdtemp(prefix="teamsender-")
        try:
            lanes = [[] for _ in range(min(self.lanes, len(requests)))]
            for index, request in enumerate(requests):
                base = os.path.join(directory, str(index))
                with open(base + ".req", "wb") as body:
                    body.write(request.body)
                lanes[index % len(lanes)].append(self._transfer_config(index, request, base))
            processes = [subprocess.Popen([self.curl, "-K", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE) for _ in lanes]
            # Every lane's config goes in first, so all of them run while the answers are read.
            for process, lane in zip(processes, lanes):
                process.stdin.write("\nnext\n".join(lane).encode("utf-8"))
                process.stdin.close()
            outputs = [(process.stdout.read(), process.stderr.read(), process.wait()) for process in processes]
            statuses = {}
            for stdout, _, _ in outputs:
                statuses.update(self._statuses(stdout.decode("utf-8", errors="replace")))
            stderr = b" ".join(err for _, err, _ in outputs).decode(errors="replace").strip()
            responses = []
            for index in range(len(requests)):
                base = os.path.join(directory, str(index))
                status, error = statuses.get(index, (0, "curl gave no status: " + stderr))
                responses.append(Response(status=status, headers=_read_headers(base + ".hdr"),
                                          body=_read(base + ".out"), error=error))
            return responses
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def _transfer_config(self, index, request, base):
        lines = [
            "url = " + _quote(request.url),
            "http2-prior-knowledge" if self.h2c else "http2",
            "request = " + _quote(request.method),
            "silent",
            "max-time = " + str(self.timeout_seconds),
            "data-binary = " + _quote("@" + base + ".req"),
            "output = " + _quote(base + ".out"),
            "dump-header = " + _quote(base + ".hdr"),
            # %{exitcode} and %{errormsg}: curl 7.75 and later.
            "write-out = " + _quote(f"{index} %{{http_code}} %{{exitcode}} %{{errormsg}}\n"),
        ]
        if self.ca_file and not self.h2c:
            lines.append("cacert = " + _quote(self.ca_file))
        lines += ["header = " + _quote(f"{name}: {value}") for name, value in request.headers]
        return "\n".join(lines)

    @staticmethod
    def _statuses(output):
        statuses = {}
        for line in output.splitlines():
            parts = line.split(" ", 3)
            if len(parts) < 3 or not parts[0].isdigit():
                continue
            index, http_code, exit_code = int(parts[0]), int(parts[1]), parts[2]
            message = parts[3] if len(parts) > 3 else ""
            statuses[index] = (http_code, None if exit_code == "0" else f"curl exit {exit_code}: {message}")
        return statuses


def _read(path):
    try:
        with open(path, "rb") as file:
            return file.read()
    except FileNotFoundError:
        return b""


def _read_headers(path):
    headers = {}
    for line in _read(path).decode("latin-1").splitlines():
        name, colon, value = line.partition(":")
        if colon and not name.startswith("HTTP/"):
            headers[name.strip().lower()] = value.strip()
    return headers
