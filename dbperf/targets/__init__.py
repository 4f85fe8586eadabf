"""A target's data and its lifecycle as the runner, the servers and the tool drivers see it: the protocol, SQLite's
implementation, and the per-cell resource sampling built on it."""
