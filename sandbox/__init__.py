"""The bundled fake of the Invoicebox API v3: one dispatch function, a Django view, an httpx transport.

Orders, shipments, refunds (with their refundable items) and the counterparty directory.

Paths, envelope and error bodies follow the vendor's API documentation. Where it is silent the
choice is ours and is marked "[sandbox]" in a comment; docs/invoicebox-api.md lists those
inventions and the disputed points beside their sources. Money is
Decimal end to end (JSON parsed with parse_float=Decimal, written with simplejson
use_decimal=True); a float never touches an amount.

Import rule: this package never imports the client, tools, audit or adapters.rest.

Its public API is sandbox/api.py (this package is a Django app, so its
__init__ imports nothing).
"""
