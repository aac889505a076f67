"""Finding and running the rnnaudit command-line binary (the Go program `audit`)."""

import os
import shutil
import subprocess
import sys
import threading

__all__ = ["AuditError", "BinaryNotFoundError", "find_binary", "run"]

# The environment variable that names the binary when it is not on PATH.
ENV_BINARY = "RNNAUDIT_BIN"


class AuditError(RuntimeError):
    """The audit binary failed.

    str(err) is the binary's own error text (its standard error without
    progress lines), which names the file, line, column, node or flag at
    fault. The attributes keep the details:

    returncode  the exit status: 2 for bad usage (a flag), 130 when
                interrupted, 1 for any other error (bad data, a model that
                does not load, ...)
    stderr      the whole standard error
    command     the command line that was run, as a list
    """

    def __init__(self, message, returncode=None, stderr="", command=None):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr
        self.command = list(command or [])


class BinaryNotFoundError(AuditError):
    """No rnnaudit binary was found (or the one named is not rnnaudit)."""


_INSTALL_HINT = (
    "build it in a clone of the rnnaudit repository with `go install ./cmd/audit` (which puts it "
    "in $(go env GOPATH)/bin) or `go build -o bin/audit ./cmd/audit`, then put it on PATH, set "
    "RNNAUDIT_BIN to its path, or pass binary=PATH"
)

_checked = {}


def _go_bin_dirs():
    dirs = []
    if os.environ.get("GOBIN"):
        dirs.append(os.environ["GOBIN"])
    for p in os.environ.get("GOPATH", "").split(os.pathsep):
        if p:
            dirs.append(os.path.join(p, "bin"))
    dirs.append(os.path.join(os.path.expanduser("~"), "go", "bin"))
    return dirs


def _verify(path, how):
    """Checks that path runs and is rnnaudit (its --version starts with
    "rnnaudit"); the answer is cached per path and modification time."""
    try:
        key = (path, os.stat(path).st_mtime_ns)
    except OSError as e:
        raise BinaryNotFoundError("rnnaudit binary %s (%s): %s; %s" % (path, how, e.strerror, _INSTALL_HINT)) from None
    if key in _checked:
        return path
    try:
        out = subprocess.run([path, "--version"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=60, check=False)
    except OSError as e:
        raise BinaryNotFoundError("rnnaudit binary %s (%s) does not run: %s; %s"
                                  % (path, how, e.strerror or e, _INSTALL_HINT)) from None
    text = out.stdout.decode("utf-8", "replace").strip()
    if out.returncode != 0 or not text.startswith("rnnaudit"):
        raise BinaryNotFoundError(
            "%s (%s) is not the rnnaudit binary: `%s --version` printed %r (exit status %d); %s"
            % (path, how, path, text[:200], out.returncode, _INSTALL_HINT))
    _checked[key] = True
    return path


def find_binary(binary=None):
    """Returns the path of the rnnaudit binary.

    In order: binary if given (a path, or a command name looked up on PATH),
    the RNNAUDIT_BIN environment variable, `audit` on PATH, then `audit` in
    $GOBIN, $GOPATH/bin and ~/go/bin (where `go install ./cmd/audit` puts it).
    The binary found must answer `--version` with "rnnaudit ...": other
    programs called audit are refused. Raises BinaryNotFoundError with what
    to do when none is found.
    """
    if binary is not None:
        binary = os.fspath(binary)
        path = binary if os.sep in binary else shutil.which(binary)
        if path is None:
            raise BinaryNotFoundError("binary=%r: no such command on PATH; %s" % (binary, _INSTALL_HINT))
        return _verify(os.path.abspath(path), "binary=")
    env = os.environ.get(ENV_BINARY)
    if env:
        return _verify(os.path.abspath(env), "from " + ENV_BINARY)
    path = shutil.which("audit")
    if path is not None:
        return _verify(os.path.abspath(path), "`audit` on PATH")
    for d in _go_bin_dirs():
        p = os.path.join(d, "audit")
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return _verify(p, "in " + d)
    raise BinaryNotFoundError("no rnnaudit binary: `audit` is not on PATH and %s is not set; %s"
                              % (ENV_BINARY, _INSTALL_HINT))


def _error_text(stderr):
    """The binary's error out of its standard error: from the first line
    that starts with "audit:" (progress lines come before it)."""
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("audit:"):
            return "\n".join(lines[i:]).strip()
    return stderr.strip()


def _run_streaming(cmd, timeout, cwd):
    """Runs cmd, copying its standard error (the progress lines) to
    sys.stderr as they come; returns (returncode, stdout, stderr) as bytes,
    returncode None after a timeout (the process is then killed)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
    out, err = [], []

    def pump_out():
        out.append(proc.stdout.read())

    def pump_err():
        for raw in iter(proc.stderr.readline, b""):
            err.append(raw)
            sys.stderr.write(raw.decode("utf-8", "replace"))
            sys.stderr.flush()

    threads = [threading.Thread(target=pump_out, daemon=True), threading.Thread(target=pump_err, daemon=True)]
    for t in threads:
        t.start()
    try:
        code = proc.wait(timeout=timeout)
    except BaseException:  # a timeout, or Ctrl-C in the caller: stop the binary too
        proc.kill()
        proc.wait()
        for t in threads:
            t.join()
        if sys.exc_info()[0] is subprocess.TimeoutExpired:
            return None, b"".join(out), b"".join(err)
        raise
    for t in threads:
        t.join()
    return code, b"".join(out), b"".join(err)


def run(args, binary=None, timeout=None, cwd=None, progress=False):
    """Runs the binary with args (a list of strings) and returns its
    standard output as text. Raises AuditError carrying the binary's error
    message when it exits with a non-zero status or runs past timeout
    seconds. progress=True copies the binary's progress lines (its
    standard error) to sys.stderr while it runs."""
    path = find_binary(binary)
    cmd = [path] + [os.fspath(a) for a in args]
    if progress:
        code, out, err = _run_streaming(cmd, timeout, cwd)
    else:
        try:
            done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                                  cwd=cwd, check=False)
            code, out, err = done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired as e:
            code, out, err = None, e.stdout or b"", e.stderr or b""
    stdout = out.decode("utf-8", "replace")
    stderr = err.decode("utf-8", "replace")
    if code is None:
        raise AuditError("%s did not finish within %g s (timeout=); it was stopped"
                         % (os.path.basename(path), timeout), None, stderr, cmd)
    if code != 0:
        msg = _error_text(stderr) or ("%s exited with status %d and printed no error"
                                      % (os.path.basename(path), code))
        raise AuditError(msg, code, stderr, cmd)
    return stdout
