"""The analysis CLI (`python -m trainscale_analysis ...`) run in the test's own process, for tests
that check its messages and exit codes rather than the process: main(argv) with stdout and stderr
captured, instead of a subprocess that imports matplotlib, pandas and h5py again (about a CPU
second each; issue 37). An exception that escapes main fails the test, as a traceback on a
subprocess' stderr would. Tests of the entry point itself run it as a process."""
import contextlib
import io
import subprocess
import sys

from trainscale_analysis.__main__ import main


def cli(*args):
    """`python -m trainscale_analysis *args` in this process: what subprocess.run would return
    (returncode, stdout, stderr), from main's return value or a SystemExit (argparse's errors)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def cli_process(*args, timeout=300):
    """`python -m trainscale_analysis *args` as a process: the entry point's own exit status."""
    return subprocess.run([sys.executable, "-m", "trainscale_analysis", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout)
