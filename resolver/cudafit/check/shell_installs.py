"""The pip and uv commands in a RUN line's shell text, read as the shell reads it: shlex splits the
words (quotes, escapes) and operators; comments, redirections and their files are no arguments;
a command substitution ($(...), `...`) is one word the shell computes, which is passed over with a
note. An index comes from a flag, from a variable assigned (or exported) before the command, from
ARG and ENV values, or from what `pip config set` wrote earlier: pip reads PIP_* and pip.conf
only, uv UV_* only."""

from __future__ import annotations

import re
import shlex
from typing import NamedTuple, Optional, Union

# the options of `pip install` / `uv pip install` that take a value, and those that say where from
_VALUED = {
    *("-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-r", "--requirement", "-c", "--constraint"),
    *("-e", "--editable", "-t", "--target", "--prefix", "--root", "--python", "-p", "--timeout", "--retries", "--cache-dir", "--src", "--progress-bar"),
    *("--trusted-host", "--platform", "--python-version", "--implementation", "--abi", "--only-binary", "--no-binary", "--index-strategy"),
    *("--config-settings", "-C", "--report", "--upgrade-package", "-P", "--extra", "--group", "--exclude-newer", "--keyring-provider"),
    *("--index", "--default-index"),
}
_INDEX_OPTIONS = {"-i", "--index-url", "--default-index", "--extra-index-url", "--index", "-f", "--find-links"}
# the environment variables pip and uv take indexes from: (the tool that reads it, what it sets).
# uv reads none of pip's (nor pip.conf), pip none of uv's.
INDEX_VARIABLES = {
    "PIP_INDEX_URL": ("pip", "index-url"),
    "UV_INDEX_URL": ("uv", "index-url"),
    "UV_DEFAULT_INDEX": ("uv", "index-url"),
    "PIP_EXTRA_INDEX_URL": ("pip", "extra-index-url"),
    "UV_EXTRA_INDEX_URL": ("uv", "extra-index-url"),
    "UV_INDEX": ("uv", "extra-index-url"),
    "PIP_FIND_LINKS": ("pip", "find-links"),
    "UV_FIND_LINKS": ("uv", "find-links"),
}
# the shell's operator characters: shlex returns a run of them as one token, split by _OPERATOR;
# a newline ends a command as `;` does (a heredoc body has many)
_PUNCTUATION = "();<>|&\n"
_OPERATOR = re.compile(r"&&|\|\||;;|\|&|&>>?|>>|>&|>\||<<<|<<|<&|<>|[()\n;&|<>]")
_REDIRECTIONS = {"<", ">", ">>", ">&", "<&", "&>", "&>>", ">|", "<>", "<<", "<<<"}
SHELL = re.compile(r"(?:.*/)?(?:ba|da|z|a|k)?sh")
# a parameter expansion with an operator (${V#v}, ${V%.*}, ${V//./}, ${V:-x}, ${V:0:5})
_MODIFIED = re.compile(r"\$\{\w+[^\w}]")
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")


class Install(NamedTuple):
    """One pip/uv install command of a RUN line."""

    words: list[tuple[str, str]]  # (the requirement with ARG/ENV values put in, as written)
    index_url: Optional[str]  # its --index-url, or the index its environment or pip's config names
    extra: list[tuple[str, str]]  # its extra indexes and --find-links pages: (url, kind)
    build_here: bool  # --no-build-isolation: it compiles against what is installed
    computed: list[str]  # requirements and indexes the shell computes ($(...), `...`): unreadable here
    editable: list[str] = []  # what -e/--editable installs (a project's folder or repository): built here
    env: dict[str, str] = {}  # what the shell exported, and the assignments before the command


class Shell:
    """What a RUN line's shell knows: the ARG and ENV values, what it exported, and what `pip
    config set` wrote (a file in the image: later RUN lines of the stage chain read it too)."""

    def __init__(self, values: dict[str, str], config: dict[str, str]) -> None:
        self.values = values
        self.known = {k: v for k, v in values.items() if v}  # an ARG without a value stays a variable
        self.exported: dict[str, str] = {}
        self.config = config


class SetupBuild(NamedTuple):
    """A setup script run to build or install the project it is in (`python setup.py install`,
    `python3 setup_cuda.py bdist_wheel`): it compiles against the packages already installed, as
    no build isolation stands between them."""

    words: list[str]  # the command's words, ARG and ENV values put in
    written: str  # the interpreter and the script as written (`python3 setup.py`): where the command is
    env: dict[str, str]  # what the shell exported, and the assignments before the command


def installs(command: Union[str, list[str]], values: dict[str, str], shell: Optional[Shell] = None) -> list[Install]:
    """The pip/uv install commands of one RUN line's shell text (or its exec form's words)."""
    return [step for step in steps(command, values, shell) if isinstance(step, Install)]


