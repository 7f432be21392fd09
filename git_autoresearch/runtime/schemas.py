"""The JSON documents: what each ``--json`` command prints and what a hook reads on stdin,
named and versioned, and described by the JSON Schema files installed with the package.

Every document is one JSON object whose first field, ``schema``, names its kind and version:
``"git-autoresearch:run/1"`` is a document of kind ``run``, version 1, described by the file
``schemas/run.json`` of the installed data (:func:`runtime.resources.data_path`), whose ``$id`` is
that same string (JSON Schema draft 2020-12). A version grows only when a field changes its meaning
or type, or goes away; a new field leaves it as it is, so readers skip fields they do not know.
``git autoresearch schema NAME`` prints a file (git-autoresearch-run(1)).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

PREFIX = "git-autoresearch:"

# Each kind of document and its version: the commands that print it, or who reads it.
VERSIONS: dict[str, int] = {
    "error": 1,  # any command with --json that fails (exit 1, 2, 3 or a signal's)
    "common": 1,  # shared definitions: a run record, its decision, checks (no document)
    "start": 1,
    "measurement": 1,  # measure, run --dry-run
    "run": 1,  # run, keep, discard, crash
    "queued": 1,  # run --no-wait in a clone measured on a host, collect --no-wait
    "answered": 1,  # measurer --json: a line per candidate answered
    "stop": 1,
    "hook": 1,  # hook before|after (firing hooks by hand)
    "hook-before": 1,  # stdin of .auto/hooks/before.sh
    "hook-after": 1,  # stdin of .auto/hooks/after.sh
    "log": 1,
    "status": 1,
    "show": 1,
    "score": 1,
    "analyze": 1,
    "audit": 1,
    "finalize": 1,
    "apply": 1,
    "diff": 1,
    "resume": 1,
    "doctor": 1,
    "hooks-list": 1,
    "hooks-install": 1,
    "import": 1,
    "idea": 1,  # ideas add, ideas done
    "ideas": 1,  # ideas list
    "idea-next": 1,
    "idea-claim": 1,
    "idea-release": 1,
    "sessions": 1,
    "gc": 1,
    "transfer": 1,  # push, pull
    "skill": 1,
    "guard": 1,  # guard install, uninstall, status
    "workers": 1,  # worker add, worker list
    "worker-remove": 1,
    "worker-join": 1,
    "worker-sync": 1,
    "schema": 1,  # schema --json (the list of documents)
    "summary": 1,
}


# The document each command with --json prints (besides the error document, which any of them
# prints when it fails): its name as `git autoresearch <name>` takes it.
COMMAND_DOCUMENTS: dict[str, str] = {
    "start": "start", "measure": "measurement", "run": "run", "collect": "run", "keep": "run",
    "discard": "run", "crash": "run", "log": "log", "status": "status", "show": "show",
    "score": "score", "stop": "stop", "resume": "resume", "doctor": "doctor", "hook": "hook",
    "hooks install": "hooks-install", "hooks list": "hooks-list", "analyze": "analyze",
    "ideas add": "idea", "ideas done": "idea", "ideas list": "ideas", "ideas next": "idea-next",
    "ideas claim": "idea-claim", "ideas release": "idea-release", "import": "import",
    "audit": "audit", "finalize": "finalize", "apply": "apply", "diff": "diff",
    "sessions": "sessions", "gc": "gc", "push": "transfer", "pull": "transfer",
    "skill": "skill", "guard install": "guard", "guard uninstall": "guard",
    "guard status": "guard", "worker add": "workers", "worker list": "workers",
    "worker remove": "worker-remove", "worker join": "worker-join",
    "worker sync": "worker-sync", "schema": "schema", "measurer": "answered", "summary": "summary",
}

# The kinds a command prints one of a line, as it goes (a long-lived command), not one at its end.
STREAMED = {"answered"}


def schema_id(kind: str) -> str:
    """The ``schema`` value of a document of ``kind`` (a key of :data:`VERSIONS`), also its
    schema file's ``$id``: ``git-autoresearch:<kind>/<version>``. KeyError if unknown."""
    return f"{PREFIX}{kind}/{VERSIONS[kind]}"


