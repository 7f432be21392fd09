"""The sequential decision rule through the commands (``decision = "sequential"``): samples one
at a time against the incumbent's pool, the ``decision`` object of the run record, the noise
probe, the incumbent's re-measure after a revert, and a forced keep. The statistics themselves
are tested in test_decision.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import Tool, commit_all, git, ledger_lines, runs, start_args, write

# A benchmark with noise: the value in value.txt times a factor that cycles with a counter kept
# in an ignored file (about +-2%, never the same twice in a row).
NOISY = """#!/bin/sh
n=$(cat .n 2>/dev/null || echo 0); n=$((n+1)); echo $n > .n
awk -v v="$(cat value.txt)" -v n="$n" 'BEGIN {
  split("1.00 1.02 0.98 1.01 0.99 1.015 0.985", f, " ")
  printf "score: %.4f\\n", v * f[(n % 7) + 1] }'
"""


def sequential(repo: Path, ar: Tool, *extra: str) -> None:
    ar(repo, *start_args(*extra))  # the default rule of a new session


def noisy(repo: Path, ar: Tool, *extra: str) -> None:
    """A sequential session on the NOISY benchmark (its counter file ignored)."""
    write(repo / "bench.sh", NOISY, 0o755)
    write(repo / ".gitignore", ".n\n")
    commit_all(repo)
    sequential(repo, ar, *extra)


def test_a_metric_without_spread_is_decided_after_one_sample(repo: Path, ar: Tool) -> None:
    sequential(repo, ar)
    assert runs(repo)[0]["samples"] == [100] * 5  # the baseline's pool: baseline_samples
    write(repo / "value.txt", "90\n")
    kept = ar(repo, "run", "-d", "better", "--json").json()
    assert (kept["status"], kept["samples"]) == ("keep", [90])
    assert kept["decision"]["verdict"] == "better"
    assert kept["decision"]["effect"] == -10 and kept["decision"]["relative"] == -0.1
    write(repo / "value.txt", "95\n")
    worse = ar(repo, "run", "-d", "worse", "--json").json()
    # Against the one sample of a keep, two: one sample against one proves nothing.
    assert (worse["status"], worse["samples"], worse["decision"]["verdict"]) == \
        ("discard", [95, 95], "worse")
    # After the revert the incumbent (90) was measured once more, for its pool.
    again = [line for line in ledger_lines(repo) if line.get("type") == "incumbent"]
    assert [(a["after_run"], a["samples"]) for a in again] == [(3, [90])]
    assert ar(repo, "doctor", "--json").json()["findings"] == []  # mirrored on the state ref


def test_a_run_without_change_is_a_noise_probe_never_a_keep(repo: Path, ar: Tool) -> None:
    sequential(repo, ar)
    probe = ar(repo, "run", "-d", "nothing changed", "--json").json()
    assert probe["status"] == "discard"
    assert (probe["decision"]["verdict"], probe["samples"]) == ("no_change", [100])


def test_a_noisy_improvement_is_kept_and_noise_is_discarded_as_within_noise(
        repo: Path, ar: Tool) -> None:
    noisy(repo, ar, "--max-samples", "5")
    write(repo / "value.txt", "70\n")
    kept = ar(repo, "run", "-d", "a real gain", "--json").json()
    assert kept["status"] == "keep" and kept["decision"]["verdict"] == "better"
    assert kept["decision"]["effect_high"] < 0  # the interval excludes no effect
    write(repo / "value.txt", "70.1\n")
    noise = ar(repo, "run", "-d", "no real change", "--json").json()
    assert noise["status"] == "discard"
    assert noise["decision"]["verdict"] in ("inconclusive", "worse")
    if noise["decision"]["verdict"] == "inconclusive":
        assert noise["reason"].startswith(("within noise (", "not better ("))
    assert 1 <= len(noise["samples"]) <= 5


def test_keep_by_hand_wins_over_the_rule_and_is_recorded_as_forced(repo: Path,
                                                                  ar: Tool) -> None:
    sequential(repo, ar)
    write(repo / "value.txt", "120\n")
    measured = ar(repo, "measure", "--json").json()
    assert (measured["status"], measured["decision"]["verdict"]) == ("discard", "worse")
    res = ar(repo, "keep", "-d", "kept anyway")
    assert "the sequential rule found this run worse (+20.0%); kept because you asked" in res.err
    record = runs(repo)[-1]
    assert record["reason"] == "kept by hand: the sequential rule found this run worse (+20.0%)"
    assert " worse +20.0%* " in ar(repo, "log").out
    assert record["status"] == "keep"
    assert (record["decision"]["verdict"], record["decision"]["forced"]) == ("worse", True)
    seg = ar(repo, "status", "--json").json()["segment"]
    assert (seg["best"]["run"], seg["incumbent"]["run"]) == (1, 2)
    assert f"incumbent   120 (run 2, commit {record['commit']}): the last keep" in \
        ar(repo, "status").out


def test_keep_agrees_with_measure_when_the_incumbent_is_not_the_best(repo: Path,
                                                                     ar: Tool) -> None:
    """The incumbent, kept by hand, is worse than the best (the baseline): a run the rule finds
    better than the incumbent is what measure says to keep, and keep records it without a word
    against it, not forced."""
    sequential(repo, ar, "--baseline-samples", "2")
    write(repo / "value.txt", "120\n")
    ar(repo, "measure")
    ar(repo, "keep", "-d", "kept anyway")
    write(repo / "value.txt", "110\n")
    measured = ar(repo, "measure", "--json").json()
    assert (measured["status"], measured["decision"]["verdict"]) == ("keep", "better")
    res = ar(repo, "keep", "-d", "better than the incumbent")
    assert res.err == ""
    assert res.out.splitlines()[0] == ("run 3: keep  score = 110 (best was 100; judged against "
                                       "the incumbent's samples, median 120)")
    record = runs(repo)[-1]
    assert record["decision"]["verdict"] == "better" and "forced" not in record["decision"]
    assert "reason" not in record
    assert not git(repo, "log", "-1", "--format=%(trailers:key=Autoresearch-Decision,"
                   "valueonly)").endswith(", forced")


def test_new_sessions_decide_sequentially_and_strict_stays_a_choice(repo: Path,
                                                                     ar: Tool) -> None:
    ar(repo, *start_args())
    assert 'decision = "sequential"' in (repo / ".auto" / "config.toml").read_text()
    assert runs(repo)[0]["samples"] == [100] * 5


def test_strict_decides_on_the_aggregate_as_before(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--decision", "strict"))
    assert runs(repo)[0]["samples"] == [100]
    write(repo / "value.txt", "90\n")
    kept = ar(repo, "run", "-d", "better", "--json").json()
    assert kept["status"] == "keep"
    assert kept["decision"]["rule"] == "strict" and kept["decision"]["verdict"] == "better"
    assert (kept["decision"]["effect"], kept["decision"]["relative"]) == (-10, -0.1)
    assert (kept["decision"]["pool_median"], kept["decision"]["pool_spread"]) == (100, 0)
    write(repo / "README.md", "a change that changes nothing measured\n")
    tied = ar(repo, "run", "-d", "the same", "--json").json()
    assert (tied["status"], tied["decision"]["verdict"]) == ("discard", "inconclusive")
    probe = ar(repo, "run", "-d", "no change at all", "--json").json()
    assert (probe["status"], probe["decision"]["verdict"]) == ("discard", "no_change")
    write(repo / "value.txt", "95\n")
    worse = ar(repo, "run", "-d", "worse", "--json").json()
    assert (worse["status"], worse["decision"]["verdict"]) == ("discard", "worse")
    assert runs(repo)[0]["decision"] == {"rule": "strict", "verdict": "baseline",
                                         "candidate_samples": 1}


def test_strict_takes_min_effect_too(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--decision", "strict", "--min-effect", "0.05"))
    write(repo / "value.txt", "97\n")
    small = ar(repo, "run", "-d", "3% better", "--json").json()
    assert (small["status"], small["decision"]["verdict"]) == ("discard", "inconclusive")
    write(repo / "value.txt", "90\n")
    assert ar(repo, "run", "-d", "10% better", "--json").json()["status"] == "keep"


def test_a_configuration_without_the_key_is_strict() -> None:
    """Sessions begun before the key existed keep the rule they had."""
    from git_autoresearch.session.config import Config

    cfg = Config.from_mapping({"goal": "g", "command": "true"}, source="old")
    assert (cfg.rule, cfg.remeasures) == ("strict", False)
    assert "decision" not in cfg.render().decode()


def test_status_reports_the_noise_and_hooks_receive_the_decision(repo: Path, ar: Tool) -> None:
    noisy(repo, ar)
    after = repo / ".auto" / "hooks" / "after.sh"
    write(after, "#!/bin/sh\ncat > \"$(dirname \"$0\")/../payload.json\"\n", 0o755)
    write(repo / "value.txt", "150\n")
    ar(repo, "run", "-d", "much worse")
    payload = json.loads((repo / ".auto" / "payload.json").read_text())
    # Stopped early against the incumbent's earlier samples: not better (never "worse" on
    # them alone), the evidence and the sample counts in the decision.
    assert payload["run_entry"]["decision"]["verdict"] == "inconclusive"
    assert payload["run_entry"]["decision"]["evidence"] == "pool"
    assert payload["run_entry"]["decision"]["stopped_early"] is True
    found = ar(repo, "status", "--json").json()
    noise = found["noise"]
    # The baseline's 5 samples and the re-measure after the revert.
    assert noise["incumbent_samples"] == 6
    assert 0.005 < noise["relative_spread"] < 0.03
    assert found["segment"]["last"]["decision"]["verdict"] == "inconclusive"
    text = ar(repo, "status").out
    assert "noise       ±" in text
    assert re.search(r"last run    2 discard \(no gain \+\d+\.\d%\): much worse", text)


def test_before_anything_is_kept_status_reports_no_noise_yet(repo: Path, ar: Tool) -> None:
    sequential(repo, ar, "--no-baseline")
    noise = ar(repo, "status", "--json").json()["noise"]
    assert noise == {"incumbent_samples": 0, "relative_spread": None, "incumbent_pairs": 10,
                     "drift": None, "trend": None}
    write(repo / "value.txt", "90\n")
    first = ar(repo, "run", "-d", "first", "--json").json()
    assert (first["status"], first["decision"]["verdict"]) == ("keep", "baseline")
    assert first["samples"] == [90] * 5  # the first keep becomes the pool: baseline_samples


def test_discard_by_hand_takes_no_sample_of_the_incumbent(repo: Path, ar: Tool) -> None:
    sequential(repo, ar)
    write(repo / "value.txt", "120\n")
    ar(repo, "measure")
    ar(repo, "discard", "-d", "by hand")
    assert [line for line in ledger_lines(repo) if line.get("type") == "incumbent"] == []


# A machine that slows down by 10% after its twentieth benchmark run, with a little noise.
SLOWING = """#!/bin/sh
n=$(cat .n 2>/dev/null || echo 0); n=$((n+1)); echo $n > .n
awk -v v="$(cat value.txt)" -v n="$n" 'BEGIN {
  split("1.00 1.004 0.996 1.002 0.998", f, " ")
  printf "score: %.4f\\n", v * f[(n % 5) + 1] * (n > 20 ? 1.10 : 1.00) }'
