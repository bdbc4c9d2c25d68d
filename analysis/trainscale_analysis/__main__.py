"""Command line: python3 -m trainscale_analysis report|compare|predict|predict-study|sim-study|network-study|compression|checkpoint-io|archive ...
(see docs/analysis.md).

Exit codes follow the driver's: 0 ok, 1 failed (an output that cannot be written: a full disk, a
read-only file system; every command then leaves nothing behind: staged_files.py), 2 usage or input error (bad
campaign directory, unknown schema version, -o naming a directory where a file goes).
"""
from __future__ import annotations

import argparse
import errno
import sys
from pathlib import Path

from . import archive, checkpoint_io, compare, compression, load, network_study, predict, report, sim_study
from .staged_files import OutputError

# Commands whose -o names a file (the others' name a directory).
FILE_OUTPUTS = ("report", "compare", "predict", "compression", "checkpoint-io")
WHAT_TO_DO = {
    errno.ENOSPC: "the file system is full: free space there or write elsewhere with -o",
    errno.EDQUOT: "the disk quota is used up: free space or write elsewhere with -o",
    errno.EROFS: "the file system is read-only: write elsewhere with -o",
    errno.EACCES: "permission denied: write where you may with -o",
    errno.EPERM: "not permitted: write where you may with -o",
}


