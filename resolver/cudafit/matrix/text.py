"""The matrix for a terminal: one table that fits 100 columns, a legend, colour only where click
finds a terminal (it strips the styles otherwise). One group: builds as columns; several groups
(GPUs, node classes): one column per group, each cell the build resolve would take there."""

from __future__ import annotations

from typing import Any, Optional

import click

from cudafit.matrix.model import CPU_ONLY, NO, RUNS, UNKNOWN, Cell, Group, Matrix

# the rule that ruled a build out -> the letter its cell shows after "x"
CODES = {
    "driver": "d",
    "compute-capability": "k",
    "python": "p",
    "platform": "o",
    "os": "o",
    "accelerator": "a",
    "extra": "e",
    "data": "u",
}
WORDS = {
    "d": "the driver",
    "k": "no kernels for the GPU",
    "p": "no wheel for the Python",
    "o": "no wheel for the platform",
    "a": "for another accelerator",
    "e": "an extra",
    "u": "the data",
    "x": "other",
}
STYLE: dict[str, dict[str, Any]] = {RUNS: {"fg": "green"}, UNKNOWN: {"fg": "yellow"}, CPU_ONLY: {"dim": True}, NO: {"fg": "red", "dim": True}}


def render(matrix: Matrix) -> str:
    import textwrap

    lines = [*textwrap.wrap(_title(matrix), 100, subsequent_indent="  "), f"data of {matrix.data_date}"]
    if not matrix.releases:
        return "\n".join([*lines, "no release of the data matches", ""])
    if len(matrix.groups) == 1:
        lines += _one(matrix, matrix.groups[0])
    else:
        lines += _several(matrix)
    # the notes under the table wrap at 100 columns too, each continued indented
    lines += [part for line in _legend(matrix) for part in (textwrap.wrap(line, 100, subsequent_indent="    ") or [""])]
    return "\n".join(lines) + "\n"


def _title(matrix: Matrix) -> str:
    what = f"{matrix.family}{matrix.spec and f' ({matrix.spec})'}"
    where = matrix.groups[0].label if len(matrix.groups) == 1 else f"{len(matrix.groups)} machines"
    return f"{what} on {where}"


def code(cell: Cell) -> str:
    return "x" + CODES.get(cell.constraint, "x")


def symbol(cell: Optional[Cell], best: bool = False) -> str:
    if cell is None:
        return "."
    if cell.status == RUNS:
        return "*ok" if best else "ok"
    if cell.status == UNKNOWN:
        return "*?" if best else "?"
    if cell.status == CPU_ONLY:
        return "cpu"
    return code(cell)


def _styled(text: str, width: int, cell: Optional[Cell], best: bool = False) -> str:
    padded = text.rjust(width)
    if cell is None:
        return padded
    return click.style(padded, bold=best, **STYLE.get(cell.status, {}))


def short(tag: str) -> str:
    """A column's name in the table: rocm6.2.4 is r6.2.4 (the legend says so)."""
    return "r" + tag[4:] if tag.startswith("rocm") else tag


def _one(matrix: Matrix, group: Group) -> list[str]:
    tags = list(matrix.shown)
    # the reverse look-up, where the driver is not given: the oldest driver each build column needs
    floors = [next((c.driver_floor for r in matrix.releases if (c := group.cells.get((r, t))) and c.driver_floor), "") for t in tags]
    # (a Jetson's driver comes with its JetPack: no floor to look up)
    floors = floors if not group.machine.driver_known and not group.machine.jetson else ["" for _t in tags]
    widths = [max(4, len(short(t)) + 1, len(f) + 1) for t, f in zip(tags, floors, strict=True)]
    label = label_width(matrix)
    lines: list[str] = []
    start = 0
    while start < len(tags) or not tags:  # more columns than 100 characters hold: a table per slice
        end = start
        while end < len(tags) and label + sum(widths[start : end + 1]) <= 100:
            end += 1
        end = max(end, start + 1)
        lines += _slice(matrix, group, tags[start:end], floors[start:end], widths[start:end], label)
        start = end
        if start < len(tags):
            lines.append("")
        if not tags:
            break
    return lines


def label_width(matrix: Matrix) -> int:
    """The release column: 'release ' or the longest release (0.12.0.1, 2.15.0.post1) and a space."""
    return max(8, *(len(r) + 1 for r in matrix.releases))


