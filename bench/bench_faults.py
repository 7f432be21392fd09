"""A hostile run: trials that kill, signal, starve and confuse the tool in what real
repositories hold, each checked against the guarantees afterwards.

    python bench/bench_faults.py [--trials 1000] [--seed 1] [--jobs 2] [--kinds a,b,...]
                                 [--keep-failures DIR]

Each trial copies a prepared session (a repository with a started session, a user's untracked
notes, an ignored build folder, files inside and outside the scope), makes an experiment,
carries out one command (``run``, ``keep``, ``discard`` or ``measure``) under one hostile
kind, clears what the kind's refusal names (the action its message gives), runs ``resume`` and
``doctor --fix``, then measures once more (the probe). The kinds:

- ``die-at``: SIGKILL (or SIGTERM) at a named step of a keep, revert, set-aside or record
  (``GIT_AUTORESEARCH_DIE_AT``); ``signal``: SIGKILL, SIGTERM, SIGINT or SIGHUP at a random
  moment, to the process or its process group; ``concurrent``: four callers at once;
- ``storage-full`` and ``storage-ro``: the repository on a small tmpfs, filled up or
  remounted read-only before the command (root only; passed over otherwise);
- ``daemon``: a benchmark that leaves a process running; ``odd-trailer``: a hand commit with
  a Result trailer and an odd run number; ``lost-line``: a run line removed from the ledger;
  ``wrong-type``: a run field of another type; ``lock-folder``: a folder where the session
  lock goes; ``nul-config``: a NUL in the configured command; ``git-env``: GIT_DIR naming
  another repository; ``symlink-auto``: the session folder moved into the scope and linked;
  ``nested-repo``: the experiment creates a git repository; ``replace``: a keep replaced with
  ``git replace``, then finalize; ``hook-rewrite``: a pre-commit hook that rewrites and
  stages; ``filter``: a required clean filter that fails; ``user-config``: configuration
  that changes what git prints; ``partial-clone``: a sparse partial clone whose promisor
  remote is away; ``odd-tree``: symlinks for folders, many files, odd names; ``user-git``: the
  user's own git commands between runs.

The invariants, checked after every trial: no command printed an internal error or a
traceback, and each exited with a documented code; the user's untracked and ignored files are
as they were; every content the experiment wrote is in the work tree or reachable from a ref;
no git lock file is left; every ledger line is whole JSON; every ``Result:`` commit of the
session holds the value its trailer records (no metric attached to content that was not
measured); after the clearing action, ``resume`` and ``doctor --fix``, the probe run records
(no wedge), and ``doctor`` then finds nothing. Prints the trials and the broken invariants by
kind; exits 1 when any invariant broke.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

KINDS = ("die-at", "signal", "concurrent", "storage-full", "storage-ro", "daemon",
         "odd-trailer", "lost-line", "wrong-type", "lock-folder", "nul-config", "git-env",
         "symlink-auto", "nested-repo", "replace", "hook-rewrite", "filter", "user-config",
         "partial-clone", "odd-tree", "user-git")
STEPS = ("keep:saving-index", "keep:staging", "keep:before-commit", "keep:after-commit",
         "keep:after-attempt", "revert:before-attempt", "revert:after-attempt",
         "revert:after-remove", "set-aside:after-attempt", "set-aside:after-remove",
         "record:before-ledger", "record:after-ledger", "record:before-after-hooks")
# Exit codes a command may end with: success, usage, refused, and the signals it handles
# (128 + SIGHUP, SIGINT, SIGTERM); a negative code is a SIGKILL this run sent.
DOCUMENTED = {0, 2, 3, 129, 130, 143}
# A signal sent this soon after the process started may arrive before the interpreter has
# imported the package (its own start takes about 15 ms here).
STARTUP_SECONDS = 0.03
TOOL = [sys.executable, "-m", "git_autoresearch"]
START = ["start", "--goal", "lower the value", "--session-id", "s1", "--command",
         "sh bench.sh", "--metric-name", "score", "--metric-pattern", r"score: (\S+)",
         "--direction", "lower", "--scope", "src", "--scope", "value.txt",
         "--decision", "strict"]
BENCH = "#!/bin/sh\nsleep 0.05\necho \"score: $(cat value.txt)\"\n"
NOTES = b"the user's own notes, never tracked\n"
CACHE = b"\x00ignored build output\xff\n"
HOSTILE_CONFIG = (("trailer.separators", "="), ("log.showSignature", "true"),
                  ("color.ui", "always"), ("core.quotePath", "true"),
                  ("i18n.logOutputEncoding", "ISO-8859-1"), ("diff.noprefix", "true"),
                  ("format.pretty", "fuller"), ("status.showUntrackedFiles", "no"),
                  ("core.abbrev", "12"), ("diff.external", "false"))


class Trial:
    """One trial's folder, environment and what it saw."""

    def __init__(self, root: Path, kind: str, rng: random.Random) -> None:
        self.root, self.kind, self.rng = root, kind, rng
        self.top = root / "project"
        self.env = hermetic_env(root)
        self.said: list[tuple[str, int, str]] = []  # (command, exit code, stderr)
        self.written: list[bytes] = []  # every content the experiment wrote
        self.broken: list[str] = []
        self.pids = root / "daemons"
        self.startup = False  # a signal arrived before the interpreter ran our code

    def tool(self, *args: str, env: dict[str, str] | None = None, timeout: float = 60,
             cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        res = subprocess.run([*TOOL, *args], cwd=cwd or self.top, env={**self.env, **(env or {})},
                             capture_output=True, text=True, timeout=timeout)
        self.said.append((" ".join(args[:2]), res.returncode, res.stderr))
        return res

    def git(self, *args: str, check: bool = True, cwd: Path | None = None) -> str:
        res = subprocess.run(["git", *args], cwd=cwd or self.top, env=self.env,
                             capture_output=True)
        if check and res.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)}: {res.stderr.decode()}")
        return res.stdout.decode("utf-8", "surrogateescape").strip()

    def write(self, rel: str, data: bytes) -> None:
        path = self.top / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.is_file():
            path.unlink()
        path.write_bytes(data)
        self.written.append(data)


