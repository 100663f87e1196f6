"""One producer's life on its topic, written once for every front end: :class:`ProducerSession`.

A front end (gRPC ``Produce`` stream, Pulsar binary ``PRODUCER``/``SEND``) turns its requests into session
calls and the session's events (:class:`ProducerEvents`) into its own replies, as Pulsar's ``ServerCnx``
does over ``TransportCnx``. The session owns what both need:

- **registration** under the access modes (Shared, Exclusive, ExclusiveWithFencing, WaitForExclusive: see
  :mod:`broker_core.core.access`); a queued WaitForExclusive producer is told ``opened(ready=False)`` and
  ``opened(ready=True)`` once the topic grants it;
- **being ended by the topic** (fenced by an ExclusiveWithFencing producer, the topic terminated, unloaded
  or deleted): ``ended(error)``, and the session accepts no more sends;
- **the write fault** (:mod:`broker_core.core.write_fault`), under :attr:`WriteFaults.CLOSE_PRODUCER`: a
  new producer of a topic that cannot write is refused with ``ServiceNotReady``, a reconnecting one is held
  ``opened(ready=False)`` until the topic can write, and a send the topic could not store ends the producer
  (``ended(None)``) once the receipts owed before it have left, instead of failing that send.
  Under :attr:`WriteFaults.FAIL_SENDS` each such send simply fails with its ``PersistenceError``;
- **ordered receipts**: every :meth:`ProducerSession.publish` takes a slot; the topic confirms slots in any
  order, and ``receipts(...)`` is called once per slot, in the order of the publishes;
- the producer's deduplication state (:attr:`ProducerSession.last_sequence_id`) and leaving the topic
  (:meth:`ProducerSession.close`);
- **publish rate limits** (:mod:`broker_core.core.publish_throttle`): what each publish stored is charged to
  the topic's limiters (``topic.throttling.publish``: none, the usual case, costs one test); one left empty
  throttles the producer -- ``throttled(True)``: its front end reads nothing more from it -- until it holds
  tokens again, ``throttled(False)``; the topic counts each throttling (``publishRateLimitedTimes``).

Everything runs on the event loop; nothing here knows a wire format.
"""
from __future__ import annotations

import enum
import logging
from collections import deque
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional, Protocol, Sequence

from broker_core.errors import PersistenceError, ProducerFenced, PulsarLikeError, ServiceNotReady
from broker_core.core.access import AccessMode

if TYPE_CHECKING:
    from broker_core.core.producers import ProducerInfo, ProducerNames
    from broker_core.core.topic_protocol import Topic
    from broker_core.core.write_fault import WriteFault
    from broker_core.storage.log import StoredEntry

log = logging.getLogger(__name__)


class WriteFaults(enum.Enum):
    """What a producer meets while its topic cannot write (a full disk, a failed fsync)."""

    FAIL_SENDS = "fail_sends"
    """Each send the topic could not store fails with its ``PersistenceError`` (the gRPC clients retry)."""
    CLOSE_PRODUCER = "close_producer"
    """Pulsar's way: the producer is ended, new ones refused, reconnecting ones held until it can write."""


class Receipt(NamedTuple):
    """The outcome of one published entry, as the front ends answer it."""

    sequence_id: int
    highest_sequence_id: int
    entry: Optional["StoredEntry"] = None
    """Where the entry was stored (None: duplicate or failed)."""
    duplicate: bool = False
    """Deduplication dropped it: the send still succeeds."""
    failure: Optional[BaseException] = None
    """Why it was not stored (a ``PulsarLikeError``, or an unexpected exception the front end reports)."""


def receipts_of(results: Sequence[Any], error: BaseException | None,
                drop: type[BaseException] | tuple = ()) -> tuple[list[Receipt], bool]:
    """The topic's ``publish`` results (``Accepted``) and its confirmation ``error`` (which fails every
    entry that was stored) as receipts, leaving out the failures of type ``drop``; and whether any was
    left out. One pass: it runs for every send."""
    out: list[Receipt] = []
    dropped = False
    for result in results:
        if result.duplicate:
            out.append(Receipt(result.sequence_id, result.highest_sequence_id, None, True))
            continue
        failure = result.error or (error if result.entry is not None else None)
        if failure is None:
            out.append(Receipt(result.sequence_id, result.highest_sequence_id, result.entry))
        elif isinstance(failure, drop):
            dropped = True
        else:
            out.append(Receipt(result.sequence_id, result.highest_sequence_id, None, False, failure))
    return out, dropped


