#!/usr/bin/env python3
"""Build the pinned Python environments the tests run under, one per stack.

A stack is a lock file, clients/python/locks/<stack>.txt: exact versions with
their hashes, compiled from <stack>.in (what the stack asks for) by
`build.py --compile STACK`. Its environment is a virtual environment at

    ${XDG_CACHE_HOME:-~/.cache}/pixelis/envs/<stack>-<key>

where <key> is a hash of the lock file, the interpreter and this script's
format: it is built once and reused while the three are unchanged. A build
holds a file lock (flock) on the stack, so concurrent builders wait for the
first instead of racing it, and happens in a temporary directory renamed into
place at the end: a half-built environment is never used, and one left by a
killed build is removed by the next.

The installer is uv, itself pinned with its hash (locks/uv.txt) and installed
by pip into ${XDG_CACHE_HOME:-~/.cache}/pixelis/tools/. uv's download cache is
${XDG_CACHE_HOME:-~/.cache}/pixelis/uv-cache; environments hard-link their
files from it, so stacks sharing a wheel share its disk.

    python3 clients/python/envs/build.py trl       # prints the environment's python
    python3 clients/python/envs/build.py --all     # every stack
    python3 clients/python/envs/build.py --compile trl   # re-resolve locks/trl.in

Exit status: 0 built or found; 2 bad usage (an unknown stack, a --python of
another version); 3 the package index could not be reached; 4 no Python of
the locks' version to build from; 1 any other failure.
Only the standard library: it runs before any environment exists.
"""

import argparse
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The Python every lock is resolved for, and the platform: Linux x86_64 with
# glibc >= 2.28 (Debian 10 on), where torch's wheels are.
PYTHON_VERSION = "3.11"
PLATFORM = "x86_64-manylinux_2_28"

# Bumped when the layout of an environment changes, so old ones are not reused.
FORMAT = "1"

HERE = Path(__file__).resolve().parent
LOCKS = HERE.parent / "locks"  # --locks names another (the script's own tests)

EXIT_USAGE = 2
EXIT_OFFLINE = 3
EXIT_NO_PYTHON = 4

# What uv and pip print when the index cannot be reached (no route, no DNS,
# refused, timed out); any other failure is the build's own.
OFFLINE = re.compile(
    r"dns error|failed to lookup address|Name or service not known|Temporary failure in name resolution"
    r"|Network is unreachable|Connection refused|Connection reset|operation timed out|timed out"
    r"|NewConnectionError|Max retries exceeded|client error \(Connect\)",
    re.IGNORECASE,
)


class BuildError(Exception):
    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


def log(msg):
    print("pixelis envs: " + msg, file=sys.stderr, flush=True)


def cache_root():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pixelis"


def stacks():
    """Every stack: a <name>.in (its lock file, <name>.txt, is compiled from it)."""
    return sorted(p.stem for p in LOCKS.glob("*.in"))