def hermetic_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "AUTORESEARCH_"))}
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    env.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL":
                "a@example.invalid", "GIT_COMMITTER_NAME": "C", "GIT_COMMITTER_EMAIL":
                "c@example.invalid", "GIT_EDITOR": "false", "GIT_AUTORESEARCH_LOCK_WAIT": "5",
                "LC_ALL": "C.UTF-8", "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    return env


def make_template(folder: Path) -> Path:
    """A project with a started session, as every trial begins: returns its top."""
    top = folder / "project"
    top.mkdir(parents=True)
    env = hermetic_env(folder)
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=top, env=env, check=True, capture_output=True)
    git("init", "-q", "-b", "main")
    (top / "value.txt").write_text("100\n")
    (top / "bench.sh").write_text(BENCH)
    (top / "src" / "data").mkdir(parents=True)
    (top / "src" / "lib.py").write_text("def f():\n    return 1\n")
    for n in range(5):
        (top / "src" / "data" / f"d{n}.txt").write_text(f"{n}\n")
    (top / "README.md").write_text("project\n")
    (top / ".gitignore").write_text("build/\n")
    git("add", "-A")
    git("commit", "-q", "-m", "initial")
    (top / "notes.txt").write_bytes(NOTES)
    (top / "build").mkdir()
    (top / "build" / "cache.bin").write_bytes(CACHE)
    subprocess.run([*TOOL, *START, "--force"], cwd=top, env=env, check=True,
                   capture_output=True)
    return top


