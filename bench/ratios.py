#!/usr/bin/env python3
"""Summarises Google Benchmark JSON files from the mosaiq benchmarks as markdown tables.

Benchmark names are `<op>/<impl>/<case>`. For every op: one row per case with each
implementation's time and GMAC/s, then the ratios `<baseline>/mosaiq` = baseline time / mosaiq
time (above 1: mosaiq is faster) and their geometric means. Rows of ceilings (`peak`, `memcpy`)
have cases of their own and are listed under the table. Standard library only.

usage: ratios.py FILE.json [FILE.json ...]
"""

import json
import math
import sys
from collections import OrderedDict

IMPL_ORDER = ["mosaiq", "reference", "xnnpack", "onednn", "opencv"]
BASELINES = ["xnnpack", "onednn", "opencv"]
CEILINGS = ["peak", "memcpy"]
TO_MICROSECONDS = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
# A run whose wall-clock time exceeds its CPU time by this much shared the CPU with other work.
BUSY_FACTOR = 1.25


def load_runs(paths):
    """Returns ({(op, impl, case): run}, [context]); medians win over single runs when repeated."""
    runs, contexts = OrderedDict(), []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        # A binary whose rows a --benchmark_filter excluded writes an empty file: nothing to read.
        if not text.strip():
            continue
        data = json.loads(text)
        contexts.append((path, data.get("context", {})))
        for bench in data.get("benchmarks", []):
            parts = bench.get("run_name", bench["name"]).split("/")
            # N-thread rows (`<case>_t<N>`) time wall-clock: Google Benchmark appends /real_time.
            if parts[-1] == "real_time":
                parts = parts[:-1]
                bench["wall_clock"] = True
            if len(parts) < 3:
                continue
            key = (parts[0], parts[1], "/".join(parts[2:]))
            if bench.get("run_type") == "aggregate":
                if bench.get("aggregate_name") == "median":
                    runs[key] = bench
            elif key not in runs:
                runs[key] = bench
    return runs, contexts


def microseconds(run):
    clock = "real_time" if run.get("wall_clock") else "cpu_time"
    return run[clock] * TO_MICROSECONDS[run.get("time_unit", "ns")]


def fmt_time(run):
    if run is None:
        return ""
    if run.get("error_occurred"):
        return "error"
    return f"{microseconds(run):.1f}"


def fmt_rate(run):
    if run is None or run.get("error_occurred") or "GMAC/s" not in run:
        return ""
    return f"{run['GMAC/s']:.1f}"


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def impl_rank(impl):
    return (IMPL_ORDER.index(impl), impl) if impl in IMPL_ORDER else (len(IMPL_ORDER), impl)


def label_kind(label):
    """The implementation part of a row label, without its verification note."""
    return label.split("; vs reference:")[0].strip()


def op_table(op, runs):
    rows = {key: run for key, run in runs.items() if key[0] == op}
    impls = sorted({impl for (_, impl, _) in rows if impl not in CEILINGS}, key=impl_rank)
    cases = list(OrderedDict.fromkeys(case for (_, impl, case) in rows if impl not in CEILINGS))
    baselines = [b for b in BASELINES if b in impls] if "mosaiq" in impls else []
    # Ceilings measured on the same case (memcpy of the output bytes) become columns; their ratio
    # is the share of the ceiling's rate that mosaiq reaches. Others (a peak loop) stay a note.
    ceilings = [c for c in CEILINGS if "mosaiq" in impls and any((op, c, case) in rows for case in cases)]
    with_rate = any(fmt_rate(run) for (_, impl, _), run in rows.items() if impl not in CEILINGS)
    out = [f"### {op}", ""]

    header = ["case"]
    for impl in impls + ceilings:
        header += [f"{impl} µs"] + ([f"{impl} GMAC/s"] if with_rate and impl not in ceilings else [])
    # Other mosaiq paths (mosaiq_amx: the AMX tiles) get their own ratio columns against the baselines.
    variants = [i for i in impls if i.startswith("mosaiq_")]
    pairs = [(b, "mosaiq") for b in baselines + ceilings] + [(b, v) for v in variants for b in baselines]
    header += [f"{b}/{s}" for b, s in pairs]
    out.append("| " + " | ".join(header) + " |")
    out.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")

    ratios = {pair: [] for pair in pairs}
    for case in cases:
        cells = [case]
        for impl in impls + ceilings:
            run = rows.get((op, impl, case))
            cells += [fmt_time(run)] + ([fmt_rate(run)] if with_rate and impl not in ceilings else [])
        for b, subject in pairs:
            mosaiq = rows.get((op, subject, case))
            other = rows.get((op, b, case))
            if mosaiq and other and not mosaiq.get("error_occurred") and not other.get("error_occurred"):
                ratio = microseconds(other) / microseconds(mosaiq)
                ratios[(b, subject)].append(ratio)
                cells.append(f"{ratio:.2f}")
            else:
                cells.append("")
        out.append("| " + " | ".join(cells) + " |")
    if baselines or ceilings:
        per_impl = 1 + (1 if with_rate else 0)
        cells = ["geometric mean"] + [""] * (per_impl * len(impls) + len(ceilings))
        for pair in pairs:
            g = geomean(ratios[pair])
            cells.append(f"**{g:.2f}** ({len(ratios[pair])})" if g else "")
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    if "mosaiq" not in impls:
        out.append(f"No mosaiq rows for {op}: no ratios.")
        out.append("")

    for (_, impl, case), run in rows.items():
        if impl in ceilings:
            continue
        if impl in CEILINGS and not run.get("error_occurred"):
            out.append(f"- ceiling `{op}/{impl}/{case}`: {fmt_rate(run)} GMAC/s ({run.get('label', '')})")
        elif impl in CEILINGS:
            out.append(f"- ceiling `{op}/{impl}/{case}`: not run: {run.get('error_message', '')}")
    for impl in impls:
        kinds = OrderedDict.fromkeys(label_kind(r.get("label", "")) for (_, i, _), r in rows.items() if i == impl)
        kinds = [k for k in kinds if k]
        if kinds:
            out.append(f"- {impl}: " + ", ".join(f"`{k}`" for k in kinds))
    errors = [(key, run) for key, run in rows.items() if run.get("error_occurred")]
    for (o, impl, case), run in errors:
        out.append(f"- error `{o}/{impl}/{case}`: {run.get('error_message', '')}")
    busy = [key for key, run in rows.items()
            if not run.get("error_occurred") and not run.get("wall_clock")
            and run["real_time"] > BUSY_FACTOR * run["cpu_time"]]
    if busy:
        out.append(f"- warning: {len(busy)} row(s) ran on a busy machine (wall clock > {BUSY_FACTOR}x CPU time); "
                   "CPU times are shown, but caches and clocks were shared")
    out.append("")
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    runs, contexts = load_runs(argv[1:])
    lines = ["Times are CPU time per run of one thread (`_t<N>` rows: wall-clock time on N threads); "
             "ratio = baseline time / mosaiq time (above 1: mosaiq is faster).", ""]
    for path, context in contexts:
        notes = [f"{k}: {context[k]}" for k in ("mosaiq_row", "xnnpack", "onednn") if k in context]
        lines.append(f"- `{path}`: " + "; ".join(notes))
    lines.append("")
    for op in OrderedDict.fromkeys(key[0] for key in runs):
        lines += op_table(op, runs)
    print("\n".join(lines).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