def os_error_text(e: OSError, out: str) -> str:
    """`cannot write <out>: <reason> (<what to do>)` of a failed write (or `<file>: <reason>` of a
    failed read elsewhere), on one line."""
    reason = e.strerror or str(e)
    hint = WHAT_TO_DO.get(e.errno)
    where = f"cannot write {out}" if hint or not e.filename else str(e.filename)
    return f"{where}: {reason}" + (f" ({hint})" if hint else "")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m trainscale_analysis",
                                description="Reports from trainscale campaigns (HDF5 run files).")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("report", help="one self-contained HTML report (+ Markdown summary)")
    r.add_argument("campaigns", nargs="+", metavar="CAMPAIGN_DIR")
    r.add_argument("-o", "--out", required=True, metavar="reports/NAME.html")
    r.add_argument("--loss-threshold", type=float, default=None,
                   help="loss-area winners: discard curves whose minimum training loss is "
                        "above this (default: keep all finished curves)")
    r.add_argument("--baseline-workers", type=int, default=None,
                   help="worker count that speedup and efficiency are relative to "
                        "(default: the smallest of each series)")
    r.add_argument("--baseline", action="append", default=[], metavar="DIM=VALUE",
                   help="baseline value of a dimension for relative-performance bars, e.g. "
                        "precision=fp32, or generation=v100 for the GPU-generation bars "
                        "(repeatable; default: the first value in sort order, the oldest "
                        "generation)")
    r.add_argument("--title", default=None)
    r.add_argument("--io", action="append", default=[], metavar="FILE_OR_DIR",
                   help="trainscale bench io files (or directories of them) for the data format and storage views")
    c = sub.add_parser("compare", help="two campaigns side by side with ratios B / A")
    c.add_argument("a", metavar="CAMPAIGN_A")
    c.add_argument("b", metavar="CAMPAIGN_B")
    c.add_argument("-o", "--out", required=True, metavar="reports/NAME.html")
    c.add_argument("--title", default=None)
    pr = sub.add_parser("predict", help="predicted vs simulated vs measured step times (Markdown)")
    pr.add_argument("predictions", nargs="+", metavar="PREDICT.h5", help="trainscale predict --out files")
    pr.add_argument("--runs", action="append", default=[], metavar="DIR_OR_FILE",
                    help="run files or directories of them, measured or simulated (repeatable)")
    pr.add_argument("-o", "--out", required=True, metavar="reports/model/NAME.md")
    pr.add_argument("--title", default=None)
    ps = sub.add_parser("predict-study", help="run a study file (configs/studies/*.yaml) through trainscale "
                                              "predict and write its report")
    ps.add_argument("study", metavar="STUDY.yaml")
    ps.add_argument("--binary", default="build/bin/trainscale")
    ps.add_argument("--out", required=True, metavar="reports/model/NAME")
    si = sub.add_parser("sim-study", help="a simulated campaign's runs against the model's prediction in each run "
                                          "file, and the model against measured runs (Markdown + figures)")
    si.add_argument("runs", nargs="+", metavar="CAMPAIGN_OR_RUN_DIR", help="directories of trainscale-sim run files")
    si.add_argument("-o", "--out", required=True, metavar="reports/studies/NAME", help="directory for sim_study.md, "
                                                                                       "its figures and sim_study.csv")
    si.add_argument("--validation", default=None, metavar="reports/model/validation/SHA.json",
                    help="bench/model_validation.py's JSON: the model against runs measured here")
    si.add_argument("--title", default=None)
    n = sub.add_parser("network-study", help="study 8: throughput and scaling efficiency over the test bed's link "
                                             "rates, beside the model and the simulator (Markdown + figure)")
    n.add_argument("campaigns", nargs="+", metavar="network_RATE", help="the study's campaigns, one per link rate")
    n.add_argument("--predictions", required=True, metavar="predictions.json", help="scripts/study_network.py's")
    n.add_argument("--links", required=True, metavar="links.json", help="scripts/study_network.py's")
    n.add_argument("-o", "--out", required=True, metavar="reports/studies/network")
    n.add_argument("--title", default=None)
    z = sub.add_parser("compression", help="accuracy vs bytes on the wire vs time per compressor (Markdown + PNG)")
    z.add_argument("runs", nargs="+", metavar="RUN_FILE_OR_DIR")
    z.add_argument("-o", "--out", required=True, metavar="reports/NAME.md")
    z.add_argument("--title", default=None)
    ck = sub.add_parser("checkpoint-io", help="trainscale bench checkpoint files as a table and a chart (Markdown + PNG)")
    ck.add_argument("files", nargs="+", metavar="FILE_OR_DIR")
    ck.add_argument("-o", "--out", required=True, metavar="reports/NAME.md")
    ck.add_argument("--title", default=None)
    k = sub.add_parser("archive", help="copy a campaign with compressed run files, to commit beside its report")
    k.add_argument("campaign", metavar="CAMPAIGN_DIR")
    k.add_argument("-o", "--out", required=True, metavar="reports/studies/NAME/campaign")
    args = p.parse_args(argv)
    if args.command in FILE_OUTPUTS and Path(args.out).is_dir():
        print(f"trainscale_analysis {args.command}: -o {args.out} is a directory; give the output a file name, "
              f"e.g. -o {Path(args.out) / ('report.html' if args.command in ('report', 'compare') else 'report.md')}",
              file=sys.stderr)
        return 2
    try:
        if args.command == "checkpoint-io":
            print(checkpoint_io.write_checkpoint_io_report(args.files, args.out, args.title))
            return 0
        if args.command == "archive":
            c = archive.archive_campaign(args.campaign, args.out)
            print(f"{args.out}: {c['runs']} run files ({c['bytes_in']} -> {c['bytes_out']} bytes), "
                  f"{c['markers']} markers")
            return 0
        if args.command == "predict":
            print(predict.comparison_report(args.predictions, args.runs, args.out, args.title))
            return 0
        if args.command == "predict-study":
            print(predict.write_study(args.study, args.binary, args.out))
            return 0
        if args.command == "sim-study":
            print(sim_study.sim_study_report(args.runs, args.out, args.validation, args.title))
            return 0
        if args.command == "network-study":
            print(network_study.network_study_report(args.campaigns, args.predictions, args.links, args.out, args.title))
            return 0
        if args.command == "compression":
            print(compression.compression_report(args.runs, args.out, args.title))
            return 0
        if args.command == "report":
            html, md = report.build_report(
                args.campaigns, args.out, threshold=args.loss_threshold,
                baseline_workers=args.baseline_workers,
                baselines=report.parse_baselines(args.baseline), title=args.title, io_paths=args.io)
        else:
            html, md = compare.build_compare_report(args.a, args.b, args.out, args.title)
    except (load.SchemaError, load.CampaignError, OutputError, ValueError, KeyError) as e:
        print(f"trainscale_analysis {args.command}: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:  # predict-study: trainscale predict failed (e.g. a full disk)
        print(f"trainscale_analysis {args.command}: {e}; nothing was written", file=sys.stderr)
        return 1
    except OSError as e:  # a full disk, a read-only file system: StagedFiles wrote nothing
        print(f"trainscale_analysis {args.command}: {os_error_text(e, args.out)}; "
              "nothing was written", file=sys.stderr)
        return 1
    print(html)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
