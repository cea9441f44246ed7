#!/usr/bin/env python3
"""Maintainer tool: `cudafit check --resolve` over the corpus, held to uv's recorded verdicts (needs
uv and the network).

tests/test_corpus.py measures the offline check; this measures it with --resolve, which asks uv
about each environment of each requirements file and pyproject.toml: the precision and recall of
errors on the corpus, computed by the same rules as the test (tests/corpus/uv_verdicts.json is the
oracle). A run asks uv a few thousand times (about half an hour with a warm uv cache).

    python scripts/corpus_resolve.py [--file-jobs 2] [--only LOCALPATH ...] [--log FILE [--resume]]

With UV_OFFLINE=1 in its environment uv answers from its cache alone (what scripts/uv_oracle.py
filled when it recorded the verdicts): the same answers, without asking the network again.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import test_corpus  # noqa: E402  (tests/: the corpus's figures, computed one way)

from cudafit.check.model import Finding  # noqa: E402
from cudafit.check.resolve import find_uv  # noqa: E402
from cudafit.check.runner import Report, Settings, check_paths  # noqa: E402
from cudafit.loader import load  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="LOCALPATH", help="these manifest entries only")
    parser.add_argument("--log", type=Path, help="append each file's findings here (JSON lines) as it is checked")
    parser.add_argument("--file-jobs", type=int, default=2, help="files checked at once (each asks uv about its environments in parallel)")
    parser.add_argument("--resume", action="store_true", help="files already in --log are not asked again: their logged findings count")
    args = parser.parse_args(argv)
    uv = find_uv()
    matrices = load()
    settings = Settings(resolve=True, uv=uv)
    started = time.monotonic()
    chosen = [e for e in test_corpus.MANIFEST if not args.only or e["local"] in args.only]
    logged: dict[str, Report] = {}
    if args.resume and args.log and args.log.is_file():
        for line in args.log.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            found = tuple(Finding(**{**f, "edit": None, "environments": tuple(f["environments"])}) for f in entry["findings"])
            logged[entry["local"]] = Report(found, (), 1)

    def one(entry: dict) -> Report:
        if entry["local"] in logged:
            return logged[entry["local"]]
        path = test_corpus.CORPUS / entry["local"]
        report = check_paths([path], matrices, settings if entry["kind"] in ("requirements", "pyproject") else Settings(), ())
        print(f"{entry['local']}: {len(report.findings)} findings ({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
        if args.log:
            # each file's findings as it ends: a long run that is stopped keeps what it asked
            with args.log.open("a", encoding="utf-8") as log:
                log.write(json.dumps({"local": entry["local"], "findings": [f._asdict() for f in report.findings]}) + "\n")
        return report

    with ThreadPoolExecutor(max_workers=args.file_jobs) as pool:
        reports = dict(zip([e["local"] for e in chosen], pool.map(one, chosen), strict=True))
    test_corpus.reports.cache_clear()
    test_corpus.reports.__wrapped__ = lambda: reports  # type: ignore[attr-defined]
    test_corpus.findings = lambda: {local: report.findings for local, report in reports.items()}  # type: ignore[assignment]
    precision, recall, counts = test_corpus.figures()
    print(f"errors: {counts['confirmed']} confirmed, {counts['false']} false, {counts['undetermined']} undetermined; precision {precision:.1%}")
    print(f"environments uv cannot install: {counts['uninstallable']}; with an error there: recall {recall:.1%}")
    for local, finding, why in test_corpus.classify()["false"]:
        print(f"  false: {local}:{finding.line}: {finding.code} {finding.message[:200]} ({why[:160]})")
    print(f"uv {os.path.basename(uv)}, {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
