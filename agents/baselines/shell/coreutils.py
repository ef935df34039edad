"""Read-only ``ls``, ``cat``, ``head`` and ``grep`` (with ``|`` pipes) over a parsed corpus held in memory.

This file's source is what the shell agent sends into its walled REPL worker (:mod:`madqa.agents.sandbox.worker`)
with each command: it is run by smolagents' AST interpreter there, next to the ``files`` variable (``{"DOC/
page_0001.txt": text}``, read by the host from the corpus folder without following links). So it is plain
functions over ``files`` only (stdlib ``re`` and ``json``, no classes, no ``open``, no dunders, no future import):
the worker has no file of the corpus to open, and its kernel walls refuse every other file anyway. Paths are
resolved inside the virtual root :data:`ROOT`; ``..`` above it, an absolute path elsewhere (``/etc``, ``/``) and any
name that is not a corpus file are reported like a missing file, never looked up anywhere else.

:func:`sh_main` runs one command line and returns ``{"output", "touched", "error"}``: ``touched`` are the files whose
text the command printed or matched (the host maps them back to ``(document, page)``).
"""

import json
import re

#: The corpus folder as the model sees it (also the working directory).
ROOT = "/corpus"
COMMANDS = ("ls", "cat", "head", "grep")
#: Shell syntax that is refused rather than half-understood.
REFUSED = (";", "&&", "||", ">", "<", "`", "$(", "&")
#: Longest output returned (characters); longer output is cut with a note.
OUTPUT_CHARS = 8000
HEAD_LINES = 10


