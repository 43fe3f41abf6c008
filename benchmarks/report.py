#!/usr/bin/env python3
"""Summarize a machine's results folder written by run.py as Markdown and plots.

    benchmarks/report.py [RESULTS_DIR]              writes RESULTS_DIR/README.md, each
                                                     suite's <suite>/<date>.md and *.png
    benchmarks/report.py --readme README.md RESULTS_DIR
                                                     also rewrites the block between
                                                     README.md's report.py markers
    benchmarks/report.py --print [RESULTS_DIR]       prints the Markdown, writes nothing

RESULTS_DIR is a machine's folder, benchmarks/results/<machine>/
(benchmarks/results/README.md gives the layout); without it, this
machine's (benchlib.machine_slug). For each suite, the newest
<suite>/<date>.json is read and its page written beside it as
<suite>/<date>.md; README.md holds the machine, the summary, the
instruction counts (the newest callgrind/<date>.json) and the cold and
warm runs (coldwarm/<date>.json). Every figure is benchlib.QUANTITY: the
median over the samples of the time per item, the same figure ab.py
gives, so an A/B ratio compares two rows of these tables.

load() turns the Google Benchmark JSON files into rows (through
benchlib); markdown() and suite_page() lay them out; plots() draws the
PNGs. Conventions shared with
the benchmark sources:

  - a case is named "<group>/<case>"; every case of a group counts the
    same unit in items_per_second (UNITS below), or, in the wake and idle
    groups, reports counters instead (latency percentiles, CPU use);
  - cases labelled "baseline" are what the others in their group are
    compared with: the ratio is baseline time / case time, so 20x means
    the case is twenty times faster than that baseline. A <base>_t<T>
    group (fib<N>, the graph shapes) is also compared with <base>_seq's
    sequential case; a graph's <base>_brd_t<T> group (build + run +
    destroy every iteration) with the same <base>_seq.

The Markdown needs the Python 3 standard library only. The plots need
matplotlib (Debian: python3-matplotlib), drawn with the Agg backend; when
this python3 cannot import it and /usr/bin/python3 can (a pyenv or venv
python3 first on PATH), report.py runs itself again with that one. With
neither, it writes the Markdown and says that the plots were skipped.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
from report_tables import (  # noqa: E402
    BEGIN,
    END,
    SPECIAL,
    SUMMARY_NOTE,
    coldwarm_cases,
    coldwarm_section,
    context,
    count_rows,
    counter_table,
    counts_section,
    fmt_ms,
    fmt_per_task,
    group_note,
    group_table,
    index,
    load,
    sources,
    split_threads,
    summary_table,
    wake_summary,
    wake_table)
from report_plots import clear_plots, have_matplotlib, other_python, plots  # noqa: E402

suite_of = benchlib.suite_of


# ---- the page --------------------------------------------------------------------------------

def image(made, name, prefix=""):
    if name not in made:
        return []
    f, caption = made[name]
    return ["![%s](%s)" % (caption, prefix + f), ""]


TABLE_NOTE = (
    "Figures are %s. Ratios are baseline time / case time: above 1x the case is "
    "faster. CV is the spread of the samples (stddev / mean). Cases marked \"(wall)\" "
    "are timed by the wall clock because they involve another thread; the others by "
    "this thread's CPU time, and the \"wall\" column shows their wall-clock figure: "
    "where it is much higher, other work took the CPU away during the run."
    % benchlib.QUANTITY)


def run_facts(results_dir, binary, path, meta):
    """(git commit, date, load average at start, command) of one suite's run."""
    r = meta.get("runs", {}).get(binary, {})
    load_avg = ", ".join("%.2f" % x for x in
                         benchlib.read(path).get("context", {}).get("load_avg", []))
    return (r.get("git_commit", "?")[:12], r.get("date", "?"), load_avg or "?",
            r.get("command", "?").strip())