"""


def test_an_incumbent_that_drifts_is_named_and_only_its_recent_samples_count(
        repo: Path, ar: Tool) -> None:
    write(repo / "bench.sh", SLOWING, 0o755)
    write(repo / ".gitignore", ".n\n")
    commit_all(repo)
    sequential(repo, ar)
    write(repo / "value.txt", "90\n")
    kept = ar(repo, "run", "-d", "a clear gain", "--json").json()
    assert kept["status"] == "keep" and len(kept["samples"]) <= 10
    warned = []
    for k in range(8):  # noise probes, each followed by a re-measure of the incumbent
        write(repo / "value.txt", "90\n")
        warned += ar(repo, "run", "-d", f"probe {k}", "--json").json()["warnings"]
    assert any("the incumbent drifted (+" in w and "only the recent ones are compared" in w
               for w in warned), warned
    noise = ar(repo, "status", "--json").json()["noise"]
    assert noise["drift"]["against"] is True and 0.05 < noise["drift"]["relative"] < 0.15
    assert noise["drift"]["machine"] == "slower"
    # The next candidate faces the recent (slow) samples only: no change is no gain.
    write(repo / "value.txt", "89.9\n")
    again = ar(repo, "run", "-d", "hardly anything", "--json").json()
    assert again["status"] == "discard"
    assert again["decision"]["pool_median"] > 95  # the slow machine's value, not 90


def test_log_and_the_dashboard_show_each_decision(repo: Path, ar: Tool) -> None:
    noisy(repo, ar, "--max-samples", "5")
    write(repo / "value.txt", "70\n")
    ar(repo, "run", "-d", "a real gain")
    write(repo / "value.txt", "140\n")
    ar(repo, "run", "-d", "much worse")
    write(repo / "value.txt", "70\n")
    ar(repo, "run", "-d", "nothing")
    write(repo / "value.txt", "80\n")
    ar(repo, "measure")
    ar(repo, "keep", "-d", "kept anyway")
    table = ar(repo, "log").out
    lines = {line.split()[0]: line for line in table.splitlines() if line.split()[0].isdigit()}
    assert " baseline " in lines["1"] and " better -" in lines["2"]
    assert " no gain +" in lines["3"] and " probe " in lines["4"]
    assert "(no gain: not better; probe: no change); * kept by hand against it" in table
    assert "no gain +" in lines["5"] and "%* " in lines["5"]  # forced
    assert "* kept by hand against it" in table
    assert ar(repo, "log", "--json").json()["runs"][-1]["decision"]["forced"] is True
    ar(repo, "dashboard", "-o", "page.html")
    page = (repo / "page.html").read_text()
    assert page.count('class="whisker"') == 4  # every run of several samples but the probe
    assert page.count('class="noise"') == 1  # one band: runs 2..5 were decided against a pool
    assert "kept by hand against the rule" in page
    assert "run 4: discard" in page and "(no change: a noise probe)</title>" in page
    assert "(kept by hand)</title>" in page and 'fill="none" stroke=' in page
    assert re.search(r"effect [+-]\d+\.\d\d% to [+-]\d+\.\d\d% \((8\d|9\d)% interval\)", page)


def test_a_keep_by_hand_on_few_samples_is_topped_up_after_the_next_revert(
        repo: Path, ar: Tool) -> None:
    write(repo / "bench.sh", NOISY.replace(
        "n=$(cat .n", 'echo "$AUTORESEARCH_RUN ${AUTORESEARCH_INCUMBENT:-0}" >> .env.log\n'
        "n=$(cat .n"), 0o755)
    write(repo / ".gitignore", ".n\n.env.log\n")
    commit_all(repo)
    sequential(repo, ar)
    write(repo / "value.txt", "150\n")
    measured = ar(repo, "measure", "--json").json()
    assert measured["decision"]["verdict"] == "inconclusive" and len(measured["samples"]) == 2
    kept = ar(repo, "keep", "-d", "kept anyway", "--json").json()
    assert any("the new incumbent has 2 sample(s): a gain is hard to prove" in w
               for w in kept["warnings"])
    write(repo / "value.txt", "160\n")
    ar(repo, "run", "-d", "worse again")
    again = [line for line in ledger_lines(repo) if line.get("type") == "incumbent"]
    assert [(a["after_run"], len(a["samples"])) for a in again] == [(3, 3)]  # up to 5
    labels = [line for line in (repo / ".env.log").read_text().splitlines()
              if line.startswith("3 ")]
    # The incumbent's samples say so: two here after the revert; the third, which checked
    # the pool before the discard, was taken in the incumbent's worktree (its own .env.log).
    assert labels == ["3 0", "3 0", "3 1", "3 1"]


def test_max_samples_of_one_is_refused_under_the_sequential_rule(repo: Path, ar: Tool) -> None:
    res = ar(repo, *start_args("--decision", "sequential", "--max-samples", "1"), expect=2)
    assert "max_samples must be at least 2 under the sequential rule" in res.err
    assert not (repo / ".auto").exists()
    ar(repo, *start_args("--decision", "strict", "--max-samples", "1"))


def test_a_sample_without_a_metric_crashes_the_run_and_names_the_sample(
        repo: Path, ar: Tool) -> None:
    # The benchmark's seventh call prints nothing: the run's second sample (the baseline took
    # five, and one sample never decides).
    write(repo / "bench.sh", NOISY.replace("awk", '[ "$n" -eq 7 ] && exit 0\nawk'), 0o755)
    write(repo / ".gitignore", ".n\n")
    commit_all(repo)
    sequential(repo, ar)
    write(repo / "value.txt", "101\n")
    ran = ar(repo, "run", "-d", "flaky", "--json").json()
    assert ran["status"] == "crash"
    assert ran["reason"] == "sample 2: metric pattern 'score: (\\S+)' matched nothing in the log"


def test_min_effect_is_named_when_it_is_what_stopped_a_keep(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--min-effect", "0.01"))
    write(repo / "value.txt", "99.5\n")
    ran = ar(repo, "run", "-d", "half a percent", "--json").json()
    assert (ran["status"], ran["decision"]["verdict"]) == ("discard", "inconclusive")
    assert ran["reason"] == "better, but not shown to be better by min_effect (1.00%)"
    write(repo / "value.txt", "100\n# a comment\n")
    same = ar(repo, "run", "-d", "nothing", "--json").json()
    assert same["reason"] == "within noise"


def test_a_keep_commit_says_how_it_was_decided_in_a_trailer(repo: Path, ar: Tool) -> None:
    noisy(repo, ar, "--max-samples", "5")
    write(repo / "value.txt", "70\n")
    kept = ar(repo, "run", "-d", "a real gain", "--json").json()
    said = git(repo, "log", "-1", "--format=%(trailers:key=Autoresearch-Decision,valueonly)")
    d = kept["decision"]
    assert said == (f"sequential better {d['relative'] * 100:+.2f}% "
                    f"[{d['relative_low'] * 100:+.2f}%, {d['relative_high'] * 100:+.2f}%], "
                    f"{d['candidate_samples']} sample(s) against {d['incumbent_samples']}")
    write(repo / "value.txt", "120\n")
    ar(repo, "measure")
    ar(repo, "keep", "-d", "kept anyway")
    forced = git(repo, "log", "-1", "--format=%(trailers:key=Autoresearch-Decision,valueonly)")
    # +72 % after two samples, against the incumbent's earlier samples only: not better (a
    # verdict of worse waits for the incumbent measured beside it), kept by hand.
    assert forced.startswith("sequential inconclusive +") and forced.endswith(", forced")


@pytest.mark.parametrize("reason,word", [
    ("not better (+404.0%): 3 sample(s), 2 of the incumbent measured beside them; stopped "
     "early", "no gain +404%"),
    ("not shown to be better (-15.7%): 16 sample(s) against the incumbent's earlier samples",
     "unproven -15.7%"),
    ("within noise (-15.7%): 10 sample(s), 10 of the incumbent measured beside them",
     "noise -15.7%"),
])
def test_the_run_table_words_a_discard_as_its_reason_does(reason: str, word: str) -> None:
    # (a run stopped as hopeless beside the incumbent, +404 %, was shown as "noise")
    from git_autoresearch.ledger import Run
    from git_autoresearch.review.report import decision_text

    relative = float(word.split()[-1].rstrip("%")) / 100
    found = {"verdict": "inconclusive", "relative": relative, "evidence": "fresh"}
    run = Run({"run": 5, "status": "discard", "decision": found, "reason": reason}, 5, 0)
    assert decision_text(run) == word


def test_a_keep_by_hand_of_an_unproven_gain_is_worded_so(repo: Path, ar: Tool) -> None:
    # (it was "no gain" in log: the words of any run stopped on the pool)
    from git_autoresearch.ledger import Run
    from git_autoresearch.review.report import decision_text

    found = {"verdict": "inconclusive", "relative": -0.006, "evidence": "pool", "forced": True}
    reason = ("kept by hand: the sequential rule found this run not shown to be better "
              "(-0.6%)")
    run = Run({"run": 5, "status": "keep", "decision": found, "reason": reason}, 5, 0)
    assert decision_text(run) == "unproven -0.6%*"
