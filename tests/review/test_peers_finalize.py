"""pi-autoresearch's finalize beside our sessions: the branches its finalize script makes and
ours, which git must be able to hold side by side.

pi-autoresearch 1.6.2's ``skills/autoresearch-finalize/finalize.sh`` names the branches it
makes ``autoresearch/${GOAL}/${group_number}-${slug}`` (finalize.sh:159 and :220) and
``autoresearch/${GOAL}/verify-tmp`` (finalize.sh:166 and :273), ``GOAL`` being the ``goal`` of
its groups.json, a short slug the agent picks (its SKILL.md:50); its create skill names a
session's branch ``autoresearch/<goal>-<date>`` (autoresearch-create/SKILL.md:35), so the goal
of a session is its branch name without the date. Git keeps a branch as a file under
``refs/heads/``: ``autoresearch/<goal>/...`` cannot be made while ``autoresearch/<goal>`` is a
branch. :func:`pi_finalize` makes the git calls the script makes, in its order."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from conftest import Tool, git, start_args, write


def pi_finalize(repo: Path, goal: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """What pi's finalize.sh does to git for one group (the keeps since the merge-base with
    main, SKILL.md:4), from the session branch checked out (its ``ORIG_BRANCH``, :93): the
    base checked out detached and the group's branch made there (:232-233), the group's files
    taken from its last commit (:237) and committed, then the branch ``verify-tmp`` made the
    same way and deleted (:275-276, :295-296), back on the branch it began on; a git call that
    fails ends it there, back on that branch (its rollback, :178-197). Returns the last git
    call: the failing one when one failed."""
    orig = git(repo, "branch", "--show-current")
    base = git(repo, "merge-base", "HEAD", "main")
    last = git(repo, "rev-parse", "HEAD")
    files = git(repo, "diff", "--name-only", base, last).split()
    steps = [["checkout", base, "--quiet", "--detach"],
             ["checkout", "-b", f"autoresearch/{goal}/01-value"],
             *[["checkout", last, "--", path] for path in files],
             ["commit", "-q", "-m", "Lower the value"],
             ["checkout", base, "--quiet", "--detach"],
             ["checkout", "-b", f"autoresearch/{goal}/verify-tmp"],
             ["checkout", orig, "--quiet"],
             ["branch", "-D", f"autoresearch/{goal}/verify-tmp"]]
    for step in steps:
        proc = subprocess.run(["git", *step], cwd=repo, capture_output=True, text=True)
        if proc.returncode != 0:
            subprocess.run(["git", "checkout", orig, "--quiet"], cwd=repo,
                           capture_output=True)
            return proc
    return proc


def start_as(session_id: str | None = None) -> list[str]:
    """:func:`conftest.start_args` with ``session_id`` (None: the default one)."""
    args = start_args()
    return [*args[:3], *(["--session-id", session_id] if session_id else []), *args[5:]]


def keep_one(repo: Path, ar: Tool, *args: str) -> str:
    """Start a session with ``args`` and keep run 2 (value.txt 90); returns start's stderr."""
    err = ar(repo, *args).err
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "lower the value")
    return err


