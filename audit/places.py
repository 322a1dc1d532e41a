"""Where a journal entry may stand: in its own contour's chain, at or below that chain's head.

record() writes a row and moves its chain's head in one transaction, so a committed row always
has a head at or past its place, and its chain is its contour's slug (or a lane of it). A
database writer without the journal key can still insert a row far past a head, where the
chain walk (which stops at the head) never reaches it, or into another contour's chain. Both
are found here: by verify_journal and journal_checkpoint, and left out of the export, which
carries only places a head vouches for.
"""

from __future__ import annotations

from django.db.models import Exists, F, OuterRef, Q, QuerySet, Value
from django.db.models.functions import Concat

from audit.models import ChainHead, JournalEntry

LANE_MARK = "~"
HEADS_PER_QUERY = 500


def chain_contour(chain: str) -> str:
    """The contour whose entries a chain holds: its slug, a lane's slug, "" for no contour."""
    return chain.split(LANE_MARK, 1)[0]


def contour_problem(entry: JournalEntry) -> str:
    """Why the entry's contour cannot be in its chain ('' when it can).

    Form-1 entries come from the one global chain ("") and name any contour; a form-2 entry
    names the contour of its chain (the legacy chain "" continues with entries of none)."""
    if entry.form < 2 or entry.contour == chain_contour(entry.chain):
        return ""
    return (
        f"names contour {entry.contour!r} but stands in chain {entry.chain!r} "
        f"(contour {chain_contour(entry.chain)!r})"
    )


def beyond_heads() -> list[tuple[JournalEntry, int]]:
    """Rows placed past their chain's head: written without record(), so not in the chain.

    The rows are read first and the heads after them: a genuine row is visible only once its
    transaction committed, and that transaction moved the head past it, so a row still past
    the head read afterwards was never appended by record(). Each head is asked through the
    (chain, seq) index, a few hundred heads per query: no scan of the whole journal. Chains
    without a head row (a flushed head table) are walked whole by the chain check.
    """
    heads = list(ChainHead.objects.values_list("chain", "last_seq"))
    stray: list[JournalEntry] = []
    for start in range(0, len(heads), HEADS_PER_QUERY):
        past = Q()
        for chain, last_seq in heads[start : start + HEADS_PER_QUERY]:
            past |= Q(chain=chain, seq__gt=last_seq)
        stray += JournalEntry.objects.filter(past).order_by("id")
    if not stray:
        return []
    now = dict(
        ChainHead.objects.filter(chain__in={row.chain for row in stray}).values_list(
            "chain", "last_seq"
        )
    )
    return sorted(
        ((row, now[row.chain]) for row in stray if row.chain in now and row.seq > now[row.chain]),
        key=lambda p: p[0].id,
    )


def beyond_head_problem(entry: JournalEntry, head_seq: int) -> str:
    return (
        f"stands at place {entry.seq} of chain {entry.chain!r}, past its head "
        f"(place {head_seq}): it was not appended by the journal's writer"
    )


def vouched(qs: QuerySet[JournalEntry]) -> QuerySet[JournalEntry]:
    """Only entries at places a head vouches for, in their own contour's chain.

    A row past its chain's head, in a chain no head names, or in another contour's chain, is
    left out: it is not part of the chain an auditor can verify, and verify_journal names it.
    """
    past_head = Exists(
        ChainHead.objects.filter(chain=OuterRef("chain"), last_seq__lt=OuterRef("seq"))
    )
    # A chain with no head row vouches for nothing: record() opens a chain by writing its
    # head, so a row in a lane no head names was put there by someone else (form-1 rows of
    # the one global chain "" predate heads).
    has_head = Exists(ChainHead.objects.filter(chain=OuterRef("chain")))
    own_chain = (
        Q(form__lt=2)
        | Q(chain=F("contour"))
        | Q(chain__startswith=Concat(F("contour"), Value(LANE_MARK)))
    )
    return qs.filter(own_chain).filter(has_head | Q(form__lt=2, chain="")).exclude(past_head)
