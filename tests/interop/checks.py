"""The check harness both interop scripts share: one line per check, a closing
"N passed, N failed" line, and a non-zero exit on any failure (a crash counts as one)."""

import asyncio
import os
import sys

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


def http_client(authenticated=True):
    """An httpx client that sends fundi's two credentials (from FUNDI_TOKEN and
    FUNDI_USER_TOKEN) on every request, or none."""
    headers = {}
    if authenticated:
        headers = {
            "Authorization": f"Bearer {os.environ['FUNDI_TOKEN']}",
            "X-Fundi-User-Token": os.environ["FUNDI_USER_TOKEN"],
        }
    return httpx.AsyncClient(headers=headers, timeout=DEADLINE_S)


def run(main):
    """Runs `main(base_url)` with the URL from the command line, then reports and exits."""
    try:
        asyncio.run(main(sys.argv[1]))
    except Exception as error:  # a crash is a failure, with its reason
        RESULTS["failed"] += 1
        print(f"FAILED: the script stopped: {error!r}")
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    sys.exit(1 if RESULTS["failed"] else 0)
