"""SARIF 2.1.0 output: rule metadata as the driver's rules, findings as results, fixes as replacements."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from urllib.parse import quote

from .. import __version__
from ..findings import Finding, Report
from ..replacements import Replacement
from ..rules import ALL, Rule
from ..rules.docs import DOCS, explain_text
from . import relative, relative_path, repository_root

VERSION = "2.1.0"
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
# Each rule's helpUri is its section here (pyproject.toml's Documentation URL).
REPOSITORY = "https://github.com/contractfix/contractfix"


def document(
    report: Report,
    verbose: bool = False,
    preview: Report | None = None,
    statistics: list[dict] | None = None,
) -> dict:
    """One run of contractfix. Each finding that `preview` (an in-memory `fix` run) fixed carries
    that fix as replacements; `verbose` adds the unverified notes as `note` results. URIs are
    relative to the repository root (%SRCROOT%), so code scanning maps them from any subfolder."""
    root = repository_root()
    fixes: dict[Finding, list[tuple[Path, tuple[Replacement, ...]]]] = {}
    for change in preview.changes if preview else ():
        for finding, found in change.replacements.items():
            fixes.setdefault(finding, []).append((change.path, found))
    order = {code: i for i, code in enumerate(ALL)}
    results = [_result(f, order, f.level, fixes.get(f, []), root) for f in report.findings]
    if verbose:
        results += [_result(f, order, "note", [], root) for f in report.notes]
    run = {
        "tool": {
            "driver": {
                "name": "contractfix",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": [_rule(r) for r in ALL.values()],
            }
        },
        "originalUriBaseIds": {SRCROOT: {"uri": root.as_uri() + "/"}},
        "columnKind": "unicodeCodePoints",
        "invocations": [
            {
                "executionSuccessful": not report.errors,
                "toolExecutionNotifications": [
                    {
                        "level": "error",
                        "message": {"text": e.message},
                        "locations": [{"physicalLocation": {"artifactLocation": _artifact(e.path, root)}}],
                    }
                    for e in report.errors
                ],
            }
        ],
        "results": results,
    }
    if statistics is not None:
        run["properties"] = {"statistics": statistics}
    return {"$schema": SCHEMA, "version": VERSION, "runs": [run]}


def _rule(rule: Rule) -> dict:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.rationale},
        "help": {"text": explain_text(rule)},
        "helpUri": help_uri(rule),
        "defaultConfiguration": {"level": "error"},
        "properties": {"fix": rule.fix_label, "tags": ["pipeline-parallel", "vllm"]},
    }


def help_uri(rule: Rule) -> str:
    """The rule's page (`rules.docs.DOCS`), on the repository's default branch."""
    return f"{REPOSITORY}/blob/main/{DOCS}/{rule.code}.md"


def _result(f: Finding, order: dict[str, int], level: str, changes: list, root: Path) -> dict:
    properties: dict[str, object] = {"class": f.cls, "keys": list(f.keys)}
    result: dict[str, object] = {
        "ruleId": f.rule,
        "ruleIndex": order[f.rule],
        "level": level,
        "message": {"text": f"{f.message} ({f.cls})" + (f": {f.note}" if f.note else "")},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": _artifact(f.path, root),
                    "region": {"startLine": f.line, "startColumn": f.column + 1},
                },
                "logicalLocations": [{"name": f.cls, "kind": "type"}],
            }
        ],
        "relatedLocations": [
            {
                "id": i,
                "message": {"text": f"{e.role}: {e.text}" if e.role else e.text},
                "physicalLocation": {
                    "artifactLocation": _artifact(e.path, root),
                    "region": {"startLine": e.line, "snippet": {"text": e.text}},
                },
            }
            for i, e in enumerate(f.evidence)
        ],
        "partialFingerprints": {"contractfix/v1": _fingerprint(f, root)},
        "properties": properties,
    }
    if f.fix:
        properties["fix"] = {"applicability": f.fix.applicability.value, "description": f.fix.description}
    if f.fix and changes:
        result["fixes"] = [
            {
                "description": {"text": f"{f.fix.description} ({f.fix.applicability.value} fix)"},
                "artifactChanges": [
                    {"artifactLocation": _artifact(path, root), "replacements": [replacement(r) for r in found]}
                    for path, found in changes
                ],
            }
        ]
    return result


def replacement(r: Replacement) -> dict:
    region = {"startLine": r.start[0], "startColumn": r.start[1], "endLine": r.end[0], "endColumn": r.end[1]}
    out: dict[str, object] = {"deletedRegion": region}
    if r.text:
        out["insertedContent"] = {"text": r.text}
    return out


def _artifact(path: Path, root: Path) -> dict:
    shown = relative_path(path, root)
    if shown.startswith("/"):
        return {"uri": Path(shown).as_uri()}
    return {"uri": quote(os.fsencode(shown)), "uriBaseId": SRCROOT}


def _fingerprint(f: Finding, root: Path) -> str:
    """Stable across line moves and the directory run from: the rule, the file, the class and the keys."""
    text = "\0".join([f.rule, relative(f.path, root), f.cls, *f.keys])
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]
