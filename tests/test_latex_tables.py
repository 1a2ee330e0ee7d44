"""The PDF's tables (book/_ext/latex_book.py): a table wider than six columns is split into narrower
ones that repeat its first column, and a long table gets columns that wrap. Checked on small
doctrees; tests/test_pdf.py checks the built PDF."""

import sys
from pathlib import Path

from docutils import nodes
from docutils.core import publish_doctree

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import latex_book  # noqa: E402


def table_doc(columns: int, rows: int) -> nodes.document:
    lines = [".. list-table::", "   :header-rows: 1", "   :name: tbl-x", ""]
    for r in range(rows + 1):
        for c in range(columns):
            text = f"head {c}" if r == 0 else f"cell {r} {c}" + (" with a long meaning" * 5 if c == 1 else "")
            lines.append(f"   {'*' if c == 0 else ' '} - {text}")
    return publish_doctree("\n".join(lines) + "\n", settings_overrides={"report_level": 5})


def cells(table: nodes.table) -> list[list[str]]:
    return [[entry.astext() for entry in row.children] for row in table.findall(nodes.row)]


def test_a_wide_table_is_split_into_tables_that_repeat_its_first_column():
    doc = table_doc(columns=10, rows=4)
    whole = cells(next(iter(doc.findall(nodes.table))))
    latex_book._split_wide_tables(doc)
    parts = list(doc.findall(nodes.table))
    assert len(parts) == 3
    assert [len(cells(p)[0]) for p in parts] == [4, 4, 4]
    for k, part in enumerate(parts):
        expected = [[row[0]] + row[1 + 3 * k:4 + 3 * k] for row in whole]
        assert cells(part) == expected, k
        assert "longtable" in part["classes"] and "colwidths-given" in part["classes"]
        widths = [c["colwidth"] for c in part.findall(nodes.colspec)]
        assert widths[0] == latex_book.FIRST_COLUMN and sum(widths) == 100
    # every cell once, besides the repeated first column; the label stays on the first part
    assert sum(len(row) - 1 for p in parts for row in cells(p)) == sum(len(row) - 1 for row in whole)
    assert parts[0]["ids"] and not parts[1]["ids"] and not parts[2]["ids"]
    leads = [p.astext() for p in doc.findall(nodes.paragraph) if p.astext().startswith("The table, continued")]
    assert leads == ["The table, continued: head 4, head 5, head 6.", "The table, continued: head 7, head 8, head 9."]


def test_a_narrow_table_is_left_as_it_is():
    doc = table_doc(columns=latex_book.MAX_COLUMNS, rows=3)
    latex_book._split_wide_tables(doc)
    latex_book._fit_long_tables(doc)
    (table,) = doc.findall(nodes.table)
    assert len(cells(table)[0]) == latex_book.MAX_COLUMNS and "longtable" not in table["classes"]


def test_a_long_table_gets_widths_from_its_text():
    doc = table_doc(columns=3, rows=latex_book.LONG_TABLE_ROWS + 5)
    latex_book._fit_long_tables(doc)
    (table,) = doc.findall(nodes.table)
    widths = [c["colwidth"] for c in table.findall(nodes.colspec)]
    assert "longtable" in table["classes"] and "colwidths-given" in table["classes"]
    assert widths[1] > widths[0] and widths[1] > widths[2] and min(widths) >= 13, widths
    assert abs(sum(widths) - 100) <= 2


def test_a_proof_is_running_text_ending_in_a_square():
    # sphinx-proof: an admonition of class "proof" without a title, "Proof. " before its first line
    doc = publish_doctree(".. admonition:: x\n\n   y\n", settings_overrides={"report_level": 5})
    proof = nodes.admonition("", nodes.paragraph("", "Proof. It holds."), nodes.math_block("", "a = b"),
                             classes=["proof", "proof"])
    theorem = nodes.admonition("", nodes.title("", "Theorem 1"), nodes.paragraph("", "A claim."),
                               classes=["theorem"])
    doc += [theorem, proof]
    latex_book._unbox_proofs(doc)
    assert [a["classes"] for a in doc.findall(nodes.admonition)] == [["admonition-x"], ["theorem"]]
    (body,) = [c for c in doc.findall(nodes.container) if "blockcd-proof" in c["classes"]]
    assert body.astext().startswith("Proof. It holds.") and isinstance(body[1], nodes.math_block)
    assert isinstance(body[-1], nodes.raw) and "square" in body[-1].astext()
