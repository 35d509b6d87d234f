#!/usr/bin/env python3
"""terminal_test.py: dagrun on a terminal (a pseudo-terminal), TAP output.

The progress bar is drawn on stderr only when stderr is a terminal and
TERM is not "dumb"; it never shares a line with host print/checksum output
(when that output goes to a terminal the bar stays off); no escape
sequence is ever written (NO_COLOR is honoured trivially: dagrun has no
colours, and the bar is erased with blanks); and with --format=json stdout
is exactly one JSON object while print output goes to stderr.

Usage: terminal_test.py DAGRUN
"""
import json
import os
import pty
import select
import subprocess
import sys
import tempfile

DAGRUN = os.path.abspath(sys.argv[1])
# About 1.2 s of sleeping nodes: past the bar's 0.5 s threshold.
QUIET = """dagrun: 1
run: {iterations: 60, warmup: 0}
nodes:
  nap: {op: host, fn: sleep, args: {us: 20000}}
"""
PRINTING = """dagrun: 1
run: {iterations: 60, warmup: 0}
buffers:
  h: {type: f32, count: 4, where: host, init: iota}
nodes:
  nap: {op: host, fn: sleep, args: {us: 20000}}
  say: {op: host, fn: print, args: {message: "hello from print", buffer: h}, after: [nap]}
"""

count = 0
failed = 0


def check(name, ok, detail=""):
    global count, failed
    count += 1
    print(("ok %d - %s" if ok else "not ok %d - %s") % (count, name))
    if not ok:
        failed += 1
        for line in detail.splitlines()[:20]:
            print("#   " + line)


def run(yaml_text, args, env_extra, stdout_tty):
    """Runs dagrun with stderr (and stdout when stdout_tty) on a pty.
    Returns (rc, terminal bytes, stdout bytes or None)."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(yaml_text)
        path = f.name
    master, slave = pty.openpty()
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    env.update(env_extra)
    proc = subprocess.Popen([DAGRUN, "--backend=host"] + args + [path], stdin=subprocess.DEVNULL,
                            stdout=slave if stdout_tty else subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    term = b""
    piped = b""
    fds = [master] + ([] if stdout_tty else [proc.stdout.fileno()])
    while fds:
        ready, _, _ = select.select(fds, [], [], 30)
        if not ready:
            break
        for fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the pty's other end closed
                chunk = b""
            if not chunk:
                fds.remove(fd)
            elif fd == master:
                term += chunk
            else:
                piped += chunk
    rc = proc.wait()
    os.close(master)
    os.unlink(path)
    return rc, term, (None if stdout_tty else piped)


def lines(term):
    """The terminal's lines as a person sees them after each \\r redraw:
    (line, pieces) where pieces are the \\r-separated writes on it."""
    return [l.split(b"\r") for l in term.replace(b"\r\n", b"\n").split(b"\n")]


print("1..9")
rc, term, _ = run(QUIET, [], {"TERM": "xterm"}, True)
check("a run on a terminal draws the bar", rc == 0 and b"/60 iterations" in term and b"\r[###" in term, repr(term[-400:]))
check("the bar uses no escape sequence", b"\x1b" not in term, repr(term[-400:]))
rc, term, _ = run(QUIET, [], {"TERM": "xterm", "NO_COLOR": "1"}, True)
check("NO_COLOR: no escape sequence", rc == 0 and b"\x1b" not in term, repr(term[-400:]))
rc, term, _ = run(QUIET, [], {"TERM": "dumb"}, True)
check("TERM=dumb: no bar", rc == 0 and b"/60 iterations" not in term and b"[###" not in term, repr(term[:400]))
rc, term, _ = run(PRINTING, [], {"TERM": "xterm"}, True)
say = [l for l in lines(term) if any(b"hello from print" in p for p in l)]
check("print output on the terminal", rc == 0 and len(say) == 60, "%d print lines\n%r" % (len(say), term[:600]))
check("the bar never shares a line with print output",
      all(len(l) == 1 and b"iterations" not in l[0] for l in say) and b"/60 iterations" not in term,
      repr(term[:600]))
rc, term, out = run(PRINTING, ["--format=json"], {"TERM": "xterm"}, False)
try:
    doc = json.loads(out)
    pure = out.endswith(b"}\n\n") and out.count(b"\n{") == 0
except ValueError as e:
    doc, pure = None, False
check("--format=json: stdout is one JSON object", rc == 0 and doc is not None and pure and doc["schema"] >= 1,
      repr(out[:300]))
check("--format=json: print output goes to stderr", term.count(b"hello from print") == 60, repr(term[:300]))
check("--format=json with prints on the terminal: no bar", b"/60 iterations" not in term, repr(term[:300]))
sys.exit(1 if failed else 0)