def _slice(matrix: Matrix, group: Group, tags: list[str], floors: list[str], widths: list[int], label: int) -> list[str]:
    lines = ["release".ljust(label) + "".join(short(t).rjust(w) for t, w in zip(tags, widths, strict=True))]
    if any(floors):
        lines.append("driver>=".ljust(label) + "".join(f.rjust(w) for f, w in zip(floors, widths, strict=True)))
    for release in matrix.releases:
        cells = [group.cells.get((release, t)) for t in tags]
        if all(c is None for c in cells) and release in group.rows:
            whole = group.rows[release]
            lines.append(release.ljust(label) + _styled(f"{code(whole)}: {whole.reason}"[: 100 - label], 0, whole))
            continue
        row = release.ljust(label)
        for tag, cell, width in zip(tags, cells, widths, strict=True):
            best = group.best == (release, tag)
            row += _styled(symbol(cell, best), width, cell, best)
        lines.append(row)
    return lines


def _several(matrix: Matrix) -> list[str]:
    keys = [chr(ord("A") + i) if i < 26 else str(i) for i in range(len(matrix.groups))]
    width = max([7, *(len(t) + 2 for t in matrix.shown)])
    label = label_width(matrix)
    per_line = max(1, (100 - label) // width)
    lines = []
    for start in range(0, len(matrix.groups), per_line):  # more groups than fit: a table per slice
        part = list(zip(keys, matrix.groups, strict=True))[start : start + per_line]
        lines.append("release".ljust(label) + "".join(k.rjust(width) for k, _g in part))
        for release in matrix.releases:
            row = release.ljust(label)
            for _k, group in part:
                tag = matrix.preferred(group, release)
                if tag is not None:
                    best = group.best == (release, tag)
                    row += _styled(tag + ("*" if best else ""), width, group.cells[(release, tag)], best)
                else:
                    why = _reason_cell(matrix, group, release)
                    row += _styled(symbol(why), width, why)
            lines.append(row)
        lines.append("")
    for key, group in zip(keys, matrix.groups, strict=True):
        nodes = f" ({group.nodes} node{'s' if group.nodes != 1 else ''})" if group.nodes else ""
        lines.append(f"{key}: {group.label}{nodes}")
    return lines


def _reason_cell(matrix: Matrix, group: Group, release: str) -> Optional[Cell]:
    """Why no build of the release runs on the group's GPU: the newest build's own reason (its
    driver, its kernels), else the CPU build where that runs, else the release's reason."""
    cells = [c for t in matrix.tags if (c := group.cells.get((release, t))) is not None]
    own = next((c for c in cells if c.status == NO and c.constraint in ("driver", "compute-capability")), None)
    return own or next((c for c in cells if c.status == CPU_ONLY), None) or group.rows.get(release) or (cells[0] if cells else None)


def _legend(matrix: Matrix) -> list[str]:
    lines = [""]
    for n, group in enumerate(matrix.groups):
        prefix = f"{chr(ord('A') + n) if n < 26 else n}: " if len(matrix.groups) > 1 else ""
        if group.best is not None:
            cell = group.cells[group.best]
            lines.append(f"{prefix}* the build `cudafit resolve` picks: {cell.requirement} ({cell.reason})")
        else:
            lines.append(f"{prefix}no build of these releases runs here")
        lines += [f"  {text}" for text in group.last_lines]
    seen: dict[str, str] = {}
    for group in matrix.groups:
        for release in matrix.releases:
            for tag in matrix.shown:
                found = group.cells.get((release, tag))
                if found is not None and found.status == NO:
                    seen.setdefault(code(found), f"{release} {tag}: {found.reason}")
    rocm = "   rX.Y rocmX.Y" if any(t.startswith("rocm") for t in matrix.shown) else ""
    lines.append("ok runs   ? may run (kernel lists unknown)   cpu runs on the CPU only   . no such build" + rocm)
    if seen:
        lines.append("x? does not run:")
    for letter, example in sorted(seen.items()):
        lines.append(f"  {letter} {WORDS[letter[1]]}, e.g. {example}")
    if matrix.left_out:
        lines.append("left out: " + "; ".join(f"{key} ({why})" for key, why in matrix.left_out))
    return lines
