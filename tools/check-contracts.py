#!/usr/bin/env python3
"""Counts the public functions whose declaration carries its own contract.

Every WEFT_API function in include/weft/*.h must be directly preceded (only
blank space between) by a /** ... */ comment of its own that says what the
call does in at least one sentence and then "Callable from: ...". A
function declared right after another one, under the other's comment,
shares that comment and counts as missing: each contract is the reader's
whole reference for one call.

Prints "N of M public functions have a contract and a Callable from line",
then one line per function that misses one (file:line, name, why), and
exits 1 if any does. Usage:

    tools/check-contracts.py [HEADER_OR_DIR ...]   (default: include/weft)

The `contracts` test runs it.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# One pass over a header yields these tokens in order; whitespace between
# them is skipped. A preprocessor line and any other character are "code":
# either one between a comment and a declaration means the comment does not
# directly precede it. A declaration runs from WEFT_API to its ';' (or '{'
# of a definition).
TOKEN = re.compile(
    r"(?P<block>/\*.*?\*/)"
    r"|(?P<line>//[^\n]*)"
    r"|(?P<pp>^[ \t]*\#(?:[^\n]*\\\n)*[^\n]*)"
    r"|(?P<decl>\bWEFT_API\b[^;{]*[;{])"
    r"|(?P<code>\S)",
    re.S | re.M)

NAME = re.compile(r"(\w+)\s*\(")
CALLABLE = re.compile(r"Callable from\s*:\s*\S")
# A sentence: a letter, then anything up to a full stop (or ! or ?) that
# ends the text or is followed by a space.
SENTENCE = re.compile(r"[A-Za-z][^.!?]*[.!?](?:\s|$)", re.S)


def comment_text(comment):
    """The words of a /** */ comment, without the markers and the stars
    that begin its lines."""
    body = comment[3:-2]
    lines = [re.sub(r"^\s*\*?", "", ln) for ln in body.split("\n")]
    return " ".join(ln.strip() for ln in lines).strip()


def contract_problem(comment):
    """None if the comment is a contract, else what is wrong with it."""
    if not comment.startswith("/**") or comment.startswith("/***"):
        return "preceded by a plain /* */ comment, not a /** */ contract"
    text = comment_text(comment)
    m = CALLABLE.search(text)
    if not m:
        return "its /** */ comment has no 'Callable from: ...' line"
    if not SENTENCE.search(text[:m.start()]):
        return "its /** */ comment has no sentence before 'Callable from'"
    return None


def check_header(path):
    """Yields (line, name, problem-or-None) for each WEFT_API function."""
    text = path.read_text()
    prev = None                # (kind, token text, name if a declaration)
    owner = {}                 # a declaration's name -> whether it had a comment
    for m in TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "line":
            prev = ("code", m.group(), None)
            continue
        if kind != "decl":
            prev = (kind, m.group(), None)
            continue
        decl = m.group()
        if "(" not in decl:    # an exported object, not a function
            prev = ("code", decl, None)
            continue
        name = NAME.search(decl[len("WEFT_API"):]).group(1)
        line = text.count("\n", 0, m.start()) + 1
        problem = None
        if prev is None or prev[0] in ("code", "pp"):
            problem = "no comment directly before it"
        elif prev[0] == "decl":
            if owner.get(prev[2]):
                problem = "shares the comment of %s, right above it" % prev[2]
            else:
                problem = "no comment directly before it (declared right after %s)" % prev[2]
        else:
            problem = contract_problem(prev[1])
        owner[name] = prev is not None and prev[0] == "block"
        prev = ("decl", decl, name)
        yield line, name, problem


def headers(args):
    paths = [pathlib.Path(a) for a in args] or [ROOT / "include" / "weft"]
    out = []
    for p in paths:
        out.extend(sorted(p.glob("*.h")) if p.is_dir() else [p])
    return out


def main(argv):
    files = headers(argv[1:])
    if not files:
        print("check-contracts: no headers found in %s" % " ".join(argv[1:]))
        return 2
    total, missing = 0, []
    for path in files:
        try:
            shown = path.resolve().relative_to(ROOT)
        except ValueError:
            shown = path
        for line, name, problem in check_header(path):
            total += 1
            if problem:
                missing.append("%s:%d: %s: %s" % (shown, line, name, problem))
    if total == 0:
        print("check-contracts: no WEFT_API function in %d headers" % len(files))
        return 2
    print("%d of %d public functions have a contract and a Callable from line"
          % (total - len(missing), total))
    for m in missing:
        print("  " + m)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
