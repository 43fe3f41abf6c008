#!/usr/bin/env python3
"""check-citations.py -- every file a comment or a page cites is in the repo.

    tools/check-citations.py [ROOT]        (ROOT: the repository, default ..)

weft's design, its test battery and its toolchain facts live in docs/.
Sources, tests, tools and pages cite them, and each other, by path; a
citation of a file that is not in the repository (a design note kept
elsewhere, a page renamed or removed) leaves the reader nowhere. This
script reads the repository's text files and fails when:

  1. a file names one of the design notes that used to live outside the
     repository (the names in OUTSIDE below), or a path outside it
     (an absolute path to a note or model file, shared/<file>,
     references/<file>);
  2. a repository path (src/..., tests/..., docs/..., and the other top
     directories in TOP) names nothing that exists (a program built from
     a source of the same name counts as existing);
  3. a citation carries a section (docs/design.md#how-work-flows, or a
     Markdown link with #anchor) and the page has no heading with that
     anchor (GitHub's rule: lower case, punctuation dropped, spaces to
     hyphens);
  4. a Markdown link to a relative path resolves to nothing;
  5. a bare *.md or *.pml name (README.md, park.pml) matches no file of
     that name anywhere in the repository.

Paths with placeholders (<machine>, *, {a,b}, $VAR) are patterns, not
citations, and are skipped. Files under benchmarks/results/ resolve bare
names against their own directory (they cite their raw result files).

Prints one line per problem, then "N files, N citations, N problems";
exits 1 if there is any problem. ctest runs it as `citations`.
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# Top-level directories whose paths are checked, and the files scanned.
TOP = ("src", "include", "tests", "benchmarks", "examples", "tools", "cmake",
       "models", "docs", ".ci")
TOP_FILES = ("README.md", "CMakeLists.txt", "CMakePresets.json", "CHANGES",
             "CHANGES.md", "Doxyfile")
TEXT_EXT = (".c", ".h", ".S", ".cc", ".hh", ".cpp", ".hpp", ".py", ".sh",
            ".cmake", ".txt", ".md", ".pml", ".in", ".json", ".supp", ".dox")
SKIP_DIRS = {".git", "__pycache__"}
# Design notes that were once kept outside the repository. Built from
# pieces so that this file does not cite them itself.
OUTSIDE = tuple(n + ".md" for n in ("DES" "IGN", "RELIA" "BILITY", "TOOL" "CHAIN", "ST" "YLE"))
# Absolute paths of the machine the notes lived on, and files under the
# shared/ or references/ folders they were kept in (a file name with an
# extension, so that prose such as "shared/exclusive" is not taken).
OUTSIDE_PATH = re.compile(r"(?<![\w.:/-])/(?:[\w.-]+/)+[\w.-]+\.(?:md|pml)\b|(?<![\w./-])(?:shared|references)/[\w./-]*\.\w+")

PATH_RE = re.compile(r"(?<![\w/.-])((?:%s)/[\w./+#-]*[\w/#-])" % "|".join(re.escape(t) for t in TOP))
MDLINK_RE = re.compile(r"\]\(([^)\s]+)\)")
BARE_RE = re.compile(r"(?<![\w/.-])([\w-]+\.(?:md|pml))\b")
# A path with no extension may name the program built from a source of
# the same name (benchmarks/icount from benchmarks/icount.c).
PROGRAM_SOURCES = (".c", ".cc", ".cpp")
PLACEHOLDER = re.compile(r"[<>*{}$]|\.\.\.")


def slug(heading):
    """GitHub's anchor for a Markdown heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


_anchors = {}


def anchors_of(path):
    if path not in _anchors:
        found = set()
        in_code = False
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("```"):
                    in_code = not in_code
                elif not in_code and re.match(r"#{1,6} ", line):
                    found.add(slug(line.lstrip("#")))
        _anchors[path] = found
    return _anchors[path]


def scanned_files():
    for name in TOP_FILES:
        p = os.path.join(ROOT, name)
        if os.path.isfile(p):
            yield p
    for top in TOP:
        base = os.path.join(ROOT, top)
        for d, dirs, files in os.walk(base):
            dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS)
            for f in sorted(files):
                if f.endswith(TEXT_EXT) or f in ("run",):
                    yield os.path.join(d, f)


def all_basenames():
    names = set()
    for d, dirs, files in os.walk(ROOT):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith("build")]
        names.update(files)
    return names


def main():
    problems = []
    nfiles = ncites = 0
    basenames = all_basenames()
    me = os.path.abspath(__file__)
    for path in scanned_files():
        if os.path.abspath(path) == me:
            continue
        rel = os.path.relpath(path, ROOT)
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.readlines()
        except UnicodeDecodeError:
            continue   # not text
        nfiles += 1
        in_results = rel.startswith(os.path.join("benchmarks", "results") + os.sep)
        is_md = path.endswith(".md")

        def problem(lineno, what):
            problems.append("%s:%d: %s" % (rel, lineno, what))

        def check_target(lineno, target, base_dir, cited):
            """target: a path (maybe with #anchor), relative to base_dir."""
            file_part, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(base_dir, file_part)) if file_part else path
            if not os.path.exists(full) and any(os.path.isfile(full + e) for e in PROGRAM_SOURCES):
                return   # a program the build makes from that source
            if not os.path.exists(full):
                problem(lineno, "cites %s, which is not in the repository" % cited)
                return
            if anchor and full.endswith(".md") and os.path.isfile(full):
                if anchor not in anchors_of(full):
                    problem(lineno, "cites %s, but %s has no section #%s"
                            % (cited, os.path.relpath(full, ROOT), anchor))

        for i, line in enumerate(lines, 1):
            for name in OUTSIDE:
                if name in line:
                    ncites += 1
                    problem(i, "cites %s, a file outside the repository (see docs/)" % name)
            for m in OUTSIDE_PATH.finditer(line):
                ncites += 1
                problem(i, "cites %s, a path outside the repository" % m.group(0))
            for m in PATH_RE.finditer(line):
                t = m.group(1).rstrip(".")
                if PLACEHOLDER.search(line[m.start():m.end() + 1]):
                    continue
                ncites += 1
                check_target(i, t, ROOT, t)
            linked = set()
            if is_md:
                for m in MDLINK_RE.finditer(line):
                    linked.add(os.path.basename(m.group(1).partition("#")[0]))
                    t = m.group(1)
                    if re.match(r"[a-z]+:", t) or PLACEHOLDER.search(t):
                        continue
                    ncites += 1
                    check_target(i, t, os.path.dirname(path), t)
            for m in BARE_RE.finditer(line):
                name = m.group(1)
                if name in OUTSIDE or name in linked:
                    continue   # reported above
                ncites += 1
                if in_results and os.path.exists(os.path.join(os.path.dirname(path), name)):
                    continue
                if name not in basenames:
                    problem(i, "cites %s, and no file of that name is in the repository" % name)
    for p in problems:
        print(p)
    print("%d files, %d citations, %d problems" % (nfiles, ncites, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
