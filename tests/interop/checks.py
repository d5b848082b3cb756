"""The check harness both interop scripts share: one line per check, a closing
"N passed, N failed" line, and a non-zero exit on any failure (a crash counts as one)."""

import asyncio
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

RESULTS = {"passed": 0, "failed": 0}

# Longest a script waits for a task to reach a state.
DEADLINE_S = 30


def check(name, condition, detail=""):
    if condition:
        RESULTS["passed"] += 1
        print(f"ok: {name}")
    else:
        RESULTS["failed"] += 1
        print(f"FAILED: {name} {detail}")


def credentials(authenticated=True):
    """fundi's two credentials (from FUNDI_TOKEN and FUNDI_USER_TOKEN) as headers, or
    none."""
    if not authenticated:
        return {}
    return {
        "Authorization": f"Bearer {os.environ['FUNDI_TOKEN']}",
        "X-Fundi-User-Token": os.environ["FUNDI_USER_TOKEN"],
    }


def http_client(authenticated=True):
    """An httpx client that sends fundi's two credentials on every request, or none."""
    return httpx.AsyncClient(headers=credentials(authenticated), timeout=DEADLINE_S)


class WebhookReceiver:
    """A webhook on 127.0.0.1 (a thread) that records every POST as (headers, JSON body)."""

    def __init__(self):
        self.hits = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"null")
                receiver.hits.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    async def wait_for(self, done):
        """Waits (up to the deadline) until done(hits) holds; returns the hits."""
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            if done(self.hits):
                return list(self.hits)
            await asyncio.sleep(0.05)
        raise AssertionError(f"the webhook never saw it; hits: {self.hits}")


def run(main, *args):
    """Runs `main(base_url, *args)` with the URL from the command line, then reports and
    exits."""
    try:
        asyncio.run(main(sys.argv[1], *args))
    except Exception as error:  # a crash is a failure, with its reason
        RESULTS["failed"] += 1
        print(f"FAILED: the script stopped: {error!r}")
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    sys.exit(1 if RESULTS["failed"] else 0)
