"""The live conformance kit: one command drives a platform end to end through the gateway's own
endpoints and loops, and writes a JSON report that the README's compatibility table cites."""
