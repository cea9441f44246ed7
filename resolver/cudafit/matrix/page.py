"""The matrix as one self-contained HTML page a team can publish as it is: inline CSS, a few lines
of plain JavaScript (filter the releases; tap or hover a cell for its reason), no request to
anything outside the page. One table per group (a machine, a GPU, a node class), stacked, so it
reads on a phone and prints; the data date and what it describes on top."""

from __future__ import annotations

from html import escape

from cudafit.matrix.model import CPU_ONLY, NO, RUNS, UNKNOWN, Cell, Group, Matrix
from cudafit.matrix.text import CODES, WORDS

_CSS = """
:root{--ok:#1a7f37;--okbg:#dafbe1;--no:#8c959f;--nobg:#f6f8fa;--unk:#9a6700;--unkbg:#fff8c5;--best:#0550ae}
*{box-sizing:border-box}body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:72rem;padding:1rem;color:#1f2328}
h1{font-size:1.35rem;margin:.2rem 0}h2{font-size:1.05rem;margin:1.4rem 0 .4rem}p{margin:.3rem 0}
.meta{color:#59636e}.controls{display:flex;flex-wrap:wrap;gap:1rem;margin:.8rem 0}
input[type=search]{font:inherit;padding:.2rem .4rem;width:8rem}
.wrap{overflow-x:auto;-webkit-overflow-scrolling:touch;border:1px solid #d1d9e0;border-radius:6px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;width:100%}
th,td{padding:.25rem .45rem;text-align:center;white-space:nowrap;border-bottom:1px solid #eef1f4}
thead th{position:sticky;top:0;background:#f6f8fa;font-weight:600}
tbody th{position:sticky;left:0;background:#fff;text-align:left;font-weight:600}
td.runs{background:var(--okbg);color:var(--ok)}td.no{background:var(--nobg);color:var(--no)}
td.unknown{background:var(--unkbg);color:var(--unk)}td.cpu{color:#59636e}
td.best{outline:2px solid var(--best);outline-offset:-2px;font-weight:700;color:var(--best)}
td[data-reason]{cursor:help}
#why{position:sticky;bottom:0;background:#fff;border-top:1px solid #d1d9e0;padding:.5rem 0;min-height:2.5rem}
.legend{color:#59636e;font-size:.9rem}.legend span{margin-right:1rem}
@media print{.controls,#why{display:none}.wrap{overflow:visible;border:0}thead th,tbody th{position:static}body{max-width:none}}
"""

# filter rows by release; a tap (or keyboard focus) on a cell shows its reason below the table
_JS = r"""
(function(){
var f=document.getElementById('filter'),o=document.getElementById('runs-only'),w=document.getElementById('why');
function apply(){var q=f.value.trim().replace(/\.$/,'');document.querySelectorAll('tbody tr').forEach(function(r){
var v=r.dataset.release,show=(!q||v===q||v.indexOf(q+'.')===0)&&(!o.checked||r.dataset.runs==='1');r.hidden=!show;});}
f.addEventListener('input',apply);o.addEventListener('change',apply);
function tell(e){var c=e.target.closest('td[data-reason]');if(c){w.textContent=c.dataset.where+': '+c.dataset.reason;}}
document.addEventListener('click',tell);document.addEventListener('focusin',tell);
})();
"""


def render(matrix: Matrix) -> str:
    from cudafit.version import __version__

    what = escape(f"{matrix.family}{matrix.spec and f' ({matrix.spec})'}")
    where = escape(matrix.groups[0].label) if len(matrix.groups) == 1 else f"{len(matrix.groups)} machines"
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>{what} compatibility on {where}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<header><h1>{what}: which builds run on {where}</h1>",
        f'<p class="meta">cudafit {escape(__version__)} &middot; data of {escape(matrix.data_date)} &middot; {len(matrix.releases)} releases</p></header>',
        '<div class="controls"><label>Release line <input id="filter" type="search" placeholder="2.1" aria-label="release line (2.1: 2.1.x)"></label>',
        '<label><input type="checkbox" id="runs-only"> only releases that run</label></div>',
    ]
    for group in matrix.groups:
        parts += _group(matrix, group)
    parts += _legend(matrix)
    parts.append('<p id="why" role="status" aria-live="polite">Tap or hover a cell for its reason.</p>')
    parts.append(f"<script>{_JS}</script></body></html>")
    return "\n".join(parts) + "\n"


def _group(matrix: Matrix, group: Group) -> list[str]:
    out = []
    if len(matrix.groups) > 1:
        nodes = f" ({group.nodes} node{'s' if group.nodes != 1 else ''})" if group.nodes else ""
        out.append(f"<h2>{escape(group.label)}{nodes}</h2>")
    if group.best is not None:
        cell = group.cells[group.best]
        out.append(f'<p class="best">&#9733; <code>cudafit resolve</code> picks <code>{escape(cell.requirement)}</code> ({escape(cell.reason)})</p>')
    else:
        out.append("<p>No build of these releases runs here.</p>")
    out += [f"<p>{escape(text)}</p>" for text in group.last_lines]
    head = "".join(f'<th scope="col">{escape(t)}</th>' for t in matrix.shown)
    out.append(f'<div class="wrap"><table><thead><tr><th scope="col">release</th>{head}</tr></thead><tbody>')
    for release in matrix.releases:
        runs = any(group.cells.get((release, t), Cell(NO, "")).status == RUNS for t in matrix.tags)
        cells = "".join(_cell(group, release, t) for t in matrix.shown)
        out.append(f'<tr data-release="{escape(release)}" data-runs="{int(runs)}"><th scope="row">{escape(release)}</th>{cells}</tr>')
    out.append("</tbody></table></div>")
    return out


def _cell(group: Group, release: str, tag: str) -> str:
    cell = group.cells.get((release, tag))
    if cell is None:
        return '<td class="none" title="no such build">&middot;</td>'
    best = group.best == (release, tag)
    if cell.status == RUNS:
        mark = "&#9733;" if best else "&#10003;"
    elif cell.status == UNKNOWN:
        mark = "?"
    elif cell.status == CPU_ONLY:
        mark = "cpu"
    else:
        mark = "&#10007;" + CODES.get(cell.constraint, "x")
    reason = cell.reason + (f" [{cell.evidence}]" if cell.evidence else "") + (f"; needs driver >= {cell.driver_floor}" if cell.driver_floor else "")
    classes = cell.status + (" best" if best else "")
    where = f"{release} {tag}"
    label = " (the build cudafit resolve picks)" if best else ""
    return (
        f'<td class="{classes}" tabindex="0" title="{escape(reason)}" data-where="{escape(where)}" '
        f'data-reason="{escape(reason + label)}" aria-label="{escape(where)}: {escape(cell.status)}{label}">{mark}</td>'
    )


def _legend(matrix: Matrix) -> list[str]:
    shown, rows = set(matrix.shown), set(matrix.releases)
    used = sorted({CODES.get(c.constraint, "x") for g in matrix.groups for (r, t), c in g.cells.items() if c.status == NO and t in shown and r in rows})
    items = ["<span>&#10003; runs</span>", "<span>&#9733; the build cudafit resolve picks</span>", "<span>? may run (kernel lists unknown)</span>"]
    items += ["<span>cpu runs on the CPU only</span>", "<span>&middot; no such build</span>"]
    items += [f"<span>&#10007;{letter} {escape(WORDS[letter])}</span>" for letter in used]
    left = [f"<p>Left out: {escape(key)} ({escape(why)})</p>" for key, why in matrix.left_out]
    return [f'<p class="legend">{"".join(items)}</p>', *left]