def experiment(t: Trial) -> str:
    """An experiment in the work tree; returns the command to carry out."""
    value = t.rng.randint(50, 150)
    t.write("value.txt", f"{value}\n".encode())
    t.write("src/lib.py", f"def f():\n    return {t.rng.random()}\n".encode())
    if t.rng.random() < 0.5:
        t.write(f"src/new_{t.rng.randint(0, 9)}.py", os.urandom(8).hex().encode())
    if t.rng.random() < 0.3:
        (t.top / "src" / "data" / "d0.txt").unlink(missing_ok=True)
    if t.rng.random() < 0.3:  # outside the scope: set aside, never lost
        t.write("README.md", f"edited {t.rng.random()}\n".encode())
    return t.rng.choice(["run", "run", "keep", "discard", "measure"])


def carry_out(t: Trial, command: str, env: dict[str, str] | None = None
              ) -> subprocess.CompletedProcess[str]:
    args = {"run": ["run", "-d", "trial"], "measure": ["measure"],
            "keep": ["keep", "-d", "trial", "--metric", str(t.rng.randint(40, 160))],
            "discard": ["discard", "-d", "trial"]}[command]
    return t.tool(*args, env=env)


# --- the kinds: each sets up, carries out, and clears what its refusal names -------------------

def kind_die_at(t: Trial, command: str) -> None:
    step = t.rng.choice(STEPS) + ("@TERM" if t.rng.random() < 0.3 else "")
    carry_out(t, command, {"GIT_AUTORESEARCH_DIE_AT": step})


