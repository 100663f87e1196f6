"""Command-line tools of the ``pulsarlike`` command that talk to a broker over the wire."""
