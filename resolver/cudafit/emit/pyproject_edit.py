"""Edits of an existing pyproject.toml in place: tomlkit changes only the tables, arrays and lines
asked for, so every other line keeps its comments and layout. Where the pins live ([project]
dependencies, an extra, a dependency group) and how a pin replaces the user's line for the same
package are decided here; what the pins are is the emitter's."""

from __future__ import annotations

import re
import sys
from typing import Any, Callable, Optional

import tomlkit
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from tomlkit.items import AoT, Array, Table, Whitespace

from cudafit.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def table(parent: Any, key: str, where: str, *, super_table: bool = False) -> Any:
    if key not in parent:
        parent[key] = tomlkit.table(is_super_table=super_table)
    value = parent[key]
    if not isinstance(value, dict):
        raise InputError(f"existing pyproject.toml: {where} is not a table")
    return value


def string_array(parent: Any, key: str, where: str, *, strings: bool = True) -> Array:
    if key not in parent:
        array = tomlkit.array()
        array.multiline(True)
        parent[key] = array
    value = parent[key]
    if not isinstance(value, Array) or (strings and not all(isinstance(v, str) for v in value)):
        raise InputError(f"existing pyproject.toml: {where} is not a list of strings")
    return value


def drop_items(items: Any, unwanted: Callable[[Any], bool]) -> None:
    # Deleting by index keeps the comments and layout that belong to the items that stay.
    for i in reversed(range(len(items))):
        if unwanted(items[i]):
            del items[i]


def replace_strings(parent: Any, key: str, where: str, unwanted: Callable[[Any], bool], new: list[str]) -> None:
    """Drop the unwanted strings of an array and append the new ones. An array left with none of
    its own items is written afresh (tomlkit would lose the trailing comma of a emptied one)."""
    array = string_array(parent, key, where, strings=False)
    if all(unwanted(item) for item in array):
        fresh = tomlkit.array()
        fresh.extend(new)
        fresh.multiline(True)
        parent[key] = fresh
        return
    drop_items(array, unwanted)
    array.extend(new)


def replace_pins(parent: Any, key: str, ours: Callable[[Any], bool], new: list[str], kept: Callable[[str], Optional[str]]) -> None:
    """Our pins where the user's lines for the same packages were: each replaced line keeps its
    place, its comment and its extras (torch[opt-einsum]), and is followed by what `kept` keeps of
    it for the other platforms; the rest of ours go, new ones follow."""
    array = string_array(parent, key, "the list of our pins", strings=False)
    others = [line for item in array if ours(item) and (line := kept(item)) is not None]
    if all(ours(item) for item in array):
        replace_strings(parent, key, "the list of our pins", ours, [*new, *others])
        return
    waiting = {requirement_name(text): text for text in new}
    gone = []
    after: list[tuple[int, str]] = []
    for i, item in enumerate(array):
        if not ours(item):
            continue
        name = requirement_name(item)
        line = kept(item)
        if line is not None:
            after.append((i, line))
        if name in waiting:
            array[i] = _with_extras(waiting.pop(name), item)
        else:
            gone.append(i)
    for i, line in reversed(after):
        array.insert(i + 1, line)
    for i in reversed(gone):
        del array[i + sum(1 for j, _line in after if j < i)]
    array.extend([text for text in new if requirement_name(text) in waiting])


def _with_extras(requirement: str, old: str) -> str:
    """`requirement` with the extras the user's line asked for as well."""
    try:
        kept = Requirement(old).extras
        new = Requirement(requirement.split(";")[0])
    except InvalidRequirement:
        return requirement
    extras = sorted(kept | new.extras)
    if not extras or extras == sorted(new.extras):
        return requirement
    head = re.match(r"\s*([A-Za-z0-9._-]+)(\[[^\]]*\])?", requirement)
    assert head is not None  # it parsed as a requirement above
    return f"{head.group(1)}[{','.join(extras)}]{requirement[head.end() :]}"


def blank_before_subtables(table: Table) -> None:
    """A table that had only sub-tables ([tool.uv.index], [tool.uv.sources]) gets its own header
    once a key lands in it; tomlkit then puts the first sub-table right under the key's lines."""
    for _, item in table.value.body:
        first = item[0] if isinstance(item, AoT) and len(item) else item
        if isinstance(first, Table):
            if "\n" not in first.trivia.indent:
                first.trivia.indent = "\n" + first.trivia.indent
            return


def ends_blank(table: Table) -> bool:
    body = table.value.body
    return bool(body) and isinstance(body[-1][1], Whitespace) and "\n" in body[-1][1].s


def requirement_name(requirement: str) -> str | None:
    try:
        return canonicalize_name(Requirement(requirement).name)
    except InvalidRequirement:
        return None


def dependency_lists(doc: Any, project: Any) -> list[tuple[str, Any, str]]:
    """(where, parent table, key) of every list that can hold our pins: [project] dependencies,
    each optional-dependencies extra and each dependency group."""
    lists: list[tuple[str, Any, str]] = []
    if "dependencies" in project:
        string_array(project, "dependencies", "[project] dependencies")
        lists.append(("[project] dependencies", project, "dependencies"))
    for table, where in ((project.get("optional-dependencies"), "[project.optional-dependencies]"), (doc.get("dependency-groups"), "[dependency-groups]")):
        if isinstance(table, dict):
            lists += [(f"{where} {k}", table, k) for k, v in table.items() if isinstance(v, list)]
    return lists


def pins_home(doc: Any, project: Any, ours: set[str]) -> tuple[Any, str]:
    """Where the pins go: the list that already names one of our packages (an extra such as
    `gpu`, a dependency group), else [project] dependencies."""
    for _where, parent, key in dependency_lists(doc, project):
        if any(isinstance(item, str) and requirement_name(item) in ours for item in parent[key]):
            return parent, key
    string_array(project, "dependencies", "[project] dependencies")
    return project, "dependencies"


def parse_existing(existing: str) -> tomlkit.TOMLDocument:
    # tomllib is the strict reader and names line and column; tomlkit then edits the same text.
    try:
        tomllib.loads(existing)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", field="existing", value=True) from None
    return tomlkit.parse(existing)
