"""Start-up to the first request: from `arena evaluate` being started to its first HTTP request arriving.

    python benchmarks/startup.py [--repeat 7]

A bare listener in this process (stdlib sockets, on 127.0.0.1) stands in for an OpenAI-compatible server: it
notes when the first request's bytes arrive and answers every request with a small valid completion, so the
figure is the user's wait before anything is measured: interpreter start, imports, reading the project,
opening the store and its writer process, the engine's first call on the wire. Each repetition is a new
process; the figure is the median (a shared machine moves single runs by tens of percent). Also printed:
`python -c pass` in the same runs (the interpreter's own floor) and the ratio of the two medians.
Target (issue brief): start-up to the first request <= 0.7 s on the 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

_BODY = json.dumps({
    "id": "x", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "yes"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}).encode()
_RESPONSE = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
             + str(len(_BODY)).encode() + b"\r\n\r\n" + _BODY)


class _Listener:
    """Accepts connections; each request gets _RESPONSE; the first request's arrival time is kept."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.first: float | None = None
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        with conn:
            while True:
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                with self.lock:
                    if self.first is None:
                        self.first = time.perf_counter()
                buf += data
                while b"\r\n\r\n" in buf:
                    head, _, rest = buf.partition(b"\r\n\r\n")
                    length = 0
                    for line in head.split(b"\r\n"):
                        if line.lower().startswith(b"content-length:"):
                            length = int(line.split(b":", 1)[1])
                    if len(rest) < length:
                        break
                    buf = rest[length:]
                    conn.sendall(_RESPONSE)

    def reset(self) -> None:
        with self.lock:
            self.first = None


def _project(path: Path, port: int) -> None:
    path.write_text(f"""
[project]
name = "startup"
[run]
concurrency = 1
trials = 1
[[models]]
key = "m"
provider = "openai"
model = "m"
base_url = "http://127.0.0.1:{port}/v1"
[[cases]]
id = "c1"
input = "q"
expected = "yes"
""")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    listener = _Listener()
    arena = [sys.executable, "-m", "arenatui"]
    first: list[float] = []
    floor: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "arena.toml"
        _project(project, listener.port)
        # As a user's second start finds it: bytecode cached. With PYTHONDONTWRITEBYTECODE set (some CI images and
        # containers set it) every start compiles all of arenatui from source, ~0.2 s more; say so when it is set.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        if "PYTHONDONTWRITEBYTECODE" in os.environ:
            print("note: PYTHONDONTWRITEBYTECODE is set here; unset for the measured runs (bytecode is cached as on a "
                  "user's machine)", file=sys.stderr)
        for i in range(args.repeat + 1):  # the first run warms the page cache and .pyc files: not counted
            listener.reset()
            t0 = time.perf_counter()
            subprocess.run([*arena, "evaluate", "--project", str(project), "--db", str(Path(tmp) / f"{i}.db"),
                            "--quiet", "--no-report"], env=env, check=True, stdout=subprocess.DEVNULL)
            assert listener.first is not None, "no request arrived"
            t1 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            t2 = time.perf_counter()
            if i:
                first.append(listener.first - t0)
                floor.append(t2 - t1)
    med, base = statistics.median(first), statistics.median(floor)
    for name, value, unit in (("startup_to_first_request_s", med, "s"),
                              ("startup_to_first_request_min_s", min(first), "s"),
                              ("python_bare_start_s", base, "s"),
                              ("startup_over_bare_python", med / base, "ratio")):
        print(json.dumps({"name": name, "value": round(value, 4), "unit": unit}))


if __name__ == "__main__":
    main()
