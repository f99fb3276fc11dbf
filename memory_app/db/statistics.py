"""What the planner's statistics (the last ANALYZE) say about a column's elements."""

from __future__ import annotations

from dataclasses import dataclass

from memory_app.db.queries import fetch_one


@dataclass(frozen=True)
class ElementFrequencies:
    """The share of a table's rows holding each frequent element of an array or tsvector column."""

    rows: float  # pg_class.reltuples: the table's estimated row count
    frequencies: dict[str, float]
    least: float  # the lowest listed share: an element not listed is held by at most about this share

    def rows_at_most(self, element: str) -> float:
        """About how many rows of the whole table hold `element`, from above."""
        return self.rows * self.frequencies.get(element, self.least)


def element_frequencies(*, table: str, column: str) -> ElementFrequencies | None:
    """pg_stats' most common elements of `table.column` in the current schema, with their shares;
    None when the table was never analysed or the column has no element statistics."""
    row = fetch_one(
        "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples::float8 "
        "FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename "
        "JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = s.schemaname "
        "WHERE s.schemaname = current_schema() AND s.tablename = %s AND s.attname = %s",
        [table, column],
    )
    if row is None or row[0] is None or row[1] is None or not row[2] or row[2] <= 0:
        return None
    elements = [str(e) for e in row[0]]
    # After the per-element shares come their minimum and maximum (and, for arrays, the share of
    # null elements): only the first len(elements) belong to an element.
    shares = [float(f) for f in row[1][: len(elements)]]
    if not shares:
        return None
    return ElementFrequencies(float(row[2]), dict(zip(elements, shares, strict=True)), min(shares))