def schema_path(kind: str) -> Path:
    """The installed JSON Schema file of ``kind``; KeyError if the kind is unknown."""
    from .resources import data_path

    if kind not in VERSIONS:
        raise KeyError(kind)
    return data_path("schemas") / f"{kind}.json"


def load(kind: str) -> dict[str, Any]:
    """The JSON Schema of ``kind``, as its installed file holds it."""
    import json

    found: dict[str, Any] = json.loads(schema_path(kind).read_text(encoding="utf-8"))
    return found


def fields(kind: str) -> list[tuple[str, str, str]]:
    """The top-level fields of a document of ``kind`` as its schema describes them:
    ``(name, type, description)`` in the schema's order, ``schema`` first, the type ending in
    ``, optional`` for a field the document may leave out (not ``required``); a document built
    on a run record (``allOf`` the common ``run_record``) lists the record's fields first. What
    the manual pages print under "JSON OUTPUT"."""
    schema = load(kind)
    common = load("common")["$defs"]
    properties: dict[str, Any] = {}
    for part in schema.get("allOf", []):
        properties.update(_resolved(part, common).get("properties", {}))
    properties = {"schema": schema["properties"]["schema"], **properties,
                  **schema.get("properties", {})}
    required = set(schema.get("required", []))
    return [(name, _type_text(spec, common) + ("" if name in required else ", optional"),
             _description(spec, common)) for name, spec in properties.items()]


def shared_fields(name: str) -> list[tuple[str, str, str]]:
    """The fields of the common definition ``name`` (``decision``, ``checks``,
    ``run_record``), as :func:`fields` gives a document's."""
    common = load("common")["$defs"]
    required = set(common[name].get("required", []))
    return [(field, _type_text(spec, common) + ("" if field in required else ", optional"),
             _description(spec, common))
            for field, spec in common[name].get("properties", {}).items()]


def _resolved(spec: dict[str, Any], common: dict[str, Any]) -> dict[str, Any]:
    """``spec``, or the common definition its ``$ref`` names (with its own description)."""
    ref = spec.get("$ref")
    if isinstance(ref, str) and "#/$defs/" in ref:
        return {**common[ref.rsplit("/", 1)[1]], **{k: v for k, v in spec.items()
                                                     if k != "$ref"}}
    return spec


def _type_text(spec: dict[str, Any], common: dict[str, Any]) -> str:
    """A field's type in words: ``string``, ``integer or null``, ``array of string``, the
    common definition a ``$ref`` names (``run_record``), ``"value"`` for a constant."""
    if "const" in spec:
        return _literal(spec["const"])
    if "$ref" in spec:
        return str(spec["$ref"]).rsplit("/", 1)[1]
    if "anyOf" in spec:
        return " or ".join(_type_text(s, common) for s in spec["anyOf"])
    kind = spec.get("type", "any")
    names = kind if isinstance(kind, list) else [kind]
    if "array" in names and isinstance(spec.get("items"), dict):
        names = [f"array of {_type_text(spec['items'], common)}" if n == "array" else n
                 for n in names]
    return " or ".join(names)


def _description(spec: dict[str, Any], common: dict[str, Any]) -> str:
    found = spec.get("description") or _resolved(spec, common).get("description")
    if not found and "anyOf" in spec:
        found = next((_resolved(s, common).get("description") for s in spec["anyOf"]
                      if _resolved(s, common).get("description")), "")
    return str(found or "")


def _literal(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


def bundled(kind: str) -> dict[str, Any]:
    """The JSON Schema of ``kind`` whole in one object, for a reader that fetches no other
    file (an MCP client validating a tool's result): the shared definitions it uses copied
    under its own ``$defs``, each reference to them (``git-autoresearch:common/1#/$defs/X``)
    made local (``#/$defs/X``), and no ``$id``."""
    schema = load(kind)
    common = load("common")
    prefix = schema_id("common") + "#/"

    def local(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: ("#/" + item[len(prefix):] if key == "$ref" and isinstance(item, str)
                          and item.startswith(prefix) else local(item))
                    for key, item in value.items() if key != "$id"}
        if isinstance(value, list):
            return [local(item) for item in value]
        return value

    out: dict[str, Any] = local(schema)
    out["$defs"] = {**local(common.get("$defs", {})), **out.get("$defs", {})}
    return out
