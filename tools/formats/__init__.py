"""The catalog as platforms take it: the format registry, the exporter protocol, the schema generator.

No adapter owns this package: adapters import it and register their exporters; it imports only
the catalog (tools), never an adapter.
"""
