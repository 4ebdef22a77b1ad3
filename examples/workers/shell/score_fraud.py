#!/usr/bin/env python3
"""score-fraud@1 of the order workflow, for `jetflow worker exec`:

    jetflow worker exec --task score-fraud@1 -- python3 examples/workers/shell/score_fraud.py

The invocation arrives as one JSON object on stdin (docs/PROTOCOL.md
section 10); the output is one JSON value on stdout; logs go to stderr.
A non-zero exit fails the attempt with code EXIT_<status>.
"""

import json
import sys

BAD_INPUT = 64  # fails the attempt with code EXIT_64


def main() -> int:
    try:
        request = json.load(sys.stdin)
    except json.JSONDecodeError as err:
        print(f"score-fraud: stdin is not JSON: {err}", file=sys.stderr)
        return BAD_INPUT
    customer = (request.get("with") or {}).get("customer")
    if not isinstance(customer, str):
        print(f'score-fraud: "with.customer" must be a string, got {customer!r}', file=sys.stderr)
        return BAD_INPUT
    score = 0.95 if customer.startswith("c-fraud") else 0.1
    print(
        f"score-fraud: run {request['run']} attempt {request['attempt']} "
        f"(delivery {request['delivery']}): customer {customer} scores {score}",
        file=sys.stderr,
    )
    json.dump({"score": score, "customer": customer, "scorer": "python"}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
