"""Inside the CLI's sandbox: bridge the model endpoint onto loopback, then run the CLI.

    python3 entry.py PORT SOCKET -- CLI ARGV...

The sandbox has no network, only its own loopback; a CLI wants an http:// base URL. So this listens
on 127.0.0.1:PORT and pipes every connection to the engine's endpoint on the Unix socket SOCKET, then
runs the CLI and exits with its exit code, leaving the CPU time of the CLI's process tree in
usage.json beside the socket. Standard library only: it runs under the system Python.
"""

import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
import threading

CHUNK = 1 << 16
USAGE = "usage.json"  # written beside the socket when the CLI has exited


def _pipe(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(CHUNK):
            target.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)


def _serve_one(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
    back.start()
    _pipe(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _listen(port: int, path: str) -> socket.socket:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(64)

    def accept() -> None:
        while True:
            client, _ = server.accept()
            threading.Thread(target=_serve_one, args=(client, path), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return server


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: entry.py PORT SOCKET -- ARGV...\n")
        return 2
    port, path, command = int(argv[0]), argv[1], argv[3:]
    _listen(port, path)
    try:
        code = subprocess.run(command, stdin=subprocess.DEVNULL).returncode
    except OSError as exc:
        sys.stderr.write(f"entry.py: cannot run {command[0]}: {exc}\n")
        return 127
    # The CPU the CLI's process tree used (outside, a PID namespace hides it from the engine's rusage).
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    with contextlib.suppress(OSError), open(os.path.join(os.path.dirname(path), USAGE), "w") as f:
        json.dump({"cpu_seconds": usage.ru_utime + usage.ru_stime, "max_rss_mb": usage.ru_maxrss / 1024}, f)
    return code


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(code if code >= 0 else 128 - code)