def interpreter(explicit):
    """The Python the environments are made from: --python or $PIXELIS_PYTHON,
    else Debian's python3.11 (what CI installs with apt), else python3.11 on PATH."""
    wanted = explicit or os.environ.get("PIXELIS_PYTHON")
    field = "--python" if explicit else "PIXELIS_PYTHON"
    candidates = [wanted] if wanted else ["/usr/bin/python" + PYTHON_VERSION, "python" + PYTHON_VERSION]
    for c in candidates:
        path = shutil.which(c)
        if not path:
            if wanted:
                raise BuildError("%s %s: no such interpreter" % (field, wanted), EXIT_USAGE)
            continue
        out = subprocess.run([path, "-c", "import sys; print('%d.%d' % sys.version_info[:2]); print(sys.version)"],
                             capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.split("\n")[0] == PYTHON_VERSION:
            return os.path.realpath(path), out.stdout.split("\n")[1].strip()
        if wanted:
            raise BuildError("%s %s: must be Python %s, it is %s" % (field, wanted, PYTHON_VERSION,
                                                                   out.stdout.split("\n")[0] or out.stderr.strip()),
                             EXIT_USAGE)
    raise BuildError("no Python %s found (tried %s); install it (apt-get install python3 python3-venv on Debian 12) "
                     "or name one with --python or PIXELIS_PYTHON" % (PYTHON_VERSION, ", ".join(candidates)), EXIT_NO_PYTHON)


def key(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\0")
    return h.hexdigest()[:12]


class FileLock:
    """An exclusive flock held for the with-block; it ends with the process however it ends."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.f = open(self.path, "a+")
        try:
            fcntl.flock(self.f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("waiting for another build holding %s" % self.path)
            fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


def run(cmd, env=None):
    """Run an installer step; its output goes to our stderr and, on failure, into the error."""
    p = subprocess.run([str(c) for c in cmd], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stderr.write(p.stdout)
    if p.returncode != 0:
        tail = "\n".join(p.stdout.strip().splitlines()[-15:])
        status = EXIT_OFFLINE if OFFLINE.search(p.stdout) else 1
        what = "the package index could not be reached" if status == EXIT_OFFLINE else "exit status %d" % p.returncode
        raise BuildError("%s: %s\n%s" % (" ".join(str(c) for c in cmd[:4]), what, tail), status)


def build_once(final, make):
    """Make final (a directory) once: under its lock, into a temporary sibling
    renamed into place. A temporary directory left by a killed build is removed."""
    if final.is_dir():
        return
    with FileLock(final.parent / (".%s.lock" % final.name.rsplit("-", 1)[0])):
        if final.is_dir():  # built while we waited
            return
        prefix = ".tmp-%s-" % final.name
        for stale in final.parent.glob(prefix + "*"):
            shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=final.parent))
        os.chmod(tmp, 0o755)  # mkdtemp makes it private
        try:
            make(tmp)
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def uv_env():
    env = dict(os.environ)
    env["UV_CACHE_DIR"] = str(cache_root() / "uv-cache")
    env["UV_PYTHON_DOWNLOADS"] = "never"  # only the interpreter we name
    env.setdefault("UV_LINK_MODE", "hardlink")
    return env


def installer(python):
    """uv at the version locks/uv.txt pins, installed by pip with its hash."""
    lock = (LOCKS / "uv.txt").read_bytes()
    final = cache_root() / "tools" / ("uv-" + key(FORMAT, lock, python))

    def make(tmp):
        log("installing the installer (locks/uv.txt) into %s" % final)
        run([python, "-m", "venv", tmp])
        env = dict(os.environ, PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
        run([tmp / "bin" / "python", "-m", "pip", "install", "--require-hashes", "-r", LOCKS / "uv.txt"], env=env)

    try:
        build_once(final, make)
    except FileNotFoundError as e:
        raise BuildError("%s (is python3-venv installed?)" % e)
    return final / "bin" / "uv"


def environment(stack, python, version):
    """The stack's environment, built when missing; returns its interpreter."""
    lock_path = LOCKS / (stack + ".txt")
    final = cache_root() / "envs" / ("%s-%s" % (stack, key(FORMAT, lock_path.read_bytes(), python, version)))
    if final.is_dir():
        return final / "bin" / "python"
    uv = installer(python)

    def make(tmp):
        log("building %s from %s (%s) into %s" % (stack, lock_path, python, final))
        # --relocatable: the scripts it writes (accelerate, torchrun) find their
        # interpreter relative to themselves, so the rename keeps them working.
        run([uv, "venv", "--quiet", "--relocatable", "--python", python, tmp], env=uv_env())
        run([uv, "pip", "install", "--python", tmp / "bin" / "python", "--require-hashes", "--no-deps",
             "--compile-bytecode", "-r", lock_path], env=uv_env())

    build_once(final, make)
    return final / "bin" / "python"


def compile_lock(stack, python):
    """Re-resolve locks/<stack>.in to locks/<stack>.txt: the newest versions that
    fit, for PYTHON_VERSION on PLATFORM, with every file's hash."""
    uv = installer(python)
    src = LOCKS / (stack + ".in")
    if not src.exists():
        raise BuildError("--compile %s: no %s" % (stack, src), EXIT_USAGE)
    run([uv, "pip", "compile", "--quiet", "--generate-hashes", "--python-version", PYTHON_VERSION,
         "--python-platform", PLATFORM, "--custom-compile-command", "python3 clients/python/envs/build.py --compile " + stack,
         "-o", LOCKS / (stack + ".txt"), src], env=uv_env())


def main(argv):
    global LOCKS
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--locks", type=Path, default=LOCKS)
    LOCKS = pre.parse_known_args(argv)[0].locks.resolve()
    ap = argparse.ArgumentParser(description="Build the pinned Python environments (clients/python/locks).")
    ap.add_argument("--locks", type=Path, help="the directory of lock files (default: clients/python/locks)")
    ap.add_argument("stacks", nargs="*", help="stacks to build: " + ", ".join(stacks()))
    ap.add_argument("--all", action="store_true", help="build every stack")
    ap.add_argument("--compile", action="store_true", help="re-resolve the stacks' .in files into their lock files")
    ap.add_argument("--python", help="the Python %s to build from (default: $PIXELIS_PYTHON, /usr/bin/python%s, python%s)"
                    % (PYTHON_VERSION, PYTHON_VERSION, PYTHON_VERSION))
    args = ap.parse_args(argv)
    names = stacks() if args.all else args.stacks
    if not names:
        ap.error("name a stack (%s) or --all" % ", ".join(stacks()))
    for name in names:
        if name not in stacks():
            ap.error("stack %r: no clients/python/locks/%s.in (stacks: %s)" % (name, name, ", ".join(stacks())))
        if not args.compile and not (LOCKS / (name + ".txt")).exists():
            ap.error("stack %r: no lock file clients/python/locks/%s.txt (make it with --compile %s)" % (name, name, name))
    try:
        python, version = interpreter(args.python)
        if args.compile:
            for name in names:
                compile_lock(name, python)
            return 0
        for name in names:
            print(environment(name, python, version), flush=True)
    except BuildError as e:
        log(str(e))
        return e.status
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