def steps(command: Union[str, list[str]], values: dict[str, str], shell: Optional[Shell] = None) -> list[Union[Install, SetupBuild]]:
    """The pip/uv installs and setup-script builds of one RUN line, in the order the shell runs them."""
    shell = shell or Shell(values, {})
    if isinstance(command, list):
        # no shell: no variable is put in, and every word is an argument (`sh -c TEXT` reads TEXT)
        return _command([(w, w) for w in command], shell)
    out: list[Union[Install, SetupBuild]] = []
    for words in simple_commands(split_shell(command), command):
        out += _command([(_put_in(w, shell.known), w) for w in words], shell)
    return out


def split_shell(text: str) -> list[str]:
    """The words and operators of shell text as shlex reads them (quotes removed); [] where the
    quotes do not close, which the shell refuses too."""
    for commenters in ("", "#"):
        lexer = shlex.shlex(text, posix=True, punctuation_chars=_PUNCTUATION)
        lexer.whitespace = " \t\r"
        lexer.whitespace_split = True
        # shlex ends a word at any `#`, the shell only starts a comment at a word's start (a
        # URL's #egg=name is no comment): simple_commands finds them, unless an apostrophe in one
        # (`# don't`) leaves a quote open, where shlex's own reading is the better one
        lexer.commenters = commenters
        try:
            tokens = list(lexer)
        except ValueError:
            continue
        return [part for token in tokens for part in (_OPERATOR.findall(token) if _is_operator(token) else [token])]
    return []


def _is_operator(token: str) -> bool:
    return bool(token) and all(c in _PUNCTUATION for c in token)


def simple_commands(tokens: list[str], text: str) -> list[list[str]]:
    """The simple commands of shell tokens: their words, without comments and redirections; a
    command substitution ($(...), `...`) is kept as one word, which is passed over."""
    out: list[list[str]] = []
    words: list[str] = []
    n = 0
    while n < len(tokens):
        token = tokens[n]
        n += 1
        if token.startswith("#") and not any(c.isspace() for c in token):  # with a space in it, it was quoted
            while n < len(tokens) and tokens[n] != "\n":
                n += 1  # a comment runs to the end of its line
        elif token in _REDIRECTIONS:
            if words and words[-1].isdigit():
                words.pop()  # the descriptor of 2>&1
            if n < len(tokens) and not _is_operator(tokens[n]):
                n += 1  # its file (or a heredoc's delimiter): no argument of the command
        elif token == "(" and words and words[-1].endswith("$"):
            depth, inner = 1, []
            while n < len(tokens) and depth:
                depth += {"(": 1, ")": -1}.get(tokens[n], 0)
                inner.append(tokens[n])
                n += 1
            word = words.pop() + "(" + " ".join(inner[:-1] if depth == 0 else inner) + ")"
            if n < len(tokens) and not _is_operator(tokens[n]) and f"){tokens[n]}" in text:
                word, n = word + tokens[n], n + 1  # written against the `)`: the same word
            words.append(word)
        elif _is_operator(token):
            if words:
                out.append(words)
            words = []
        elif token.count("`") % 2:
            parts = [token]  # `...` spans words up to the one that closes it
            while n < len(tokens) and (len(parts) == 1 or parts[-1].count("`") % 2 == 0):
                parts.append(tokens[n])
                n += 1
            words.append(" ".join(parts))
        else:
            words.append(token)
    if words:
        out.append(words)
    return out


def _put_in(word: str, known: dict[str, str]) -> str:
    """A word with the ARG and ENV values put in; one that names a variable without a value, or
    that the shell computes, stays as written (and is passed over)."""
    from dockerfile_parse.util import WordSplitter

    if "$" not in word or "$(" in word or "`" in word or any(name not in known for name in re.findall(r"\$\{?(\w+)", word)):
        return word
    if _MODIFIED.search(word):
        return word  # ${V#v}, ${V//./}, ${V:-x}: the shell's expansion, not the value alone
    return "".join(WordSplitter(word, args=known, envs=known).split(maxsplit=0, dequote=False))


# setuptools' commands that compile a project's extensions: building it, or installing it from its tree
_SETUP_BUILDS = {"install", "develop", "build", "build_ext", "bdist_wheel", "bdist_egg"}


