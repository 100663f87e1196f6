"""export's plan on a Pulsar broker other than pulsarlike: ranges of message ids instead of dense offsets.

Each partition's range is ``start < id <= end`` (:mod:`jobs._message_ids`): ``end`` is the partition's last
message id when the run is planned (or ``--ending-offsets``/``--ending-time``), ``start`` the manifest's
``endOffsets`` -- the previous run's end, so the next run exports only what is new -- or ``--starting-*``.
The manifest says ``"offsetKind": "messageId"``; the Spark source reads the range with message id
``startingOffsets``/``endingOffsets``.

- ``--starting-time``/``--ending-time`` need the broker's admin REST API (``--admin-url``): Pulsar's binary
  protocol cannot find a message by publish time. Without it: exit 2 naming ``--admin-url``.
- A range's size is not known before it is read (ids have gaps): the progress bar has no total, and data
  deleted by retention is not detected (``--subscription`` keeps what later runs export).
"""
from __future__ import annotations

from typing import Any, Mapping

from jobs._common import JobInputError
from jobs._message_ids import ID_KIND, before, message_id_at, partitions_and_ends, require_admin_url


def resolve_ids(flag: str, given: Mapping[Any, Any], last: Mapping[Any, Any], default_earliest: bool) -> dict[Any, Any]:
    """Boundaries for every partition in ``last`` from a user's JSON offsets (-2: before the first message,
    -1: the last message id, a message id as it is); ``ValueError`` for a dense offset or an unknown
    partition."""
    from connector.spark.message_id_offsets import EARLIEST, IdOffset

    missing = sorted(str(tp) for tp in given if tp not in last)
    if missing:
        raise ValueError(f"{flag} names {', '.join(missing)}, which does not exist; name existing partitions "
                         "(partition -1 for a non-partitioned topic)")
    out = {}
    for tp in sorted(last):
        value = given.get(tp, -2 if default_earliest else -1)
        if isinstance(value, IdOffset):
            out[tp] = value
        elif value in (-2, -1):
            out[tp] = EARLIEST if value == -2 else last[tp]
        else:
            raise ValueError(f"{flag}: offset {value} of {tp} is a dense offset, which this broker (not pulsarlike) "
                             'does not have; give a message id {"ledger": L, "entry": E, "batch": B} (the last '
                             "message before the boundary), -2 (earliest) or -1 (latest)")
    return out


def plan_id_export(topic: str, last: Mapping[Any, Any], manifest: Mapping[str, Any], starting: str | None,
                   ending: str | None, starting_ids: Mapping[Any, Any] | None = None,
                   ending_ids: Mapping[Any, Any] | None = None) -> Any:
    """The run's range from the partitions' last ids, the manifest and the flags, as ``plan_export`` does
    with dense offsets (``*_ids``: boundaries the broker found for a time)."""
    from connector.spark.message_id_offsets import EARLIEST, holds_messages
    from connector.spark.offsets import from_json_dict, parse_user_offsets
    from jobs.export import ExportPlan

    try:
        if starting_ids is not None:
            start, source = dict(starting_ids), "time"
        elif starting is not None and starting.strip().lower() in ("earliest", "latest"):
            source = starting.strip().lower()
            start = {tp: (EARLIEST if source == "earliest" else end) for tp, end in last.items()}
        elif starting is not None:
            given = parse_user_offsets("--starting-offsets", starting)
            start, source = resolve_ids("--starting-offsets", given, last, True), "offsets"
        else:
            done = from_json_dict(manifest.get("endOffsets", {}))
            source = "manifest" if done else "earliest"
            start = {tp: done.get(tp, EARLIEST) for tp in last}
            for tp, offset in sorted(done.items()):
                if tp in last and holds_messages(last[tp], offset):
                    raise JobInputError(
                        f"the manifest says {tp} was exported up to message id {offset}, but its last message is "
                        f"{last[tp]}: the topic was deleted and created again? export it to a new folder, or give "
                        "--starting-offsets")
        if ending_ids is not None:
            end = dict(ending_ids)
        elif ending is None or ending.strip().lower() == "latest":
            end = dict(last)
        else:
            given = parse_user_offsets("--ending-offsets", ending, allow_earliest=False)
            end = resolve_ids("--ending-offsets", given, last, False)
    except ValueError as exc:
        if isinstance(exc, JobInputError):
            raise
        raise JobInputError(str(exc)) from None
    for tp in sorted(end):
        if holds_messages(end[tp], start[tp]):
            raise JobInputError(f"{tp}: the start ({start[tp]}, from {source}) is after the end ({end[tp]}); "
                                "give an end at or after the start")
    return ExportPlan(topic=topic, start=start, end=end, source=source, kind=ID_KIND)


def plan_ids(args: Any, topic: str, manifest: Mapping[str, Any], start_ms: int | None,
             end_ms: int | None) -> Any:
    """The run's plan on the broker: its partitions' last ids, and the boundaries before the first message
    at or after each given time (over ``--admin-url``)."""
    from connector.spark.message_id_offsets import holds_messages

    admin_url = None
    if start_ms is not None or end_ms is not None:
        admin_url = require_admin_url(args.admin_url, "--starting-time/--ending-time", "export")
    last = partitions_and_ends(args.service_url, topic)

    def at(ms: int | None) -> dict[Any, Any] | None:
        if ms is None:
            return None
        found = {tp: message_id_at(admin_url, tp, ms) for tp in last}  # type: ignore[arg-type]
        return {tp: (before(*mid, exact=True) if mid is not None else last[tp]) for tp, mid in found.items()}

    starting_ids, ending_ids = at(start_ms), at(end_ms)
    if starting_ids is not None and ending_ids is not None:  # an empty time range, not a reversed one
        starting_ids = {tp: (ending_ids[tp] if holds_messages(ending_ids[tp], b) else b)
                        for tp, b in starting_ids.items()}
    return plan_id_export(topic, last, manifest, args.starting_offsets, args.ending_offsets, starting_ids,
                          ending_ids)
