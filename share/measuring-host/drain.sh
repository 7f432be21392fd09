#!/bin/sh
# Measure every candidate the agents of a session queued on its remote, then end: the body of
# a CI job or a batch job (measure.sbatch). Runs on the quiet machine.
#
#   REMOTE=git@host:project.git SESSION=<session-id> sh drain.sh
#
# REMOTE         the session's remote (a URL or a path)
# SESSION        the session id
# MEASURER_NAME  this host's worker name (default: the short host name); a host restarted
#                under its name takes back what it was measuring when it died
# AUTORESEARCH_WORKDIR
#                the clone the host measures in, kept between jobs (default:
#                $HOME/autoresearch-measurer/<session>/<name>): a name belongs to one clone
set -eu
: "${REMOTE:?REMOTE: the session's remote}" "${SESSION:?SESSION: the session id}"
name="${MEASURER_NAME:-$(hostname -s)}"
workdir="${AUTORESEARCH_WORKDIR:-$HOME/autoresearch-measurer/$SESSION/$name}"
if [ ! -d "$workdir/.git" ]; then
    mkdir -p "$(dirname "$workdir")"
    git clone -q "$REMOTE" "$workdir"
fi
cd "$workdir"
git autoresearch worker join origin "$SESSION" --name "$name" >/dev/null
exec git autoresearch measurer --drain