def test_a_session_id_that_is_the_goals_slug_is_warned_of_at_start(repo: Path, ar: Tool,
                                                                   tmp_path: Path) -> None:
    """The night a user reported: the session id was the goal's slug, the agent gave it to
    pi's finalize.sh as its goal, and git refused every branch: ``cannot lock ref
    'refs/heads/lower-the-value/01-value': 'refs/heads/autoresearch/lower-the-value' exists``.
    The session branch is ours to keep; start says so, and the goal it proposes works."""
    err = keep_one(repo, ar, *start_as("lower-the-value"))
    assert err == (
        "warning: the session id lower-the-value is the slug of the goal, as pi-autoresearch "
        "names a session: its finalize.sh, given it as its goal, cannot make its branches "
        "autoresearch/lower-the-value/<NN>-<slug> beside this session's branch "
        "autoresearch/lower-the-value (git keeps a branch as a file, not a folder); give "
        "finalize.sh another goal (lower-the-value-pr), or leave --session-id out: the "
        "default id ends in the date\n")
    # pi's finalize skill reads .auto/prompt.md (autoresearch-finalize/SKILL.md:14).
    assert "- Finishing with pi-autoresearch's finalize.sh: give it a goal other than " \
        "`lower-the-value`\n  (`lower-the-value-pr`)" in (repo / ".auto" / "prompt.md").read_text()
    tip = git(repo, "rev-parse", "autoresearch/lower-the-value")
    failed = pi_finalize(repo, "lower-the-value", tmp_path)
    assert failed.returncode != 0
    assert "'refs/heads/autoresearch/lower-the-value' exists; cannot create " \
        "'refs/heads/autoresearch/lower-the-value/01-value'" in failed.stderr
    # pi rolled back (finalize.sh:178-197): the session is as it was.
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "autoresearch/lower-the-value"
    assert git(repo, "rev-parse", "HEAD") == tip
    assert ar(repo, "status", "--json").json()["segment"]["best"]["run"] == 2
    done = pi_finalize(repo, "lower-the-value-pr", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(repo, "show", "autoresearch/lower-the-value-pr/01-value:value.txt") == "90"
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "autoresearch/lower-the-value"
    # Both tools' branches side by side: ours still work, and pi's are no session of ours.
    found = ar(repo, "sessions", "--json").json()["sessions"]
    assert [s["id"] for s in found] == ["lower-the-value"]
    assert ar(repo, "finalize", "--samples", "0", "--json").json()["runs"] == [2]
    assert pi_finalize(repo, "lower-the-value-2", tmp_path).returncode == 0


def test_a_new_segment_brings_the_prompts_finalize_rule_up_to_date(repo: Path, ar: Tool) -> None:
    """The rule is there while the session id is the goal's slug: a new segment with another
    goal drops it, one whose goal makes the id its slug again adds it back, each at its place
    among the rules, the agent's notes kept."""
    rule = ("- Finishing with pi-autoresearch's finalize.sh: give it a goal other than "
            "`lower-the-value`\n")
    prompt = repo / ".auto" / "prompt.md"
    keep_one(repo, ar, *start_as("lower-the-value"))
    prompt.write_text(prompt.read_text() + "- a note of the agent's\n")
    first = prompt.read_text()
    assert rule in first
    ar(repo, "start", "--new-segment", "--goal", "a faster parser")
    dropped = prompt.read_text()
    assert rule not in dropped
    assert dropped.startswith("# Autoresearch session: a faster parser\n")
    assert dropped.endswith("- a note of the agent's\n")
    ar(repo, "start", "--new-segment", "--goal", "Lower the value!")
    assert prompt.read_text() == first.replace("session: lower the value",
                                               "session: Lower the value!")


def test_the_default_id_meets_pis_finalize_with_the_goal_pi_would_take(repo: Path, ar: Tool,
                                                                       tmp_path: Path) -> None:
    """A default id is the goal's slug and the date, as pi's create skill names its branches:
    the goal pi's finalize is given, the branch name without the date, makes its branches."""
    err = keep_one(repo, ar, *start_as())
    assert err == ""
    assert git(repo, "symbolic-ref", "--short", "HEAD").startswith(
        "autoresearch/lower-the-value-2")
    done = pi_finalize(repo, "lower-the-value", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(repo, "branch", "--list", "autoresearch/lower-the-value/*") == \
        "autoresearch/lower-the-value/01-value"


def test_a_session_whose_branch_would_be_a_folder_of_pis_branches_is_refused(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    """After pi's finalize made ``autoresearch/lower-the-value/01-value``, a session
    ``lower-the-value`` cannot have its branch: refused before anything is made, naming the
    branch in the way."""
    keep_one(repo, ar, *start_as())
    assert pi_finalize(repo, "lower-the-value", tmp_path).returncode == 0
    git(repo, "checkout", "-q", "main")
    shutil.move(repo / ".auto", tmp_path / "first-session")
    assert ar(repo, *start_as("lower-the-value"), expect=3).err == (
        "git autoresearch: branch autoresearch/lower-the-value/01-value exists (pi-autoresearch's "
        "finalize.sh makes such branches): git cannot make the session branch "
        "autoresearch/lower-the-value beside it; pick another --session-id\n")
    assert not (repo / ".auto").exists()
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "main"


def test_the_default_id_passes_over_a_folder_of_branches(repo: Path, ar: Tool) -> None:
    from git_autoresearch.lifecycle.start import default_session_id

    wanted = default_session_id("lower the value")
    git(repo, "branch", f"autoresearch/{wanted}/01-value")
    doc = ar(repo, *start_as(), "--json").json()
    assert doc["session_id"] == f"{wanted}-2"


def test_our_finalize_names_pis_branch_in_the_way(repo: Path, ar: Tool, tmp_path: Path) -> None:
    """pi's finalize.sh given the goal ``s1-final`` (the name of our final branch without
    ``autoresearch/``) made ``autoresearch/s1-final/01-value``: our finalize cannot make
    ``autoresearch/s1-final`` beside it and says so, before anything is made."""
    keep_one(repo, ar, *start_args())
    assert pi_finalize(repo, "s1-final", tmp_path).returncode == 0
    assert ar(repo, "finalize", "--samples", "0", expect=3).err == (
        "git autoresearch: branch autoresearch/s1-final/01-value exists (pi-autoresearch's "
        "finalize.sh makes such branches): git cannot make the branch autoresearch/s1-final "
        "beside it; rename or delete it first\n")
    assert not (repo / ".auto" / "final.md").exists()
