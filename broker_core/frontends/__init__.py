"""The front ends: each translates its wire format into calls on the broker core, nothing more."""