def kind_signal(t: Trial, command: str) -> None:
    sig = t.rng.choice([signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
    group = t.rng.random() < 0.5
    args = {"run": ["run", "-d", "trial"], "measure": ["measure"],
            "keep": ["keep", "-d", "trial", "--metric", "70"],
            "discard": ["discard", "-d", "trial"]}[command]
    proc = subprocess.Popen([*TOOL, *args], cwd=t.top, env=t.env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    delay = t.rng.uniform(0, 0.6)
    time.sleep(delay)
    try:
        (os.killpg if group else os.kill)(proc.pid, sig)
    except ProcessLookupError:
        pass
    _, err = proc.communicate(timeout=60)
    code = proc.returncode
    if delay < STARTUP_SECONDS and sig != signal.SIGKILL and (code == -sig or code == 1):
        # Before the interpreter has run any code of ours, Python's own handling applies (a
        # SIGINT's KeyboardInterrupt, a SIGTERM's death): counted, not held against the tool.
        t.startup = True
        return
    t.said.append((" ".join(args[:2]) + f" ({sig.name})", 0 if code == -signal.SIGKILL
                   else code, err))


def kind_concurrent(t: Trial, command: str) -> None:
    procs = [subprocess.Popen([*TOOL, *args], cwd=t.top, env=t.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for args in (["run", "-d", "a"], ["discard", "-d", "b"], ["status"],
                          ["keep", "-d", "c", "--metric", "60"])]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        t.said.append(("concurrent", proc.returncode, err))


def kind_storage(t: Trial, command: str, *, read_only: bool) -> None:
    mount = t.root / "mnt"
    fill = mount / "filler"
    if read_only:
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        carry_out(t, command)
        subprocess.run(["mount", "-o", "remount,rw", str(mount)], check=True)
        return
    stat = os.statvfs(mount)
    room = stat.f_bavail * stat.f_frsize - t.rng.randint(0, 64 * 1024)
    with open(fill, "wb") as f:
        try:
            f.write(b"\0" * max(room, 0))
        except OSError:
            pass
    carry_out(t, command)
    fill.unlink()


def kind_daemon(t: Trial, command: str) -> None:
    t.write("bench.sh", (f"#!/bin/sh\nsetsid sh -c 'echo $$ >> {t.pids}; exec sleep 120' "
                         "> /dev/null 2>&1 &\n" + BENCH.split("\n", 1)[1]).encode())
    t.git("add", "bench.sh")
    t.git("commit", "-q", "-m", "a benchmark that leaves a daemon")
    carry_out(t, command)
    carry_out(t, "run")


def kind_odd_trailer(t: Trial, command: str) -> None:
    number = t.rng.choice(["²", "1²", "٣", "99999999999999999999", "-1", "0x10", "2 3"])
    t.git("add", "src/lib.py")
    t.git("commit", "-q", "-m", f"by hand\n\nResult: {{\"status\":\"keep\",\"score\":77}}\n"
          f"Autoresearch-Run: {number}\nAutoresearch-Session: s1\n")
    t.git("update-ref", "-d", "refs/autoresearch/s1/none", check=False)
    carry_out(t, command)


def kind_lost_line(t: Trial, command: str) -> None:
    carry_out(t, command)
    ledger = t.top / ".auto" / "log.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    runs = [i for i, line in enumerate(lines) if b'"run"' in line and b'"type"' not in line]
    if runs:
        del lines[t.rng.choice(runs)]
        ledger.write_bytes(b"".join(lines))
    t.tool("run", "-d", "after a lost line")  # refused, or recorded honestly


def kind_wrong_type(t: Trial, command: str) -> None:
    carry_out(t, command)
    ledger = t.top / ".auto" / "log.jsonl"
    lines = ledger.read_text().splitlines()
    runs = [i for i, line in enumerate(lines) if '"run"' in line and '"type"' not in line]
    i = t.rng.choice(runs)
    record = json.loads(lines[i])
    field = t.rng.choice(["metric", "samples", "decision", "timestamp", "segment", "metrics"])
    record[field] = t.rng.choice(["12", [1], True, {"x": 1}, None])
    lines[i] = json.dumps(record)
    ledger.write_text("\n".join(lines) + "\n")
    t.tool("status", "--json")


def kind_lock_folder(t: Trial, command: str) -> None:
    lock = t.top / ".git" / "autoresearch" / "lock"
    lock.unlink(missing_ok=True)
    lock.mkdir()
    carry_out(t, command)
    t.tool("doctor")
    lock.rmdir()  # what the refusal says to do


def kind_nul_config(t: Trial, command: str) -> None:
    config = t.top / ".auto" / "config.toml"
    text = config.read_text()
    config.write_text(text.replace('command = "sh bench.sh"', 'command = "sh bench.sh\\u0000"'))
    carry_out(t, command)
    t.tool("status")
    config.write_text(text)  # what the refusal asks: the configuration put back


def kind_git_env(t: Trial, command: str) -> None:
    other = t.root / "other"
    other.mkdir()
    t.git("init", "-q", cwd=other)
    (other / "f").write_text("x\n")
    t.git("add", "f", cwd=other)
    t.git("commit", "-q", "-m", "other", cwd=other)
    variable = t.rng.choice(["GIT_DIR", "GIT_WORK_TREE"])
    carry_out(t, command, {variable: str(other / ".git") if variable == "GIT_DIR"
                           else str(other)})
    if t.git("status", "--porcelain", cwd=other):
        t.broken.append("git-env: the other repository was changed")


def kind_symlink_auto(t: Trial, command: str) -> None:
    shutil.move(str(t.top / ".auto"), str(t.top / "src" / "auto"))
    os.symlink("src/auto", t.top / ".auto")
    carry_out(t, command)
    t.tool("doctor")
    (t.top / ".auto").unlink()  # what the refusal says: rm .auto && mv src/auto .auto
    shutil.move(str(t.top / "src" / "auto"), str(t.top / ".auto"))


def kind_nested_repo(t: Trial, command: str) -> None:
    sub = t.top / "src" / "sub"
    sub.mkdir(parents=True)
    t.git("init", "-q", cwd=sub)
    t.write("src/sub/inside.txt", os.urandom(6).hex().encode())
    carry_out(t, command)
    if not (sub / ".git").is_dir():
        t.broken.append("nested-repo: the nested repository was removed")


def kind_replace(t: Trial, command: str) -> None:
    t.tool("keep", "-d", "a gain", "--metric", "60")
    keep = t.git("rev-parse", "autoresearch/s1")
    t.git("replace", "-f", keep, "main")
    carry_out(t, command)
    t.tool("finalize", "--samples", "0")


def kind_hook_rewrite(t: Trial, command: str) -> None:
    hook = t.top / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\nv=$(cat value.txt); echo $((v + 1)) > value.txt\n"
                    "git add value.txt\n")
    hook.chmod(0o755)
    carry_out(t, command)
    hook.unlink()  # what the refusal says: the rewrite is to be measured, without the hook
    # The measured value.txt the hook rewrote is the hook's doing, not a loss of the tool's.
    t.written = [data for data in t.written if not data.rstrip(b"\n").isdigit()]


def kind_filter(t: Trial, command: str) -> None:
    (t.top / ".gitattributes").write_text("*.dat filter=broken\n")
    t.git("config", "filter.broken.clean", "false")
    t.git("config", "filter.broken.required", "true")
    t.write("src/table.dat", b"1\n")
    carry_out(t, command)
    t.git("config", "--unset", "filter.broken.required")  # the filter fixed
    t.git("config", "filter.broken.clean", "cat")


def kind_user_config(t: Trial, command: str) -> None:
    for key, value in HOSTILE_CONFIG:
        t.git("config", key, value)
    carry_out(t, command)
    t.tool("show", "2")


def kind_odd_tree(t: Trial, command: str) -> None:
    choice = t.rng.randrange(4)
    if choice == 0:  # a folder replaced with a symbolic link
        shutil.rmtree(t.top / "src" / "data")
        os.symlink("../README.md", t.top / "src" / "data")
    elif choice == 1:
        for n in range(600):
            t.write(f"src/many/f{n}.txt", f"{n}\n".encode())
    elif choice == 2:
        for name in ("new\nline.txt", "-dash.txt", "sp ace é.txt", "*", ":(glob)x", "\\back"):
            t.write(f"src/{name}", name.encode())
    else:
        (t.top / "src" / "lib.py").chmod(0o755)
    carry_out(t, command)


def kind_user_git(t: Trial, command: str) -> None:
    choice = t.rng.randrange(4)
    if choice == 0:
        t.git("add", "-A")  # notes.txt staged by the user
    elif choice == 1:
        t.git("commit", "-q", "-am", "by hand, around the loop")
    elif choice == 2:
        t.git("stash", "-q")
        t.git("stash", "pop", "-q")
    else:
        t.git("checkout", "-q", "-b", "elsewhere")
    carry_out(t, command)
    if choice == 3:
        t.git("checkout", "-q", "autoresearch/s1", check=False)  # what the refusal says
    if choice == 0:
        t.git("reset", "-q", "--", "notes.txt", check=False)


def kind_partial_clone(t: Trial, command: str) -> None:
    # The experiment wrote src/lib.py, outside the sparse cone: its HEAD version is not here.
    carry_out(t, command)
    shutil.move(str(t.root / "away"), str(t.root / "upstream"))  # the remote reachable again


def setup_partial_clone(t: Trial, template: Path) -> None:
    """The trial's project is a sparse partial clone of the template, its remote then away."""
    upstream = t.root / "upstream"
    shutil.copytree(template, upstream, symlinks=True)
    t.git("config", "uploadpack.allowFilter", "true", cwd=upstream)
    t.git("checkout", "-q", "main", cwd=upstream)  # the project, without the template's session
    t.git("branch", "-q", "-D", "autoresearch/s1", cwd=upstream)
    for ref in t.git("for-each-ref", "--format=%(refname)", "refs/autoresearch/",
                     cwd=upstream).split():
        t.git("update-ref", "-d", ref, cwd=upstream)
    t.git("clone", "-q", "--filter=blob:none", "--sparse", f"file://{upstream}", str(t.top),
          cwd=t.root)
    (t.top / "notes.txt").write_bytes(NOTES)
    (t.top / "build").mkdir()
    (t.top / "build" / "cache.bin").write_bytes(CACHE)
    t.tool(*START, "--allow-missing", "--force")
    shutil.move(str(upstream), str(t.root / "away"))


KIND_ACTIONS = {
    "die-at": kind_die_at, "signal": kind_signal, "concurrent": kind_concurrent,
    "storage-full": lambda t, c: kind_storage(t, c, read_only=False),
    "storage-ro": lambda t, c: kind_storage(t, c, read_only=True),
    "daemon": kind_daemon, "odd-trailer": kind_odd_trailer, "lost-line": kind_lost_line,
    "wrong-type": kind_wrong_type, "lock-folder": kind_lock_folder,
    "nul-config": kind_nul_config, "git-env": kind_git_env, "symlink-auto": kind_symlink_auto,
    "nested-repo": kind_nested_repo, "replace": kind_replace, "hook-rewrite": kind_hook_rewrite,
    "filter": kind_filter, "user-config": kind_user_config, "odd-tree": kind_odd_tree,
    "user-git": kind_user_git, "partial-clone": kind_partial_clone}


# --- the invariants ---------------------------------------------------------------------------

def check(t: Trial) -> None:
    """Add to ``t.broken`` every guarantee the trial broke."""
    for what, code, err in t.said:
        if "internal error" in err or "Traceback" in err:
            t.broken.append(f"internal error in {what}: {err.strip().splitlines()[-1][:200]}")
        elif code not in DOCUMENTED and code >= 0:
            t.broken.append(f"{what} exited {code}: {err.strip()[-200:]}")
    if (t.top / "notes.txt").read_bytes() != NOTES:
        t.broken.append("the user's untracked notes.txt changed")
    if (t.top / "build" / "cache.bin").read_bytes() != CACHE:
        t.broken.append("the user's ignored build/cache.bin changed")
    _check_written(t)
    locks = [str(p.relative_to(t.top)) for p in (t.top / ".git").rglob("*.lock")]
    if locks:
        t.broken.append(f"git lock files left: {locks[:3]}")
    for n, line in enumerate((t.top / ".auto" / "log.jsonl").read_bytes().splitlines(), 1):
        try:
            json.loads(line)
        except ValueError:
            t.broken.append(f"ledger line {n} is torn: {line[:80]!r}")
    _check_results(t)


def _check_written(t: Trial) -> None:
    """Every content the experiment wrote is in the work tree or reachable from a ref."""
    on_disk = {_blob_id(t, Path(path).read_bytes()) for path in _blob_files(t)}
    listed = subprocess.run(["git", "rev-list", "--objects", "--all", "--missing=allow-any"],
                            cwd=t.top, env={**t.env, "GIT_NO_LAZY_FETCH": "1"},
                            capture_output=True, text=True).stdout
    reachable = {line.split()[0] for line in listed.splitlines() if line}
    for data in t.written:
        if _blob_id(t, data) not in on_disk | reachable:
            t.broken.append(f"content the experiment wrote is lost: {data[:40]!r}")


def _blob_id(t: Trial, data: bytes) -> str:
    """The id git gives ``data`` as a blob (``sha1("blob <size>\\0" + data)``)."""
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _blob_files(t: Trial) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(t.top):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                found.append(path)
    return found


def _check_results(t: Trial) -> None:
    """Every keep the tool measured (not a ``keep --metric``, whose figure is the caller's)
    committed the content it measured: the value its commit holds is the metric recorded."""
    for line in (t.top / ".auto" / "log.jsonl").read_bytes().splitlines():
        record = json.loads(line)
        if not isinstance(record, dict) or record.get("status") != "keep" \
                or record.get("committed") is not True or record.get("duration_s") is None:
            continue
        held = t.git("show", f"{record['commit']}:value.txt", check=False).strip()
        if held and held != str(record.get("metric")):
            t.broken.append(f"run {record['run']} records {record.get('metric')} but its "
                            f"commit {record['commit']} holds {held}")


# --- a trial --------------------------------------------------------------------------------

def run_trial(kind: str, seed: int, template: Path, scratch: Path,
              keep_failures: Path | None) -> tuple[str, list[str], bool]:
    rng = random.Random(seed)
    root = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=scratch))
    t = Trial(root, kind, rng)
    mounted = kind.startswith("storage")
    try:
        if mounted:
            (root / "mnt").mkdir()
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(root / "mnt")],
                           check=True)
            t.top = root / "mnt" / "project"
        if kind == "partial-clone":
            setup_partial_clone(t, template)
        else:
            shutil.copytree(template, t.top, symlinks=True)
        command = experiment(t)
        KIND_ACTIONS[kind](t, command)
        recover_and_probe(t)
        check(t)
    except Exception as exc:  # the harness's own failure is a broken trial, said whole
        t.broken.append(f"harness: {type(exc).__name__}: {exc}"[:300])
    finally:
        _end_daemons(t)
        if mounted:
            subprocess.run(["umount", "-l", str(root / "mnt")], check=False)
        if t.broken and keep_failures is not None:
            shutil.copytree(root, keep_failures / root.name, symlinks=True,
                            ignore_dangling_symlinks=True, dirs_exist_ok=True)
            (keep_failures / root.name / "said.json").write_text(json.dumps(t.said, indent=1))
        shutil.rmtree(root, ignore_errors=True)
    return kind, t.broken, t.startup


