"""Sockets: the public port's listener, the relay process, connection budgets and client identities."""