def sh_split(line):
    """Words and pipe markers of a command line (POSIX-like quotes and backslashes); raises ValueError."""
    words, word, quote, pending, i = [], "", "", False, 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"' and i + 1 < len(line) and line[i + 1] in '"\\$`':
                i += 1
                word += line[i]
            else:
                word += ch
        elif ch in "'\"":
            quote, pending = ch, True
        elif ch == "\\" and i + 1 < len(line):
            i += 1
            word, pending = word + line[i], True
        elif ch in " \t\n":
            if pending:
                words.append(word)
            word, pending = "", False
        elif ch == "|":
            if pending:
                words.append(word)
            if line[i + 1 : i + 2] == "|":
                raise ValueError("'||' is not supported: only ls, cat, head and grep, joined with |")
            words.append(("|",))
            word, pending = "", False
        else:
            for token in REFUSED:
                if line.startswith(token, i):
                    raise ValueError(f"'{token}' is not supported: only ls, cat, head and grep, joined with |")
            word, pending = word + ch, True
        i += 1
    if quote:
        raise ValueError("unterminated quote")
    if pending:
        words.append(word)
    return words


def sh_resolve(path):
    """The corpus-relative form of ``path`` (``""`` is the root), or ``None`` when it leaves the corpus."""
    if path.startswith("/"):
        if path != ROOT and not path.startswith(ROOT + "/"):
            return None
        path = path[len(ROOT) :]
    parts = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts)


def sh_glob(pattern):
    """A regular expression for one shell glob (``*``, ``?``, ``[abc]``) that never crosses a ``/``."""
    out, i = "", 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            out += "[^/]*"
        elif ch == "?":
            out += "[^/]"
        elif ch == "[" and "]" in pattern[i + 1 :]:
            end = pattern.index("]", i + 1)
            out += "[" + re.escape(pattern[i + 1 : end]).replace("\\-", "-") + "]"
            i = end
        else:
            out += re.escape(ch)
        i += 1
    return re.compile(out + "$")


def sh_dirs(files):
    """Every folder of the corpus (``""`` is the root)."""
    dirs = {""}
    for name in files:
        parts = name.split("/")
        for n in range(1, len(parts)):
            dirs.add("/".join(parts[:n]))
    return dirs


def sh_expand(files, dirs, arg):
    """Corpus paths (files or folders) an argument names, globs expanded; ``[]`` when none."""
    rel = sh_resolve(arg)
    if rel is None:
        return []
    if "*" in rel or "?" in rel or "[" in rel:
        rx = sh_glob(rel)
        return sorted(p for p in set(files) | dirs if p and rx.match(p))
    return [rel] if rel in files or rel in dirs else []


def sh_under(files, folder):
    """The files beneath ``folder``, sorted."""
    prefix = folder + "/" if folder else ""
    return sorted(p for p in files if p.startswith(prefix))


def sh_flags(args, with_value):
    """``(flags, values, operands)`` of short options anywhere (``-rin``, ``-n 5``, ``-5``; none after ``--``)."""
    flags, values, operands, i = set(), {}, [], 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            operands.extend(args[i + 1 :])
            break
        if arg.startswith("-") and len(arg) > 1:
            if arg[1:].isdigit():
                values["n"] = arg[1:]
                i += 1
                continue
            j = 1
            while j < len(arg):
                flag = arg[j]
                if flag in with_value:
                    value = arg[j + 1 :]
                    if not value:
                        i += 1
                        if i >= len(args):
                            raise ValueError(f"option -{flag} needs a value")
                        value = args[i]
                    values[flag] = value
                    break
                flags.add(flag)
                j += 1
        else:
            operands.append(arg)
        i += 1
    return flags, values, operands


def sh_number(values, key, default):
    text = values.get(key, str(default))
    if not text.lstrip("-").isdigit():
        raise ValueError(f"invalid number: {text!r}")
    return abs(int(text))


def sh_ls(files, args, stdin, touched):
    flags, _, operands = sh_flags(args, "")
    dirs = sh_dirs(files)
    out, errors = [], []
    for arg in operands or ["."]:
        found = sh_expand(files, dirs, arg)
        if not found:
            errors.append(f"ls: cannot access '{arg}': No such file or directory")
        for rel in found:
            if rel in files:
                out.append(f"{len(files[rel]):>8} {rel}" if "l" in flags else rel)
                continue
            prefix = rel + "/" if rel else ""
            names = sorted(
                {
                    p[len(prefix) :].split("/")[0] + ("/" if "/" in p[len(prefix) :] else "")
                    for p in files
                    if p.startswith(prefix)
                }
            )
            if len(operands) > 1:
                out.append(f"{arg}:")
            for name in names:
                size = len(files[prefix + name]) if (prefix + name) in files else 0
                out.append(f"{size:>8} {name}" if "l" in flags else name)
    return "\n".join(out), "\n".join(errors)


def sh_inputs(files, operands, stdin, recursive, name):
    """``(label, text)`` pairs to read: the named files (folders only when ``recursive``), or stdin."""
    if not operands:
        return [("(standard input)", stdin or "")], []
    dirs = sh_dirs(files)
    items, errors = [], []
    for arg in operands:
        found = sh_expand(files, dirs, arg)
        if not found:
            errors.append(f"{name}: {arg}: No such file or directory")
        for rel in found:
            if rel in files:
                items.append((rel, files[rel]))
            elif recursive:
                items.extend((p, files[p]) for p in sh_under(files, rel))
            else:
                errors.append(f"{name}: {arg}: Is a directory")
    return items, errors


def sh_cat(files, args, stdin, touched):
    _, _, operands = sh_flags(args, "")
    items, errors = sh_inputs(files, operands, stdin, False, "cat")
    for label, _ in items:
        if label in files:
            touched.append(label)
    return "".join(text if text.endswith("\n") or not text else text + "\n" for _, text in items), "\n".join(errors)


def sh_head(files, args, stdin, touched):
    flags, values, operands = sh_flags(args, "nc")
    items, errors = sh_inputs(files, operands, stdin, False, "head")
    n = sh_number(values, "n", HEAD_LINES)
    out = []
    for label, text in items:
        if label in files:
            touched.append(label)
        if len(items) > 1:
            out.append(f"==> {label} <==")
        if "c" in values:
            out.append(text[: sh_number(values, "c", 0)])
        else:
            out.extend(text.split("\n")[:n])
    return "\n".join(out), "\n".join(errors)


def sh_grep(files, args, stdin, touched):
    flags, values, operands = sh_flags(args, "eABCm")
    if "e" in values:
        pattern = values["e"]
    elif operands:
        pattern, operands = operands[0], operands[1:]
    else:
        raise ValueError("grep: no pattern given")
    recursive = "r" in flags or "R" in flags
    if recursive and not operands and stdin is None:
        operands = ["."]
    source = pattern
    if "F" in flags:
        source = re.escape(pattern)
    elif "E" not in flags:  # basic syntax: \| \( \) are ERE's | ( )
        source = pattern.replace("\\|", "|").replace("\\(", "(").replace("\\)", ")")
    if "w" in flags:
        source = "\\b(?:" + source + ")\\b"
    try:
        rx = re.compile(source, re.IGNORECASE if "i" in flags else 0)
    except re.error as exc:
        raise ValueError(f"grep: invalid pattern {pattern!r}: {exc}") from None
    items, errors = sh_inputs(files, operands, stdin, recursive, "grep")
    before = sh_number(values, "B", values.get("C", 0))
    after = sh_number(values, "A", values.get("C", 0))
    most = sh_number(values, "m", 0)
    prefix = len(items) > 1 or recursive
    out = []
    for label, text in items:
        invert = "v" in flags
        if not invert and rx.search(text) is None:  # one scan per file before any per-line work
            continue
        lines = text.split("\n")
        hits = [n for n, line in enumerate(lines) if (rx.search(line) is None) == invert]
        if most:
            hits = hits[:most]
        if not hits:
            continue
        if label in files:
            touched.append(label)
        if "l" in flags:
            out.append(label)
            continue
        if "c" in flags:
            out.append(f"{label}:{len(hits)}" if prefix else str(len(hits)))
            continue
        shown = sorted({m for n in hits for m in range(max(0, n - before), min(len(lines), n + after + 1))})
        for m in shown:
            head = (label + ":" if prefix else "") + (f"{m + 1}:" if "n" in flags else "")
            out.append(head + lines[m])
    return "\n".join(out), "\n".join(errors)


def sh_main(files, line, limit=OUTPUT_CHARS):
    """Run one command line over ``files``; ``{"output", "touched", "error"}`` (see the module docstring)."""
    handlers = {"ls": sh_ls, "cat": sh_cat, "head": sh_head, "grep": sh_grep}
    touched, errors = [], []
    output = None
    try:
        words = sh_split(line)
        stages, stage = [], []
        for word in words:
            if isinstance(word, tuple):
                stages.append(stage)
                stage = []
            else:
                stage.append(word)
        stages.append(stage)
        for stage in stages:
            if not stage:
                raise ValueError("empty command")
            if stage[0] not in handlers:
                raise ValueError(f"{stage[0]}: command not found (available: {', '.join(COMMANDS)}, joined with |)")
            output, error = handlers[stage[0]](files, stage[1:], output, touched)
            if error:
                errors.append(error)
    except ValueError as exc:
        errors.append(str(exc))
    text = output or ""
    if len(text) > limit:
        text = text[:limit] + f"\n[output cut at {limit} characters: narrow it with grep or head]"
    seen = []
    for name in touched:
        if name not in seen:
            seen.append(name)
    return {"output": text, "touched": seen, "error": "\n".join(errors) or None}


def sh_json(files, line, limit=OUTPUT_CHARS):
    """:func:`sh_main` as one JSON text (what the worker prints for the host)."""
    return json.dumps(sh_main(files, line, limit), ensure_ascii=False)