def facts_list(meta, ctx):
    facts = [
        ("CPU", "%s (family %s, model %s)" % (meta.get("cpu_model", "?"),
                                              meta.get("cpu_family", "?"),
                                              meta.get("cpu_model_number", "?"))),
        ("cores", meta.get("cores", ctx.get("num_cpus", "?"))),
        ("MHz (reported)", ctx.get("mhz_per_cpu", "?")),
        ("kernel", meta.get("kernel", "?")),
        ("C compiler", meta.get("c_compiler", "?")),
        ("C++ compiler", meta.get("cxx_compiler", "?")),
        ("build", "%s preset (%s)" % ("release", meta.get("build_type", "?"))),
        ("git commit" + (" (last full run)" if meta.get("runs") else ""),
         meta.get("git_commit") or "none: only partial runs, see the table below"),
        ("date" + (" (last full run)" if meta.get("runs") else ""),
         meta.get("date") or ctx.get("date", "?")),
        ("load average at start", ", ".join("%.2f" % x for x in ctx.get("load_avg", [])) or "?"),
        ("repetitions", "%s per case, medians shown; nothing pinned" % meta.get("repetitions", "?")),
        ("environment", ", ".join("%s=%s" % kv for kv in meta.get("env", {}).items()) or "—"),
    ]
    if ctx.get("library_build_type") == "debug":
        facts.append(("note", "Debian's libbenchmark reports it was built as DEBUG; "
                              "that affects its own bookkeeping, not the timed code"))
    return ["- **%s**: %s" % kv for kv in facts]


def suite_page(results_dir, binary, path, rows, by_group, meta, made):
    """<suite>/<date>.md: every group of one suite's run, with its spread."""
    suite = suite_of(binary)
    machine = meta.get("machine", os.path.basename(os.path.normpath(results_dir)))
    commit, date, load_avg, cmd = run_facts(results_dir, binary, path, meta)
    out = ["# weft benchmarks: %s, %s (%s)" % (machine, binary, benchlib.date_of(path) or "?"), "",
           "- **raw results**: [%s](%s)" % (os.path.basename(path), os.path.basename(path)),
           "- **git commit**: %s" % commit, "- **date**: %s" % date,
           "- **load average at start**: %s" % load_avg, "- **command**: `%s`" % cmd,
           "- **the machine**: [its page](../README.md)", ""]
    out += image(made, "ratios_%s.png" % suite, "../")
    groups = []
    for r in rows:
        if r.binary == binary and r.group not in groups:
            groups.append(r.group)
    special = False
    for g in groups:
        if split_threads(g)[0].split("_", 1)[0] in SPECIAL:
            special = True
            continue
        grows = by_group[g]
        if all(r.ns_per_item is None and not r.error for r in grows):
            out += ["## %s" % g, "", counter_table(grows), ""]
        else:
            out += ["## %s" % g, "", group_table(g, grows, by_group), ""]
            out += group_note(g, grows, by_group)
    if special:
        out += wake_table(by_group, meta.get("repetitions", "N"))
    out += [TABLE_NOTE, ""]
    return "\n".join(out)


