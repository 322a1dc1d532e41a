"""Every write that is not a tool call: the change and its journal entry in one transaction.

The admin, the management commands, the operator's pages and Celery tasks call these with
plain arguments and the acting person (as a journal actor, audit.actors); none of them writes
these rows or journals these events itself. Tool calls go through tools/gateway.py instead.
Operators' decisions stay in tools/approvals.py (decide), already such a service. One service
here only reads: connection.py, the check of a contour's token and shop against Invoicebox.
"""
