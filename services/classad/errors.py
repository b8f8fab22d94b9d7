"""The ClassAd package's exceptions: malformed text, and an evaluation missing its inputs."""

from __future__ import annotations


class ClassAdSyntaxError(ValueError):
    """Malformed ClassAd expression or ad.

    ``position`` is the 0-based character offset in ``text``; ``line`` and ``column`` are
    1-based; ``expected`` says what the parser wanted there.
    """

    def __init__(self, message: str, text: str = "", position: int = 0, expected: str = "") -> None:
        self.text = text
        self.position = max(0, min(position, len(text)))
        self.expected = expected
        before = text[: self.position]
        self.line = before.count("\n") + 1
        self.column = self.position - (before.rfind("\n") + 1) + 1
        self.reason = message
        where = f"line {self.line}, column {self.column}"
        got = text[self.position : self.position + 20].split("\n", 1)[0]
        detail = f"{message} at {where}"
        if expected:
            detail += f": expected {expected}"
        detail += f", found {got!r}" if got else ", found end of input"
        super().__init__(detail)


class MissingEvalInput(ValueError):
    """An expression read ``time()`` (``CurrentTime``, ``formatTime()``) or ``random()``
    in an evaluation that was given no ``now`` or no ``rng``.

    The evaluator has no clock and no randomness of its own, so a daemon's core evaluates
    at the pool's date with its own seeded generator and a virtual run replays byte for
    byte; a tool that wants HTCondor's wall clock passes ``now=time.time()`` (and an
    ``rng``) itself. A ValueError: a configuration knob that calls time() is a bad value."""