def recover_and_probe(t: Trial) -> None:
    """resume, doctor --fix, then one more run, which must record; doctor then finds nothing."""
    t.tool("resume")
    t.tool("doctor", "--fix")
    _check_written(t)  # the experiment's, before the probe writes over value.txt
    t.written = []
    t.write("value.txt", f"{t.rng.randint(50, 150)}\n".encode())
    probe = t.tool("run", "-d", "probe", "--json")
    if probe.returncode != 0:
        t.broken.append(f"wedged: the probe run exited {probe.returncode}: "
                        f"{probe.stderr.strip()[-300:]}")
        return
    _end_daemons(t)  # what doctor names for a slot a daemon holds: kill it
    doctor = t.tool("doctor", "--json")
    if doctor.returncode != 0:
        found = [f["problem"][:160] for f in json.loads(doctor.stdout or "{}").get("findings", [])]
        t.broken.append(f"doctor after the probe: {found[:2]}")


def _end_daemons(t: Trial) -> None:
    for pid in t.pids.read_text().split() if t.pids.exists() else []:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def _worker(args: tuple[str, int, str, str, str | None]) -> tuple[str, list[str], bool]:
    kind, seed, template, scratch, keep = args
    return run_trial(kind, seed, Path(template), Path(scratch), Path(keep) if keep else None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--keep-failures", type=Path)
    args = parser.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    if os.geteuid() != 0:  # mount needs root
        kinds = [k for k in kinds if not k.startswith("storage")]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        parser.error(f"unknown kinds: {', '.join(unknown)}")
    scratch = Path(tempfile.mkdtemp(prefix="hostile-"))
    template = make_template(scratch / "template")
    rng = random.Random(args.seed)
    plan = [(kinds[i % len(kinds)], rng.randrange(2**32), str(template), str(scratch),
             str(args.keep_failures) if args.keep_failures else None)
            for i in range(args.trials)]
    started = time.monotonic()
    trials: Counter[str] = Counter()
    startup = 0
    broken: dict[str, list[str]] = {}
    with multiprocessing.Pool(args.jobs) as pool:
        for kind, found, early in pool.imap_unordered(_worker, plan):
            trials[kind] += 1
            startup += early
            if found:
                broken.setdefault(kind, []).append("; ".join(found))
    shutil.rmtree(scratch, ignore_errors=True)
    print(f"{sum(trials.values())} trials in {time.monotonic() - started:.0f} s "
          f"(seed {args.seed}, {args.jobs} jobs)")
    print(f"{'kind':<15}{'trials':>8}{'broken':>8}")
    for kind in kinds:
        print(f"{kind:<15}{trials[kind]:>8}{len(broken.get(kind, [])):>8}")
    print(f"signals that arrived within {STARTUP_SECONDS * 1000:.0f} ms of the start, before "
          f"the interpreter ran our code: {startup}")
    for kind, found in broken.items():
        for line in found[:5]:
            print(f"  {kind}: {line}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
