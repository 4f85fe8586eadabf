"""Probes: small C programs, compiled on the user's machine with the user's compiler, that measure what barriers,
mutexes, PAUSE spin loops, PRNG calls, timers and false sharing cost on this CPU."""