def markdown(results_dir, made=None, skipped=None):
    """The machine's page (README.md). made: the plots drawn ({name: (file,
    caption)}); skipped: why there are none. Each suite's tables are on its
    own page (suite_page)."""
    made = made or {}
    rows = load(results_dir)
    by_group = index(rows)
    meta, ctx, cg, cw = context(results_dir)
    out = ["# weft benchmarks: %s" % meta.get("machine", os.path.basename(results_dir.rstrip("/"))), ""]
    out += facts_list(meta, ctx)
    here = os.path.relpath(results_dir, os.path.dirname(HERE))
    cmd = (meta.get("command") or "").strip()
    out += ["", ("Reproduce: `%s` (the last full run); " % cmd if cmd else "Reproduce: ") +
            "everything, after `tools/build.sh deps`: `python3 benchmarks/run.py`; these pages and "
            "their plots alone, from the JSON here: `python3 benchmarks/report.py %s`" % here, ""]
    srcs = [(b, p) for b, p in sources(results_dir) if benchlib.date_of(p)]
    if srcs:
        out += ["Each suite's newest run, with every case and its spread on the suite's page "
                "(`run.py --bench` re-runs one; older runs stay beside it):", "",
                "| suite | page | git commit | date | load average at start | command |",
                "|---|---|---|---|---|---|"]
        for b, p in srcs:
            commit, date, load_avg, c = run_facts(results_dir, b, p, meta)
            page = os.path.relpath(p, results_dir)[: -len(".json")] + ".md"
            out.append("| %s | [%s](%s) | %s | %s | %s | `%s` |" % (
                suite_of(b), page, page, commit, date, load_avg, c))
        out.append("")

    table = summary_table(by_group)
    if table:
        out += ["## summary", "", table, ""]
        line = wake_summary(by_group)
        if line:
            out += [line[0].upper() + line[1:] + ".", ""]
        out += [SUMMARY_NOTE + " All cases of every group, with their spread, are on the "
                "suite pages above. Figures are %s." % benchlib.QUANTITY, ""]
    if skipped:
        out += ["*Plots skipped: %s.*" % skipped, ""]
    out += image(made, "summary.png") + image(made, "threads.png")

    out += counts_section(cg)
    out += coldwarm_section(cw, by_group)
    if meta.get("perf"):
        out += ["perf: %s" % meta["perf"], ""]
    return "\n".join(out)


def suite_pages(results_dir, made=None):
    """{path of <suite>/<date>.md: its text} for each suite's newest run."""
    rows = load(results_dir)
    by_group = index(rows)
    meta = context(results_dir)[0]
    return {p[: -len(".json")] + ".md": suite_page(results_dir, b, p, rows, by_group, meta,
                                                    made or {})
            for b, p in sources(results_dir) if benchlib.date_of(p)}


def readme_block(results_dir, readme, made):
    """The block --readme puts in the top-level README: the summary table,
    the instruction counts, cold and warm at the highest thread count, and
    the plots, with paths relative to the README."""
    rows = load(results_dir)
    by_group = index(rows)
    meta, ctx, cg, cw = context(results_dir)
    rel = os.path.relpath(results_dir, os.path.dirname(os.path.abspath(readme)))
    prefix = rel.rstrip("/") + "/"
    out = ["Generated by `python3 benchmarks/report.py --readme README.md %s` from the committed "
           "results of `%s` (%s, %s cores, %s)." % (rel, meta.get("machine", "?"),
                                                      meta.get("cpu_model", "?"), meta.get("cores", "?"),
                                                      meta.get("c_compiler", "?")), ""]
    table = summary_table(by_group)
    if table:
        out += [table, "", SUMMARY_NOTE, ""]
        line = wake_summary(by_group)
        if line:
            out += [line[0].upper() + line[1:] + ".", ""]
    counts = [(op, n) for op, n, _ in count_rows(cg) if "weft__" not in op]
    if counts:
        out += ["Instructions per operation, counted with callgrind (`benchmarks/icount.c`, "
                "`examples/*_pingpong.c`):", "",
                "| operation | instructions |", "|---|---:|"]
        out += ["| %s | %s |" % (op.replace(": the whole ping-pong loop, per switch", ""), n)
                for op, n in counts]
        out.append("")
    all_cases = coldwarm_cases(cw, by_group)
    cases = [c for c in all_cases if c["threads"] == max(x["threads"] for x in all_cases)]
    if cases:
        out += ["First run in a fresh process (cold: scheduler and graph just made; a graph's "
                "first run also checks it) against the median warm run, and memory per task "
                "(`benchmarks/coldwarm.c`, %d threads, medians of %d processes):" % (
                    cases[0]["threads"], cases[0]["processes"]), "",
                "| workload | cold ms | warm ms | cold / warm | weft heap peak per task | "
                "RSS peak per task |",
                "|---|---:|---:|---:|---:|---:|"]
        for c in cases:
            out.append("| %s | %s | %s | %.1fx | %s | %s |" % (
                c["what"], fmt_ms(c["cold"]), fmt_ms(c["warm"]), c["cold"] / c["warm"],
                fmt_per_task(c["heap_peak"], c["tasks"]), fmt_per_task(c["rss"], c["tasks"])))
        out.append("")
    out += image(made, "summary.png", prefix) + image(made, "threads.png", prefix)
    suites = [n for n in sorted(made) if n.startswith("ratios_")]
    if suites:
        out += ["<details><summary>Every weft case against each baseline, per suite</summary>", ""]
        for n in suites:
            out += image(made, n, prefix)
        out += ["</details>", ""]
    return "\n".join(out).rstrip("\n")


