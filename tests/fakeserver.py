"""A scriptable OpenAI-compatible completions server on 127.0.0.1 for fault-injection tests."""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeServer:
    """Serve ``/v1/completions``; each request takes the next scripted fault, then answers normally.

    Script entries: ``("status", code)``, ``("status", code, retry_after)``,
    ``("status", code, retry_after, message)`` (retry_after None: no header), ``("sleep", seconds)``
    (delay before a normal answer), ``("bad_json",)``, ``("stop",)`` (drop the connection without an
    answer and stop listening: later requests find the port closed, "connection refused").
    ``logprobs=False`` omits log-probabilities.  ``delay`` seconds pass before every normal answer;
    with ``capacity``, at most that many requests are worked on at once and the rest wait (a GPU
    server whose batch is full).  An answer is a function of (prompt, seed) only, so
    several servers answer a request alike.  With ``gate`` (a ``threading.Event``), normal answers
    wait until it is set: a client stays in the middle of its run as long as a test needs.
    """

    def __init__(self, script=(), *, logprobs: bool = True, delay: float = 0.0, capacity: int | None = None,
                 gate: threading.Event | None = None) -> None:
        self.gate = gate
        self.script = list(script)
        self.logprobs = logprobs
        self.delay = delay
        self.requests: list[dict] = []
        self.answered: list[dict] = []  # bodies of requests that got a normal answer, as sent
        self.headers: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self.slots = threading.BoundedSemaphore(capacity) if capacity else None
        self.stopped = False
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                    action = server.script.pop(0) if server.script else ("ok",)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                self.left = False
                try:
                    server.handle(self, action, body)
                finally:
                    server.leave(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> "FakeServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop listening (idempotent): requests from now on are refused."""
        with self.lock:
            if self.stopped:
                return
            self.stopped = True
        self.httpd.shutdown()
        self.httpd.server_close()

    def leave(self, handler) -> None:
        """The request of ``handler`` is no longer in flight (once): its answer is being sent, so the
        client may already send its next request (counting it until the handler returned made a busy
        machine see one request more than the client had in flight)."""
        with self.lock:
            if not handler.left:
                handler.left = True
                self.in_flight -= 1

    def handle(self, handler, action, body) -> None:
        kind = action[0]
        if kind == "stop":
            handler.close_connection = True  # no answer: the client sees the connection dropped
            threading.Thread(target=self.stop, daemon=True).start()
            return
        if kind == "status":
            message = action[3] if len(action) > 3 else f"injected {action[1]}"
            payload = json.dumps({"error": {"message": message}}).encode()
            handler.send_response(action[1])
            if len(action) > 2 and action[2] is not None:
                handler.send_header("Retry-After", str(action[2]))
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
            return
        if kind == "sleep":
            time.sleep(action[1])
        if self.gate is not None:
            self.gate.wait(timeout=50)
        if self.delay:
            with self.slots or contextlib.nullcontext():
                time.sleep(self.delay)
        if kind == "bad_json":
            payload = b'{"choices": [{"text": "unterminated'
        else:
            payload = json.dumps(self.answer(body)).encode()
        self.leave(handler)
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            return  # the client timed out and left
        if kind != "bad_json":
            with self.lock:
                self.answered.append(body)

    def answer(self, body: dict) -> dict:
        if body.get("echo"):
            prompt = body["prompt"]
            words = prompt.split(" ")
            tokens = [words[0]] + [" " + w for w in words[1:]]
            offsets, at = [], 0
            for token in tokens:
                offsets.append(at)
                at += len(token)
            choice = {"text": prompt + " x", "index": 0}
            if self.logprobs:
                values = [None] + [-0.5 * (i + 1) for i in range(len(tokens) - 1)]
                choice["logprobs"] = {"tokens": tokens, "token_logprobs": values, "text_offset": offsets}
            else:
                choice["logprobs"] = None
            return {"choices": [choice]}
        digest = hashlib.sha256(f"{body['prompt']}|{body.get('seed')}".encode()).hexdigest()
        return {"choices": [{"text": f" a worker number {int(digest[:4], 16)}. More text", "index": 0}]}
