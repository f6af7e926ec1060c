#!/usr/bin/env python3
"""Which of a build's ctest tests start threads, from the record the plain suite left.

usage: scripts/threaded-tests.py BUILD_DIR RECORD

RECORD holds one Catch test spec per line: the tests whose processes started a thread in the
plain suite (scripts/test.sh preloads tests/thread_record/ there). Prints ctest's -I argument
for BUILD_DIR that selects those tests, plus every test that is not a pinbench_tests case
(scripts and builds: few, and their processes are not recorded). A line on stderr says how many
of how many. Exit 2 when the record is missing or names no test of BUILD_DIR: a record that
matches nothing is a broken record, not a suite without threads.
"""
import json
import os
import subprocess
import sys


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    build_dir, record = sys.argv[1], sys.argv[2]
    try:
        with open(record, encoding="utf-8", errors="replace") as f:
            recorded = {line.rstrip("\n") for line in f if line.strip()}
    except OSError as e:
        print(f"threaded-tests: {record}: {e.strerror}", file=sys.stderr)
        return 2
    listing = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build_dir, check=True,
                             capture_output=True, text=True).stdout
    tests = json.loads(listing)["tests"]
    chosen, catch_cases, matched = [], 0, 0
    for number, test in enumerate(tests, start=1):
        command = test.get("command") or []
        is_case = len(command) >= 2 and os.path.basename(command[0]) == "pinbench_tests"
        if not is_case:
            chosen.append(number)
        else:
            catch_cases += 1
            if command[1] in recorded:
                chosen.append(number)
                matched += 1
    if matched == 0:
        print(f"threaded-tests: {record} names none of the {catch_cases} test cases of "
              f"{build_dir}", file=sys.stderr)
        return 2
    print(f"threaded-tests: {matched} of {catch_cases} test cases started a thread in the plain "
          f"suite; with the {len(chosen) - matched} other tests, {len(chosen)} of {len(tests)} run",
          file=sys.stderr)
    print("0,0,0," + ",".join(str(n) for n in chosen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