def update_readme(readme, block):
    with open(readme) as f:
        text = f.read()
    b = text.find(BEGIN)
    e = text.find(END)
    if b < 0 or e < b:
        sys.exit("report.py: %s has no '%s ... -->' ... '%s' block" % (readme, BEGIN, END))
    b = text.index("-->", b) + len("-->")
    text = text[:b] + "\n" + block + "\n" + text[e:]
    with open(readme, "w") as f:
        f.write(text)


def write(results_dir, readme=None):
    """Writes results_dir/README.md, each suite's <suite>/<date>.md beside
    its JSON, and the plots (and the --readme block). Returns the paths
    written."""
    if not have_matplotlib():
        alt = other_python()
        if alt:
            print("report.py: no matplotlib in %s; running again with %s" % (sys.executable, alt))
            env = dict(os.environ, WEFT_REPORT_REEXEC="1")
            cmd = [alt, os.path.abspath(__file__), results_dir] + (["--readme", readme] if readme else [])
            subprocess.run(cmd, check=True, env=env)
            return None
    rows = load(results_dir)
    meta = context(results_dir)[0]
    clear_plots(results_dir)
    made, skipped = {}, None
    try:
        made = plots(results_dir, rows, meta)
    except ImportError as e:
        skipped = ("matplotlib could not be imported (%s); on Debian: apt-get install "
                   "python3-matplotlib" % e)
        print("report.py: plots skipped: " + skipped)
    path = os.path.join(results_dir, "README.md")
    with open(path, "w") as f:
        f.write(markdown(results_dir, made, skipped))
    written = [path]
    for page, text in suite_pages(results_dir, made).items():
        with open(page, "w") as f:
            f.write(text)
        written.append(page)
    written += [os.path.join(results_dir, f) for f, _ in made.values()]
    if readme:
        update_readme(readme, readme_block(results_dir, readme, made))
        written.append(readme)
    root = os.path.dirname(HERE)
    print("wrote " + ", ".join(os.path.relpath(p, root) for p in written))
    return written


def default_dir():
    """This machine's folder: benchmarks/results/<machine slug>."""
    return os.path.join(benchlib.RESULTS, benchlib.machine_slug())


def main(argv):
    args = list(argv)
    readme = None
    if "-h" in args or "--help" in args:
        sys.stdout.write(__doc__)
        return
    if "--print" in args:
        args.remove("--print")
        if len(args) > 1:
            sys.exit("usage:\n" + __doc__.split("\n\n")[1])
        d = args[0] if args else default_dir()
        sys.stdout.write(markdown(d))
        for page, text in suite_pages(d).items():
            sys.stdout.write("\n\n<!-- %s -->\n%s" % (os.path.relpath(page, d), text))
        sys.stdout.write("\n")
        return
    if "--readme" in args:
        i = args.index("--readme")
        if i + 1 >= len(args):
            sys.exit("report.py: --readme needs a file")
        readme = args[i + 1]
        del args[i:i + 2]
    if len(args) > 1 or (args and args[0].startswith("-")):
        sys.exit("usage:\n" + __doc__.split("\n\n")[1])
    write(args[0] if args else default_dir(), readme)


if __name__ == "__main__":
    main(sys.argv[1:])
