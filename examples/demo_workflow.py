"""What ``plait demo`` runs: streamed events, a fan-out to four workers and a fan-in, and a step
timeout handled by a retry.

The pipeline itself ships inside the package (``engine/_demo.py``) so that the installed
``plait`` command works from any directory; this script just runs it.
"""

from plait.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["demo"]))
