"""Operations on a persistent topic partition besides producing and consuming (a helper the
:class:`~broker_core.core.persistent.topic.PersistentTopic` owns and delegates to): termination
(:mod:`~broker_core.core.termination`) and ending every client's session (unload, delete)."""
from __future__ import annotations

from broker_core.errors import PulsarLikeError, TopicTerminated
from broker_core.core.persistent.subscriptions import TopicSubscriptions
from broker_core.core.producers import TopicProducers
from broker_core.core.termination import Termination
from broker_core.storage.journal import Journal
from broker_core.storage.log import ManagedLog


class TopicOperations:
    """Terminates the topic whose log is ``managed_log`` and ends its ``producers``' and ``subscriptions``'
    sessions."""

    def __init__(self, topic: str, managed_log: ManagedLog, journal: Journal, termination: Termination,
                 producers: TopicProducers, subscriptions: TopicSubscriptions) -> None:
        self.topic = topic
        self._log = managed_log
        self._journal = journal
        self._termination = termination
        self._producers = producers
        self._subs = subscriptions

    def terminate(self) -> int:
        """Take no more messages, ever: connected producers are closed with ``TopicTerminated``, consumers
        told once they have everything. Returns the offset one past the last message (terminating again
        returns the same)."""
        if self._termination.terminated:
            return self._termination.end_offset
        end = self._log.end_offset  # what was accepted, confirmed or about to be
        self._termination.terminate(end)
        self.disconnect_clients(TopicTerminated(f"topic {self.topic} was terminated: it takes no more messages",
                                                topic=self.topic), consumers=False)
        self.check_end_of_topic()
        return end

    def check_end_of_topic(self) -> None:
        """Send ReachedEndOfTopic to the consumers that now have everything (terminated topics only)."""
        if self._termination.terminated:
            self._termination.check(self._subs.all(), self._journal.confirmed_end_offset)

    def disconnect_clients(self, error: PulsarLikeError, *, consumers: bool = True) -> int:
        """End the session of every producer (waiting ones first, so none is admitted meanwhile) and, with
        ``consumers``, of every consumer, with ``error``; their sessions then leave the topic. Returns how
        many sessions were ended."""
        ended = self._producers.disconnect_all(error)
        if consumers:
            for sub in self._subs.all():
                for consumer in sub.consumers:
                    consumer.fail(error)
                    ended += 1
        return ended
