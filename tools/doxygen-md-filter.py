#!/usr/bin/env python3
"""Doxygen's input filter for the Markdown pages under docs/ (docs/Doxyfile.in).

The pages are written for a reader on a Git forge, whose section links are
the forge's heading anchors: `[x](#parking)`, `[x](sched.md#helping)`.
Doxygen 1.9 gives headings no such anchors, so each of those links would be
an unresolved reference, which the docs target treats as an error. This
filter gives every heading below the page title an explicit label, the
page's name and the forge's anchor (`{#design--parking}`: labels are global
across the reference, anchors only unique in a page), and points each
section link, in-page or to another page under docs/, at that label. Lines
are only edited in place, never added or removed, so Doxygen's line numbers
in a warning are the file's own. Fenced code is left as it is.

Usage (Doxygen runs it): doxygen-md-filter.py <page>.md  -> the page on stdout
"""
import os
import re
import sys


def docs_dir(path):
    """The docs/ directory a page is under: its nearest ancestor so named."""
    d = os.path.dirname(os.path.realpath(path))
    while os.path.basename(d) != "docs":
        if os.path.dirname(d) == d:
            sys.exit("doxygen-md-filter: %s is not under a docs/ directory" % path)
        d = os.path.dirname(d)
    return d


HEADING = re.compile(r"^(#{2,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
FENCE = re.compile(r"^[ \t]*(```|~~~)")
# A Markdown link's target: (#anchor) or (<page>.md#anchor), no spaces.
LINK = re.compile(r"\]\(([^()\s#]*\.md)?#([^()\s]+)\)")


def page_name(path, docs):
    """docs/design.md -> design, docs/reference/sched.md -> reference-sched."""
    rel = os.path.relpath(os.path.realpath(path), docs)
    return re.sub(r"\.md$", "", rel).replace(os.sep, "-")


def anchor(text):
    """The forge's anchor of a heading: lower case, code marks and
    punctuation dropped (underscores and hyphens stay), spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)   # a link: its words
    text = text.lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def label(page, slug):
    return "%s--%s" % (page, slug)


def main(path):
    docs = docs_dir(path)
    page = page_name(path, docs)
    here = os.path.dirname(os.path.realpath(path))
    seen = {}
    out = []
    fenced = False
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for line in lines:
        if FENCE.match(line):
            fenced = not fenced
            out.append(line)
            continue
        if fenced:
            out.append(line)
            continue
        m = HEADING.match(line)
        if m and "{#" not in line:
            slug = anchor(m.group(2))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            if n:
                slug = "%s-%d" % (slug, n)
            line = "%s %s {#%s}" % (m.group(1), m.group(2), label(page, slug))

        def relink(lm):
            target, slug = lm.group(1), lm.group(2)
            if target is None:
                return "](#%s)" % label(page, slug)
            dest = os.path.realpath(os.path.join(here, target))
            if not dest.startswith(docs + os.sep) or not os.path.exists(dest):
                return lm.group(0)      # outside docs/: Doxygen reports it
            return "](#%s)" % label(page_name(dest, docs), slug)

        out.append(LINK.sub(relink, line))
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