def _command(pairs: list[tuple[str, str]], shell: Shell) -> list[Union[Install, SetupBuild]]:
    """What one simple command installs or builds, or sets for the commands after it."""
    words = [w for w, _raw in pairs]
    if len(words) >= 3 and SHELL.fullmatch(words[0]) and words[1].startswith("-") and words[1].endswith("c"):
        return steps(words[2], shell.values, shell)  # sh -c 'TEXT': TEXT is shell, run with this environment
    if words[0] == "export":
        shell.exported.update(_assignments(words[1:]))  # for the commands after it in this RUN line
        return []
    for n, word in enumerate(words):
        if re.fullmatch(r"(.*/)?python3?(\.\d+)?", word) and re.fullmatch(r"(.*/)?setup[\w-]*\.py", words[n + 1] if n + 1 < len(words) else ""):
            if _SETUP_BUILDS & set(words[n + 2 :]):
                return [SetupBuild(words[n:], f"{pairs[n][1]} {pairs[n + 1][1]}", {**shell.exported, **_assignments(words[:n])})]
            return []
        if re.fullmatch(r"(.*/)?pip3?(\.\d+)?", word):
            tool, rest = "pip", n + 1
        elif re.fullmatch(r"(.*/)?python3?(\.\d+)?", word) and words[n + 1 : n + 3] == ["-m", "pip"]:
            tool, rest = "pip", n + 3
        elif re.fullmatch(r"(.*/)?uv", word) and words[n + 1 : n + 2] == ["pip"]:
            tool, rest = "uv", n + 2
        else:
            continue
        # `PIP_INDEX_URL=... pip install`: an assignment before the command is in its environment
        env = {**shell.exported, **_assignments(words[:n])}
        if words[rest : rest + 1] == ["install"]:
            return [_parse(pairs[rest + 1 :], tool, env, shell)._replace(env=env)]
        if tool == "pip" and words[rest : rest + 1] == ["config"]:
            return [*_pip_config([w for w in words[rest + 1 :] if not w.startswith("-")], shell)]
        return []
    return []


def _assignments(words: list[str]) -> dict[str, str]:
    return {name: value for name, _, value in (w.partition("=") for w in words if _ASSIGNMENT.match(w))}


def _pip_config(args: list[str], shell: Shell) -> list[Install]:
    """`pip config set global.index-url URL`: pip's config file names the index of every later pip
    install (not uv's: uv reads no pip.conf); an extra index or page is told as one of its own."""
    if len(args) < 2 or args[0] not in ("set", "unset"):
        return []
    section, _, option = args[1].partition(".")
    if section not in ("global", "install") or option not in ("index-url", "extra-index-url", "find-links"):
        return []
    if args[0] == "unset" or len(args) < 3:
        shell.config.pop(option, None)
        return []
    if option == "index-url":
        shell.config[option] = args[2]
        return []
    return [Install([], None, [(url, option) for url in args[2].split()], False, [])]


def _parse(args: list[tuple[str, str]], tool: str, env: dict[str, str], shell: Shell) -> Install:
    reqs: list[tuple[str, str]] = []
    index: Optional[str] = None
    extra: list[tuple[str, str]] = []
    computed: list[str] = []
    strategy = env.get("UV_INDEX_STRATEGY", shell.values.get("UV_INDEX_STRATEGY", ""))
    build_here = False
    editable: list[str] = []
    it = iter(args)
    for arg, raw in it:
        name, _, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in _VALUED:
            value = inline or next(it, ("", ""))[0]
            if name in _INDEX_OPTIONS and ("$(" in value or "`" in value):
                computed.append(value)
            if name in ("-i", "--index-url", "--default-index"):
                index = value
            elif name in ("--extra-index-url", "--index"):
                extra.append((index_entry(value) if name == "--index" else value, "extra-index-url"))
            elif name in ("-f", "--find-links"):
                extra.append((value, "find-links"))
            elif name == "--index-strategy":
                strategy = value
            elif name in ("-e", "--editable"):
                editable.append(value)
            continue
        if arg.startswith("-"):
            build_here = build_here or arg == "--no-build-isolation"
            continue
        if "$(" in arg or "`" in arg:
            computed.append(arg)
        reqs.append((arg, raw))
    # the environment names an index where the command line does not (pip's config file after it)
    for variable, (reader, kind) in INDEX_VARIABLES.items():
        for url in (index_entry(u) for u in env.get(variable, "").split() if reader == tool):
            if kind == "index-url":
                index = index or url
            else:
                extra.append((url, kind))
    if tool == "pip" and index is None and "PIP_INDEX_URL" not in shell.values:
        index = shell.config.get("index-url")
    extra = [(url, extra_kind(tool, kind, strategy)) for url, kind in extra]
    return Install(reqs, index, extra, build_here, computed, editable)


def extra_kind(tool: str, kind: str, strategy: str) -> str:
    """uv takes a name from the first index that has it, extra indexes first (its default
    first-index strategy), as it does a [[tool.uv.index]]: only pip, or uv told to take the best
    version of every index (unsafe-best-match), picks among indexes by version."""
    return "uv-index" if tool == "uv" and kind == "extra-index-url" and strategy != "unsafe-best-match" else kind


def index_entry(text: str) -> str:
    """The URL of one of uv's indexes, which may be named (`--index pytorch=https://...`, UV_INDEX)."""
    name, eq, url = text.partition("=")
    return url if eq and re.fullmatch(r"[\w.-]+", name) else text
