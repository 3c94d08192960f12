"""HTTP/2 through the `curl` command line (Python's standard library speaks HTTP/1.1 only).

APNs accepts HTTP/2 only; FCM accepts both. One `curl --parallel` process sends a whole batch,
multiplexed over one connection per origin, reading its requests from a config file on stdin
(`-K -`), so a fan-out to thousands costs one process, not thousands. Each transfer writes its
body and headers to files of its own and prints one status line.
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


class CurlHTTP2:
    """Sends batches of requests with curl over HTTP/2.

    `h2c`: plain-text HTTP/2 with prior knowledge (no TLS, no upgrade), as a test gateway may
    offer; otherwise TLS with ALPN h2, trusting `ca_file` when given.
    """

    def __init__(self, ca_file=None, h2c=False, parallel=100, timeout_seconds=10, curl="curl"):
        self.ca_file = ca_file
        self.h2c = h2c
        self.parallel = parallel
        self.timeout_seconds = timeout_seconds
        self.curl = curl

    def send_all(self, requests):
        """Every request's response, in the order given."""
        if not requests:
            return []
        directory = tempfile.mkdtemp(prefix="teamsender-")
        try:
            config = []
            for index, request in enumerate(requests):
                base = os.path.join(directory, str(index))
                with open(base + ".req", "wb") as body:
                    body.write(request.body)
                config.append(self._transfer_config(index, request, base))
            completed = subprocess.run(
                [self.curl, "--parallel", "--parallel-max", str(self.parallel), "-K", "-"],
                input="\nnext\n".join(config).encode("utf-8"), capture_output=True, check=False)
            statuses = self._statuses(completed.stdout.decode("utf-8", errors="replace"))
            responses = []
            for index in range(len(requests)):
                base = os.path.join(directory, str(index))
                status, error = statuses.get(index, (0, "curl gave no status: " + completed.stderr.decode(errors="replace").strip()))
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
