"""What the gate step prints: a BLOCK or DEFER line per test it does not pass, then one
summary line per suite, ``evidence-gate <suite>: ... -> PASSED`` or ``-> BLOCKED``."""

import re

_GATE_LINE = re.compile(r"^(BLOCK|DEFER) (.+?): ([a-z-]+), (.*)$", re.M)
# Groups: 1 suite, 2 tests, 3 runs, 4 block, 5 defer, 6 pass, 7 suite checks that block, 8 the decision.
_SUMMARY_LINE = re.compile(r"^evidence-gate (\S+): (\d+) tests? over (\d+) runs?: (\d+) block, (\d+) defer, (\d+) pass"
                           r"(?:; (\d+) suite checks? blocks?)? -> (PASSED|BLOCKED)$", re.M)


def gate_lines(text):
    """[(BLOCK|DEFER, test, verdict)] as the gate printed them."""
    return [(kind, test, verdict) for kind, test, verdict, _ in _GATE_LINE.findall(text)]


def summary_line(text, suite):
    """The summary line of `suite` in `text`, as a match of every figure in it (groups above)."""
    for match in _SUMMARY_LINE.finditer(text):
        if match.group(1) == suite:
            return match
    raise AssertionError(f"no 'evidence-gate {suite}: ...' summary line in:\n{text}")


def decision(text, suite):
    """PASSED or BLOCKED from the summary line of `suite` in `text`, whatever its figures say; or None."""
    match = re.search(rf"^evidence-gate {re.escape(suite)}: .* -> (PASSED|BLOCKED)$", text, re.M)
    return match.group(1) if match else None
