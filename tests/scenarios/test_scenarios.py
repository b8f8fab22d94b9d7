"""Scenarios as data (etcd raft's testdata style): each file in testdata/ is a script of
commands, each followed by ``----`` and the output it must print, on the pure cores (no
clock but the script's, no network).

    MOCKPOOL_REWRITE=1 pytest tests/scenarios    # rewrite the expected blocks on purpose

A block is::

    command key=value ... [word ...]
    input lines (config text, a submit description)
    ----
    expected output
    (a blank line ends it)

Lines starting with ``#`` between blocks are comments (say why the numbers are what they
are). Negotiator commands: ``config``, ``slots``, ``request``, ``usage``, ``negotiate``,
``userprio``. Schedd commands: ``config``, ``submit``, ``q``, ``act``, ``policy``,
``history``, ``events``.
"""

from __future__ import annotations

import os
import random
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mockpool.classad import ClassAd, parse_expr
from mockpool.config import ConfigDict, parse_config
from mockpool.jobstates import STATUS_NAMES
from mockpool.negotiator import Accountant, CycleAds, ResourceRequest, negotiate
from mockpool.schedd.queue import JobQueue
from mockpool.schedd.schedd import Schedd

DATA = Path(__file__).parent / "testdata"
REWRITE = os.environ.get("MOCKPOOL_REWRITE") == "1"
STARTD = "10.0.0.1:9618"
SCHEDD = "10.0.0.2:9618"


@dataclass
class Block:
    line: int  # where its command is, 1-based
    command: str
    args: dict[str, str]
    words: list[str]
    input: str
    expected: str
    comments: list[str] = field(default_factory=list)


class ScriptError(ValueError):
    pass


def parse_script(path: Path) -> list[Block]:
    lines = path.read_text().splitlines()
    blocks: list[Block] = []
    comments: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.startswith("#"):
            if line.startswith("#"):
                comments.append(line)
            i += 1
            continue
        start = i + 1
        try:
            head = shlex.split(line)
        except ValueError as e:
            raise ScriptError(f"{path.name}:{start}: {e}") from None
        args = {k: v for k, _, v in (w.partition("=") for w in head[1:] if "=" in w)}
        words = [w for w in head[1:] if "=" not in w]
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i] != "----":
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise ScriptError(f"{path.name}:{start}: {head[0]!r} has no '----' line")
        i += 1
        out: list[str] = []
        while i < len(lines) and lines[i].strip():
            out.append(lines[i])
            i += 1
        blocks.append(Block(start, head[0], args, words, "\n".join(body), "\n".join(out), comments))
        comments = []
    return blocks


def render(blocks: list[Block], outputs: list[str]) -> str:
    parts = []
    for b, out in zip(blocks, outputs, strict=True):
        head = shlex.join([b.command, *b.words, *(f"{k}={v}" for k, v in b.args.items())])
        text = "\n".join([*b.comments, head, *([b.input] if b.input else []), "----", out])
        parts.append(text.rstrip("\n"))
    return "\n\n".join(parts) + "\n"


# ------------------------------------------------------------------ the negotiator's world


