"""Verifying the journal: check_chain walks every chain, whole or only what follows a checkpoint."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.conf import settings

from audit.journal import VERIFY_CHUNK, Anchor, ChainReport, journal_keys, link_problem
from audit.models import ZERO_HASH, ChainHead, JournalEntry, SignedCheckpoint
from audit.places import beyond_head_problem, beyond_heads, contour_problem


class Walk:
    """One verify run over all chains: the running count, and which anchors were met."""

    def __init__(
        self,
        keys: Mapping[str, str],
        legacy_last_id: int,
        anchors: list[Anchor],
        archived: Mapping[str, Anchor] | None = None,
    ) -> None:
        self.keys, self.legacy_last_id = keys, legacy_last_id
        # chain -> the end of its archived prefix (audit/archive.py), where its walk starts.
        self.archived = dict(archived or {})
        self.by_place = {(a.chain, a.seq): a for a in anchors if a.seq is not None}
        self.by_id = {a.last_id: a for a in anchors if a.seq is None}
        self.met: set[int] = set()  # id() of the anchors found in place
        self.ends: dict[str, int] = {}  # chain -> id of its last entry seen
        self.checked = 0

    def _anchor_problem(self, entry: JournalEntry) -> str:
        anchor = self.by_place.get((entry.chain, entry.seq)) or self.by_id.get(entry.id)
        if anchor is None:
            return ""
        self.met.add(id(anchor))
        if anchor.last_hash != entry.hash:
            return (
                f"hash {entry.hash[:16]}… differs from the checkpoint's "
                f"{anchor.last_hash[:16]}… (its entry {anchor.last_id}): the journal was "
                "rewritten from here or earlier"
            )
        return ""

    def archived_problem(self) -> ChainReport | None:
        """Anchors inside a chain's archived prefix: their rows are in the archive file, not
        here. One at the prefix's very end must carry its hash; the others count as met."""
        for anchor in [*self.by_place.values(), *self.by_id.values()]:
            end = self.archived.get(anchor.chain)
            if end is None or end.seq is None:
                continue
            inside = (
                anchor.seq <= end.seq if anchor.seq is not None else anchor.last_id <= end.last_id
            )
            if not inside:
                continue
            at_end = (
                anchor.seq == end.seq if anchor.seq is not None else anchor.last_id == end.last_id
            )
            if at_end and anchor.last_hash != end.last_hash:
                return ChainReport(
                    checked=0,
                    broken_id=anchor.last_id,
                    reason=f"hash differs from the archived stretch's end "
                    f"{end.last_hash[:16]}…: the journal was rewritten "
                    "before it was archived",
                )
            self.met.add(id(anchor))
        return None

    def latest_anchor(self, chain: str) -> Anchor | None:
        """The chain's anchor at the highest place, where an incremental walk starts."""
        placed = [a for (c, _seq), a in self.by_place.items() if c == chain]
        return max(placed, key=lambda a: a.seq or 0, default=None)

    def _start_problem(
        self, chain: str, start: Anchor, head: ChainHead | None
    ) -> ChainReport | None:
        assert start.seq is not None  # the caller's anchor names its place
        entry = JournalEntry.objects.filter(chain=chain, seq=start.seq).first()
        if entry is None:
            end = head.last_id if head is not None else 0
            return ChainReport(
                checked=self.checked,
                broken_id=start.last_id,
                reason=f"missing, though a checkpoint names it: the journal "
                f"ends at entry {end} (its tail was cut)",
            )
        reason = self._anchor_problem(entry) or link_problem(entry, self.keys, self.legacy_last_id)
        if reason:
            return ChainReport(checked=self.checked, broken_id=entry.id, reason=reason)
        return None

    def chain(
        self, chain: str, head: ChainHead | None, start: Anchor | None = None
    ) -> ChainReport | None:
        """Walk the chain up to its head, from its beginning or after `start` (an anchor whose
        entry is checked first, by one index lookup)."""
        entries = JournalEntry.objects.filter(chain=chain).order_by("seq")
        if head is not None:
            entries = entries.filter(seq__lte=head.last_seq)
        expected_prev, expected_seq, last_id = ZERO_HASH, None, None
        archived = self.archived.get(chain)
        if (
            archived is not None
            and archived.seq is not None
            and (start is None or start.seq is None or start.seq <= archived.seq)
        ):
            # The prefix was archived after its archive verified (audit/archive.py): the walk
            # links the first remaining row to the last archived one's hash.
            entries = entries.filter(seq__gt=archived.seq)
            expected_prev, expected_seq = archived.last_hash, archived.seq + 1
            last_id = archived.last_id
        elif start is not None and start.seq is not None:
            problem = self._start_problem(chain, start, head)
            if problem is not None:
                return problem
            if head is not None and head.last_seq < start.seq:
                return ChainReport(
                    checked=self.checked,
                    broken_id=start.last_id,
                    reason=f"stands past its chain's head (place "
                    f"{head.last_seq}), though a checkpoint names it: "
                    "the head was moved back",
                )
            entries = entries.filter(seq__gt=start.seq)
            expected_prev, expected_seq, last_id = start.last_hash, start.seq + 1, start.last_id
        for entry in entries.iterator(chunk_size=VERIFY_CHUNK):
            if expected_seq is not None and entry.seq != expected_seq:
                reason = f"follows entry {last_id}: entries in between are missing"
            elif entry.prev_hash != expected_prev:
                reason = "prev_hash is not the previous entry's hash"
            else:
                reason = (
                    link_problem(entry, self.keys, self.legacy_last_id)
                    or contour_problem(entry)
                    or self._anchor_problem(entry)
                )
            if reason:
                return ChainReport(checked=self.checked, broken_id=entry.id, reason=reason)
            self.checked += 1
            expected_prev, expected_seq, last_id = entry.hash, entry.seq + 1, entry.id
        last_seq = (expected_seq or 1) - 1
        if last_id is not None:
            self.ends[chain] = last_id
        if head is not None and head.last_seq > 0:
            if last_seq < head.last_seq:
                missing = (
                    head.last_id
                    if last_seq == head.last_seq - 1 or last_id is None
                    else last_id + 1
                )
                return ChainReport(
                    checked=self.checked,
                    broken_id=missing,
                    reason=f"missing: the head names entry {head.last_id}",
                )
            if expected_prev != head.last_hash:
                return ChainReport(
                    checked=self.checked - 1,
                    broken_id=last_id,
                    reason="the head's hash differs from this entry's",
                )
        return None

    def missing_anchor(self, *, point_check: bool = False) -> ChainReport | None:
        """The first anchor the walk did not meet; with point_check (an incremental walk, which
        skips older places) each is looked up by its place or id first."""
        unmet = sorted(
            (a for a in [*self.by_place.values(), *self.by_id.values()] if id(a) not in self.met),
            key=lambda a: a.last_id,
        )
        for anchor in unmet if point_check else []:
            found = (
                JournalEntry.objects.filter(chain=anchor.chain, seq=anchor.seq)
                if anchor.seq is not None
                else JournalEntry.objects.filter(id=anchor.last_id)
            )
            entry = found.only("id", "chain", "seq", "hash").first()
            reason = self._anchor_problem(entry) if entry is not None else ""
            if reason and entry is not None:  # a reason only ever names a found entry
                return ChainReport(checked=self.checked, broken_id=entry.id, reason=reason)
        unmet = [a for a in unmet if id(a) not in self.met]
        if not unmet:
            return None
        anchor = unmet[0]
        end = (
            self.ends.get(anchor.chain)
            if anchor.seq is not None
            else max(self.ends.values(), default=0)
        )
        return ChainReport(
            checked=self.checked,
            broken_id=anchor.last_id,
            reason=f"missing, though a checkpoint names it: the journal ends "
            f"at entry {end or 0} (its tail was cut)",
        )