class ProducerEvents(Protocol):
    """What a front end does with a session's events (each writes its own replies)."""

    def opened(self, last_sequence_id: int, ready: bool) -> None:
        """The producer is registered: ready to publish, or (``ready`` False) waiting for WaitForExclusive's
        turn or for its topic to write again; ``opened(..., True)`` follows then."""

    def ended(self, error: PulsarLikeError | None) -> None:
        """The topic ended the producer with ``error`` (fenced, terminated, unloaded, deleted), or (None) a
        send could not be stored under :attr:`WriteFaults.CLOSE_PRODUCER`. The front end closes the session."""

    def receipts(self, receipts: list[Receipt]) -> None:
        """The outcomes of one :meth:`ProducerSession.publish` (or :meth:`~ProducerSession.refuse`), in
        publish order; called once per publish, the list empty when nothing is left to answer."""

    def throttled(self, paused: bool) -> None:
        """A publish rate is spent: read nothing more from this producer (``paused``) until called again with
        False (Pulsar pauses the producer's connection)."""


class ProducerSession:
    """One producer on one topic (see the module docstring)."""

    __slots__ = ("topic", "name", "info", "ready", "ended", "closed", "closing", "_events", "_properties",
                 "_mode", "_write_faults", "_dropped", "_reconnecting", "_peer", "_slots", "_drained",
                 "_writable", "_throttles")

    def __init__(self, topic: "Topic", name: str, names: "ProducerNames", events: ProducerEvents, *,
                 properties: dict[str, str] | None = None, access_mode: AccessMode = AccessMode.SHARED,
                 write_faults: WriteFaults = WriteFaults.FAIL_SENDS, reconnecting: bool = False,
                 peer: str | None = None) -> None:
        """``name`` empty: the broker picks one from ``names``. ``reconnecting``: the client had this
        producer before (a Pulsar ``epoch`` > 0), so a topic that cannot write holds it rather than refusing
        it. ``peer`` goes into the ``producer_opened`` line when given."""
        self.topic = topic
        self.name = name or names.next()
        self.info: ProducerInfo | None = None
        self.ready = False
        """Opened and admitted: sends are accepted."""
        self.ended = False
        """The topic ended the producer (or it could not store a send): it takes no more sends."""
        self.closed = False
        """It left the topic (:meth:`close`)."""
        self.closing = False
        """A send could not be stored: the producer ends once the receipts owed before it have left."""
        self._events = events
        self._properties = dict(properties or {})
        self._mode = AccessMode(access_mode)
        self._write_faults = write_faults
        self._dropped: tuple = (PersistenceError,) if write_faults is WriteFaults.CLOSE_PRODUCER else ()
        """Failures that are not answered: they end the producer instead."""
        self._reconnecting = reconnecting
        self._peer = peer
        self._slots: deque[list] = deque()
        self._drained: list[Callable[[], None]] = []
        self._writable: Callable[[], None] | None = None
        """Held until its topic can write again: the callback waiting for that."""
        self._throttles = 0
        """Publish limiters this producer waits for (its front end reads from it while none)."""

    @property
    def last_sequence_id(self) -> int:
        """The highest sequence id deduplication stored for this producer's name (-1: none)."""
        return self.topic.last_sequence_id(self.name)

    # ------------------------------------------------------------------ opening
    def open(self, registered: Callable[[], None] | None = None) -> bool:
        """Register on the topic and tell the events ``opened``; True when it may publish now.
        ``registered()`` runs once the topic took the producer, before ``opened`` (Pulsar's initial
        subscription); if it raises, the producer leaves the topic again. Raises what the topic refuses
        with (``ProducerBusy``, ``ProducerFenced``, ``TopicTerminated``, ...) or ``ServiceNotReady``; a
        refused ``open`` may be tried again."""
        topic = self.topic
        writes = topic.writes if self._write_faults is WriteFaults.CLOSE_PRODUCER else None
        if writes is not None and writes.error is not None and not self._reconnecting:
            reason = getattr(writes.error, "reason", None) or writes.error.message
            raise ServiceNotReady(f"topic {topic.topic} cannot store messages now ({reason}): retry once the"
                                  " broker's storage works again")
        info, admitted = topic.add_producer(self.name, self._properties, self._mode, fence=self._fenced,
                                            granted=self._granted)
        self.info = info
        if registered is not None:
            try:
                registered()
            except BaseException:
                self.info = None
                topic.remove_producer(info)
                raise
        if not admitted:
            self._events.opened(self.last_sequence_id, False)
            log.info("event=producer_waiting topic=%s producer=%s", topic.topic, self.name)
            return False
        if writes is not None and not writes.can_write:
            self._hold(writes)
            return False
        self.ready = True
        self._events.opened(self.last_sequence_id, True)
        if self._peer is None:
            log.info("event=producer_opened topic=%s producer=%s access_mode=%s", topic.topic, self.name,
                     info.access_mode.name)
        else:
            log.info("event=producer_opened topic=%s producer=%s access_mode=%s peer=%s", topic.topic, self.name,
                     info.access_mode.name, self._peer)
        return True

    def _granted(self) -> None:
        """WaitForExclusive: the topic admitted the queued producer."""
        if self.closed or self.ended:
            return
        self.ready = True
        self._events.opened(self.last_sequence_id, True)
        log.info("event=producer_opened topic=%s producer=%s access_mode=%s", self.topic.topic, self.name,
                 self._mode.name)

    def _hold(self, writes: "WriteFault") -> None:
        """A reconnecting producer of a topic that cannot write: ``opened(ready=False)`` until it can."""
        def writable() -> None:
            self._writable = None
            if not self.closed and not self.ended:
                self.ready = True
                self._events.opened(self.last_sequence_id, True)
                log.info("event=producer_opened topic=%s producer=%s after=cannot_write", self.topic.topic,
                         self.name)
        self._writable = writable
        self._events.opened(self.last_sequence_id, False)
        log.info("event=producer_waiting topic=%s producer=%s reason=cannot_write", self.topic.topic, self.name)
        writes.wait(writable)

    def _fenced(self, error: PulsarLikeError) -> None:
        """The topic ends the producer (fenced, terminated, unloaded, deleted)."""
        if self.closed or self.ended:
            return
        self.ended = True
        self.ready = False
        log.info("event=producer_%s topic=%s producer=%s reason=%s",
                 "fenced" if isinstance(error, ProducerFenced) else "disconnected", self.topic.topic, self.name,
                 error.code)
        self._events.ended(error)

    # ------------------------------------------------------------------ publishing
    def publish(self, entries: Sequence) -> None:
        """Publish ``entries`` (``SendEntry``-like: data, sequence_id, highest_sequence_id, num_messages);
        their receipts come in order. A topic refusing the whole publish (closing, terminated) raises, and
        the publish then owes no receipts."""
        slot: list = []
        self._slots.append(slot)
        topic = self.topic
        limiters = topic.throttling.publish
        if limiters:
            info = self.info
            msgs, nbytes = info.msg_in_counter, info.bytes_in_counter
        try:
            topic.publish(self.info, entries, lambda results, error: self._fill(slot, results, error))
        except BaseException:
            if not slot and self._slots and self._slots[-1] is slot:
                self._slots.pop()
                self._check_drained()
            raise
        if limiters:
            self._charge(limiters, info.msg_in_counter - msgs, info.bytes_in_counter - nbytes)

    def _charge(self, limiters: tuple, messages: int, nbytes: int) -> None:
        """What one publish stored, charged to each limiter; one left empty throttles the producer."""
        for limiter in limiters:
            if limiter.charge(messages, nbytes) and not self.closed:
                if not self._throttles:
                    self.topic.throttling.limited_times += 1
                    self._events.throttled(True)
                self._throttles += 1
                limiter.hold(self._unthrottled)

    def _unthrottled(self) -> None:
        if self._throttles <= 0:
            return  # closed meanwhile: resumed then
        self._throttles -= 1
        if not self._throttles:
            self._events.throttled(False)

    def refuse(self, entries: Sequence, error: PulsarLikeError) -> None:
        """Answer every entry of ``entries`` with ``error``, in order after the receipts already owed."""
        slot: list = []
        self._slots.append(slot)
        self._release(slot, [Receipt(e.sequence_id, e.highest_sequence_id, None, False, error) for e in entries])

    def _fill(self, slot: list, results: Sequence[Any], error: BaseException | None) -> None:
        receipts, dropped = receipts_of(results, error, self._dropped)
        if dropped:  # no failure for these: the producer ends instead (see WriteFaults.CLOSE_PRODUCER)
            self.closing = True
        self._release(slot, receipts)

    def _release(self, slot: list, receipts: list[Receipt]) -> None:
        slot.append(receipts)
        slots = self._slots
        while slots and slots[0]:
            self._events.receipts(slots.popleft()[0])
        if not slots:
            if self.closing and not self.closed and not self.ended:
                self.ended = True
                self.ready = False
                log.info("event=producer_disconnected topic=%s producer=%s reason=PersistenceError",
                         self.topic.topic, self.name)
                self._events.ended(None)
            self._check_drained()

    @property
    def owed(self) -> int:
        """Publishes whose receipts have not been released yet."""
        return len(self._slots)

    def when_drained(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once every receipt owed now has been released (at once when none is)."""
        self._drained.append(callback)
        self._check_drained()

    def _check_drained(self) -> None:
        if not self._slots and self._drained:
            callbacks, self._drained = self._drained, []
            for callback in callbacks:
                callback()

    # ------------------------------------------------------------------ closing
    def close(self) -> None:
        """Leave the topic (the client closed the producer, or its connection went; or after ``ended``).
        Receipts still owed are released as the topic confirms them."""
        if self.closed:
            return
        self.closed = True
        self.ready = False
        if self._throttles:  # its front end reads again (other producers may share its connection)
            self._throttles = 0
            self._events.throttled(False)
        if self.info is not None:
            self.topic.remove_producer(self.info)
        if self._writable is not None:
            writes = self.topic.writes
            if writes is not None:
                writes.forget(self._writable)
            self._writable = None