class NegotiatorWorld:
    def __init__(self) -> None:
        self.config = ConfigDict()
        self.slots: list[ClassAd] = []
        self.privates: list[ClassAd] = []
        self.requests: list[ResourceRequest] = []
        self.accountant: Accountant | None = None

    def acct(self) -> Accountant:
        if self.accountant is None:
            self.accountant = Accountant.from_config(self.config.for_subsystem("NEGOTIATOR"))
        return self.accountant

    def do(self, b: Block) -> str:
        a = b.args
        if b.command == "config":
            self.config = parse_config(b.input, f"<config at line {b.line}>", self.config)
            self.accountant = None
            return "ok"
        if b.command == "slots":
            for _ in range(int(a.get("count", "1"))):
                self._slot(a)
            return f"{len(self.slots)} slots"
        if b.command == "request":
            self._request(a)
            return f"{len(self.requests)} requests"
        if b.command == "usage":
            acct = self.acct()
            if "factor" in a:
                acct.set_factor(b.words[0], float(a["factor"]))
            if "usage" in a:
                acct.set_accumulated_usage(b.words[0], float(a["usage"]))
            if "rup" in a:
                acct.set_priority(b.words[0], float(a["rup"]))
            return "ok"
        if b.command == "negotiate":
            return self._negotiate(float(a.get("now", "0")), "log" in b.words)
        if b.command == "userprio":
            acct = self.acct()
            acct.update_priorities(float(a.get("now", "0")))
            names = sorted({*b.words} or set(acct.to_dict().get("records", {})))
            return "\n".join(
                f"{n} rup={acct.rup(n):.4g} factor={acct.factor(n):g} eup={acct.eup(n):.4g}"
                for n in names
            )
        raise ScriptError(f"unknown command {b.command!r}")

    def _slot(self, a: dict[str, str]) -> None:
        i = len(self.slots)
        name = f"slot1@exec{i:03d}"
        ad = ClassAd(
            MyType="Machine",
            Name=name,
            Machine=f"exec{i:03d}",
            PartitionableSlot=False,
            State="Unclaimed",
            Activity="Idle",
            Cpus=int(a.get("cpus", "1")),
            Memory=int(a.get("memory", "1024")),
            Disk=1_000_000,
            Start=True,
            MyAddress=f"<{STARTD}>",
        )
        ad["Requirements"] = parse_expr(a.get("requirements", "START"))
        ad["SlotWeight"] = parse_expr("Cpus")
        if "rank" in a:
            ad["Rank"] = parse_expr(a["rank"])
        if "kflops" in a:
            ad["KFlops"] = int(a["kflops"])
        if who := a.get("claimed"):
            ad.update(State="Claimed", Activity="Busy", RemoteOwner=who, AccountingGroup=who)
            ad["RemoteUserPrio"] = float(a.get("remoteprio", "0.5"))
        self.slots.append(ad)
        self.privates.append(ClassAd(Name=name, Capability=f"<{STARTD}>#1#{i}#secret{i}"))

    def _request(self, a: dict[str, str]) -> None:
        ac = int(a.get("ac", str(len(self.requests) + 1)))
        ad = ClassAd(
            ClusterId=ac,
            ProcId=0,
            RequestCpus=int(a.get("cpus", "1")),
            RequestMemory=int(a.get("memory", "1")),
            RequestDisk=1,
            AutoClusterId=ac,
            Submitter=a["submitter"],
            ResourceRequestCount=int(a.get("count", "1")),
        )
        ad["Requirements"] = parse_expr(a.get("requirements", "TARGET.Cpus >= RequestCpus"))
        if "rank" in a:
            ad["Rank"] = parse_expr(a["rank"])
        if "limits" in a:
            ad["ConcurrencyLimits"] = a["limits"]
        self.requests.append(ResourceRequest.from_ad(ad, a.get("schedd", "schedd1"), SCHEDD))

    def _negotiate(self, now: float, log: bool) -> str:
        res = negotiate(
            CycleAds(list(self.slots), list(self.privates)),
            self.requests,
            self.acct(),
            self.config.for_subsystem("NEGOTIATOR"),
            now,
            rng=random.Random(0),
        )
        self.accountant = res.accountant
        out = [f"log {line.text}" for line in res.log] if log else []
        by_slot = {ad.get_value("Name"): ad for ad in self.slots}
        for m in res.matches:
            out.append(f"match {m.submitter} ac={m.autocluster_id} -> {m.slot_name}")
            slot = by_slot[m.slot_name]  # claimed from now on, by whom it matched
            slot.update(State="Claimed", Activity="Busy", RemoteOwner=m.submitter)
            slot["AccountingGroup"] = m.submitter
        for r in res.rejections:
            out.append(f"reject {r.submitter} ac={r.autocluster_id}: {r.reason}")
        self.requests = []  # each cycle, the schedds send their requests afresh
        return "\n".join(out) or "no matches"