def archived_ends() -> dict[str, Anchor]:
    """Each chain's archived prefix end: the last place of its last archived stretch."""
    ends: dict[str, Anchor] = {}
    rows = (
        SignedCheckpoint.objects.filter(archived_at__isnull=False)
        .order_by("chain", "to_seq")
        .values_list("chain", "to_seq", "last_id", "last_hash")
    )
    for chain, to_seq, last_id, last_hash in rows.iterator(chunk_size=VERIFY_CHUNK):
        ends[chain] = Anchor(last_id=last_id, last_hash=last_hash, chain=chain, seq=to_seq)
    return ends


def check_chain(anchors: Iterable[Anchor] = (), *, full: bool = True) -> ChainReport:
    """Walk every chain in order and report the first entry whose link does not hold.

    An entry is broken when its hash is not the HMAC of its content under the key it names (or
    names no configured key), its prev_hash is not the previous entry's hash, or its place does
    not follow the previous one (places are handed out without gaps, so a gap means a deleted
    row). Entries appended after a head is read are left for the next run; a head pointing past
    its chain's last entry means the tail was cut.

    Each anchor must still be in the journal: its entry present, with that very hash, at or
    below its chain's head. A cut tail with a rewritten head (and entries appended again after
    it) verifies on its own, but not against a checkpoint taken before the cut.

    An entry whose contour is not its chain's, or that stands past its chain's head (where
    the walk never goes), breaks the journal too (audit.places).

    full=False costs what is new: a chain with an anchor at a place is walked only after its
    latest such anchor (whose entry must still be there with its hash), and only chains with a
    head or an anchor are walked (a chain whose head row was removed is found by a full walk).
    """
    keys = journal_keys()
    legacy_last_id: int = settings.GATEWAY_JOURNAL_LEGACY_LAST_ID
    anchors = list(anchors)
    heads = {head.chain: head for head in ChainHead.objects.all()}
    placed = {a.chain for a in anchors if a.seq is not None}
    chains = sorted(
        set(heads)
        | (
            placed
            if not full
            else set(JournalEntry.objects.order_by().values_list("chain", flat=True).distinct())
        )
    )
    walk = Walk(keys, legacy_last_id, anchors, archived_ends())
    problem = walk.archived_problem()
    if problem is not None:
        return problem
    for chain in chains:
        start = None if full else walk.latest_anchor(chain)
        report = walk.chain(chain, heads.get(chain), start)
        if report is not None:
            return report
    missing = walk.missing_anchor(point_check=not full)
    if missing is not None:
        return missing
    stray = beyond_heads()
    if stray:
        entry, head_seq = stray[0]
        return ChainReport(
            checked=walk.checked, broken_id=entry.id, reason=beyond_head_problem(entry, head_seq)
        )
    return ChainReport(checked=walk.checked, broken_id=None)


def verify_chain(anchors: Iterable[Anchor] = ()) -> int | None:
    """Return the id of the first broken entry, or None when the whole chain holds."""
    return check_chain(anchors).broken_id
