"""The pull-request description of a sweep, in Markdown, built from rule metadata and findings."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from . import __version__
from .commit_message import by_family
from .families import FAMILIES, family_of
from .findings import Applicability, Finding
from .rules import ALL


@dataclass(frozen=True)
class Smoke:
    """A smoke run's outcome as the PR body shows it; `evidence`: its engine-tier rows
    (`SmokeReport.engine_evidence()`), shown as a table above the summary."""

    ok: bool
    summary: str
    evidence: tuple[dict, ...] = ()


def render(
    fixed: list[Finding],
    left: list[Finding],
    base: str,
    fix_args: list[str],
    smoke: Smoke | None = None,
) -> str:
    """The whole description; paths in the findings are expected relative to the repo root."""
    sections = [
        _intro(fixed, base),
        _rules({f.rule for f in fixed}),
        _fixes(fixed),
        _evidence(fixed),
        _left(left),
    ]
    if smoke is not None:
        sections.append(_smoke(smoke))
    sections.append(_reproduce(base, fix_args))
    return "\n\n".join(sections) + "\n"


def _intro(fixed: list[Finding], base: str) -> str:
    files = len({f.path for f in fixed})
    families = by_family(fixed)
    if len(families) == 1:
        family = families[0][0]
        what = f"{family.contract} contract violation{_s(fixed)}"
        keeps = f"vLLM's {family.contract} ({family.prefix}) contract"
    else:
        counts = ", ".join(f"{len(mine)} {family.contract} ({family.prefix})" for family, mine in families)
        what = f"contract violation{_s(fixed)} ({counts})"
        keeps = "vLLM's contract it broke"
    return (
        f"This PR fixes {len(fixed)} {what} in {files} file{'' if files == 1 else 's'}, found and fixed by "
        f"contractfix {__version__} on `{base[:12]}`. Each change is the minimal edit that makes the model "
        f"file keep {keeps}; nothing else is touched."
    )


def _rules(codes: set[str]) -> str:
    """Each rule's rationale, under its family's heading when the PR holds several families."""
    out = ["## What was wrong"]
    groups = [(family, sorted(c for c in codes if family_of(c) is family)) for family in FAMILIES]
    families = [(family, mine) for family, mine in groups if mine]
    for family, mine in families:
        if len(families) > 1:
            out += ["", f"### {family.title.capitalize()} ({family.prefix})"]
        level = "###" if len(families) == 1 else "####"
        for rule in (ALL[code] for code in mine):
            out += ["", f"{level} {rule.code} `{rule.name}`", "", rule.summary, "", rule.rationale]
    return "\n".join(out)


def _fixes(fixed: list[Finding]) -> str:
    rows = ["## Fixes", "", "| File | Class | Rule | Keys | Fix |", "|---|---|---|---|---|"]
    for f in [f for _, mine in by_family(fixed) for f in _sorted(mine)]:
        keys = ", ".join(f"`{k}`" for k in f.keys) or "—"
        fix = f.fix.description if f.fix else ""
        rows.append(f"| `{f.path.as_posix()}:{f.line}` | `{f.cls}` | {f.rule} | {keys} | {_cell(fix)} |")
    return "\n".join(rows)


def _evidence(fixed: list[Finding]) -> str:
    out = ["## Evidence", "", "The lines behind each finding on the base commit (where a key is allocated, sent or read):"]
    for f in _sorted(fixed):
        out += ["", f"- **{f.rule} `{f.cls}`** (`{f.path.as_posix()}:{f.line}`): {f.message}"]
        out += [f"  - `{e.path.as_posix()}:{e.line}` {e.role or 'line'}: `{_code(e.text)}`" for e in f.evidence]
    return "\n".join(out)


def _left(left: list[Finding]) -> str:
    if not left:
        return "## Left for review\n\nNothing: every finding on the base commit is fixed here."
    out = ["## Left for review", "", "Found on the base commit but not fixed here; a maintainer should look at these."]
    for code in sorted({f.rule for f in left}):
        rule = ALL[code]
        out += ["", f"**{rule.code} `{rule.name}`**: {rule.summary}", ""]
        mine = [f for f in _sorted(left) if f.rule == code]
        out += [f"- `{f.path.as_posix()}:{f.line}` `{f.cls}`: {f.message} ({_why_left(f)})" for f in mine]
    return "\n".join(out)


def _why_left(f: Finding) -> str:
    if f.fix is None:
        return "no automatic fix"
    if f.fix.applicability is Applicability.UNSAFE:
        return f"unsafe fix, applied only with `--unsafe-fixes`: {f.fix.description}"
    return "the fix did not verify"


def _smoke(smoke: Smoke) -> str:
    verdict = "passed" if smoke.ok else "FAILED"
    table = ""
    if smoke.evidence:
        rows = [
            f"| `{row['arch']}` | {row['tier']} | {row['device']} | {row['vllm']} | PP={row['pp']} vs PP=1: "
            f"{_TOKENS.get(row['tokens_equal'], 'not compared')} | {row['seconds']} |"
            for row in smoke.evidence
        ]
        header = "| Architecture | Tier | Device | vLLM build | Greedy tokens | Seconds |\n|---|---|---|---|---|---|"
        table = "\n".join([header, *rows]) + "\n\n"
    return f"## Smoke test\n\nThe smoke run {verdict}:\n\n{table}```\n{smoke.summary.rstrip()}\n```"


_TOKENS = {True: "equal", False: "DIFFER"}


def _reproduce(base: str, fix_args: list[str]) -> str:
    fix = shlex.join(["contractfix", "fix", *fix_args, "."])
    return "\n".join(
        [
            "## Reproduce",
            "",
            "```sh",
            f"git checkout --detach {base}",
            f"{fix}  # contractfix {__version__}",
            "git diff",
            "```",
        ]
    )


def _sorted(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: f.sort_key)


def _s(items: list) -> str:
    return "" if len(items) == 1 else "s"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    return text.replace("`", "'")
