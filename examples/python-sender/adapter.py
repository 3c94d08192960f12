#!/usr/bin/env python3
"""pushproof adapter for teamsender: `pushproof run --sender-cmd 'python3 examples/python-sender/adapter.py' …`

Seeded bugs: PUSHPROOF_EXAMPLE_BUG=<name>[,<name>…] (see README.md).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from teamsender import bugs  # noqa: E402
from teamsender.protocol import Adapter, serve  # noqa: E402


def main():
    try:
        enabled = bugs.enabled_from_environment()
    except bugs.UnknownBug as error:
        print(error, file=sys.stderr)
        return 2
    if enabled:
        print(f"teamsender: seeded bugs on: {', '.join(sorted(enabled))}", file=sys.stderr)
    serve(Adapter(bugs.Bugs(enabled)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