# ------------------------------------------------------------------ the schedd's world


class ScheddWorld:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.config = ConfigDict()
        self.now = 0.0
        self._schedd: Schedd | None = None

    @property
    def schedd(self) -> Schedd:
        if self._schedd is None:
            self._schedd = Schedd(
                "schedd1", JobQueue(self.folder / "queue.sqlite"), self.config, self.now
            )
            self._schedd.address = f"<{SCHEDD}>"
        return self._schedd

    def do(self, b: Block) -> str:
        a = b.args
        if "now" in a:
            self.now = float(a["now"])
        if b.command == "config":
            self.config = parse_config(b.input, f"<config at line {b.line}>", self.config)
            return "ok"
        if b.command == "submit":
            try:
                cluster, n = self.schedd.submit(
                    b.input + "\n", "submit", a.get("owner", "alice"), self.now
                )
            except ValueError as e:
                return f"error: {e}"
            return f"{n} job(s) submitted to cluster {cluster}."
        if b.command == "q":
            return self._table(self.schedd.query(a.get("constraint", ""), now=self.now))
        if b.command == "history":
            return self._table(self.schedd.history(now=self.now))
        if b.command == "act":
            results, _ = self.schedd.act(
                b.words[0],
                b.words[1:],
                a.get("constraint", ""),
                a.get("reason", ""),
                a.get("by", "alice"),
                self.now,
                only_owner=a.get("only_owner"),
            )
            return "\n".join(
                f"{r.job_id} {'ok' if r.ok else 'refused'} {r.error}".rstrip() for r in results
            )
        if b.command == "policy":
            s = self.schedd
            s.policy_round(s.policy_due(self.now), self.now)
            return self._table(s.query(now=self.now))
        if b.command == "events":
            return "\n".join(
                f"{kind} " + " ".join(f"{k}={v}" for k, v in sorted(fields.items()))
                for kind, fields in self.schedd.drain_events()
            )
        raise ScriptError(f"unknown command {b.command!r}")

    @staticmethod
    def _table(ads: list[ClassAd]) -> str:
        rows = []
        for ad in ads:
            status = STATUS_NAMES.get(ad.get_value("JobStatus"), "?")
            job = f"{ad.get_value('ClusterId')}.{ad.get_value('ProcId')}"
            reason = ad.get_value("HoldReason") if status == "Held" else None
            rows.append(
                f"{job} {ad.get_value('Owner')} {status}" + (f" ({reason})" if reason else "")
            )
        return "\n".join(rows) or "(no jobs)"


# ------------------------------------------------------------------ the runner

SCRIPTS = sorted(DATA.glob("*/*.txt"))


@pytest.mark.parametrize("path", SCRIPTS, ids=[f"{p.parent.name}/{p.stem}" for p in SCRIPTS])
def test_scenario(path: Path, tmp_path: Path) -> None:
    blocks = parse_script(path)
    world = NegotiatorWorld() if path.parent.name == "negotiator" else ScheddWorld(tmp_path)
    outputs = [world.do(b) for b in blocks]
    if REWRITE:
        path.write_text(render(blocks, outputs))
        return
    for b, out in zip(blocks, outputs, strict=True):
        assert out == b.expected, f"{path.name}:{b.line}: {b.command}\n--- got\n{out}"


def test_there_are_ten_negotiator_and_five_schedd_scenarios() -> None:
    assert len(list((DATA / "negotiator").glob("*.txt"))) >= 10
    assert len(list((DATA / "schedd").glob("*.txt"))) >= 5


def test_a_block_without_its_separator_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("# a comment\nnegotiate\nno separator here\n")
    with pytest.raises(ScriptError, match=r"bad\.txt:2: 'negotiate' has no '----' line"):
        parse_script(bad)
