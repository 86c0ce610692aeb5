"""Inside the CLI's sandbox: the stdio MCP server the CLI starts, relaying to the engine.

    python3 mcp_stdio.py SOCKET

Each newline-delimited JSON-RPC message on stdin goes to the engine over the Unix socket SOCKET;
the engine answers each with exactly one line — the response, or `null` for a notification — and
responses are written to stdout. The tools, and what calling them does, live in the engine
(engine/harnesses/cli/mcp_bridge.py). Standard library only.
"""

import socket
import sys


def main(path: str) -> int:
    engine = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    engine.connect(path)
    replies = engine.makefile("rb")
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        engine.sendall(line if line.endswith(b"\n") else line + b"\n")
        answer = replies.readline()
        if not answer:
            return 1  # the engine went away: the rollout is over
        if answer.strip() != b"null":
            out.write(answer)
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
