"""Reads pytest's JUnit XML report: prints how many tests were skipped and why, and fails (exit 1) when a skipped
test claims a real component (the ``real_components`` property tests/conftest.py gives tests marked ``vllm``,
``postgres`` or ``browser``). Under CI such a skip is already a failure; this is the runner's own check, so a
conftest that stopped doing it could not make CI pass by skipping.

    python3 .ci/check_skips.py junit.xml
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def skipped_tests(report: Path) -> list[tuple[str, str, str]]:
    """``(test, reason, real components claimed or "")`` for every skipped test in the report."""
    out = []
    for case in ET.parse(report).getroot().iter("testcase"):
        skip = case.find("skipped")
        if skip is None or skip.get("type") == "pytest.xfail":  # an expected failure ran; it did not skip
            continue
        test = f"{case.get('classname')}::{case.get('name')}"
        props = {p.get("name"): p.get("value") or "" for p in case.iter("property")}
        out.append((test, skip.get("message") or "", props.get("real_components", "")))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: check_skips.py JUNIT_XML", file=sys.stderr)
        return 2
    report = Path(argv[0])
    if not report.is_file():
        print(f"check_skips: no test report at {report} (pytest did not run to the end)", file=sys.stderr)
        return 1
    skipped = skipped_tests(report)
    print(f"{len(skipped)} tests skipped")
    for test, reason, _ in skipped:
        print(f"  skipped {test}: {reason}")
    claimed = [(test, components) for test, _, components in skipped if components]
    if claimed:
        print(f"{len(claimed)} skipped tests claim a real component (they must run under CI):", file=sys.stderr)
        for test, components in claimed:
            print(f"  {test} needs {components}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
