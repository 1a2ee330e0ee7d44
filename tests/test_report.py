"""blockcd.report: the one layout in which chapters print a check, and whether it holds."""

import pytest

from blockcd import report


def test_agree_relative_holds_and_fails_at_the_stated_tolerance(capsys):
    assert report.agree("K ratio", 1.14, 1.0, rel=0.15)
    assert "measured 1.14, predicted 1 (+14.0%, within 15%)" in capsys.readouterr().out
    assert not report.agree("K ratio", 1.16, 1.0, rel=0.15)
    assert capsys.readouterr().out.rstrip().endswith("FAILS")


def test_agree_standard_errors_counts_k_of_them(capsys):
    assert report.agree("variance", 1.29, 1.0, se=0.1)          # 2.9 s.e.
    assert "2.9 s.e. of 0.1, within 3" in capsys.readouterr().out
    assert not report.agree("variance", 1.31, 1.0, se=0.1)      # 3.1 s.e.
    assert report.agree("variance", 1.31, 1.0, se=0.1, k=4)


def test_agree_absolute_and_nonfinite(capsys):
    assert report.agree("identity", 1.0 + 1e-13, 1.0, tol=1e-12)
    assert not report.agree("identity", 1.0 + 1e-11, 1.0, tol=1e-12)
    assert not report.agree("diverged", float("nan"), 1.0, tol=1e300)


def test_below_reports_the_share_of_the_bound(capsys):
    assert report.below("E||g||^2/(2D)", 0.5, 2.0)
    assert "measured 0.5 <= 2 (25% of the bound)" in capsys.readouterr().out
    assert not report.below("E||g||^2/(2D)", 2.5, 2.0)


def test_table_aligns_columns_and_formats_integers_exactly(capsys):
    report.table(["tau", "K"], [[1, 1234.5678], [100, 0.5]], spec=["d", ".4g"])
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["tau     K", "  1  1235", "100   0.5"]


@pytest.mark.parametrize("kwargs, match", [
    ({}, "exactly one of rel, tol, se"),
    ({"rel": 0.1, "tol": 1.0}, "exactly one of rel, tol, se"),
    ({"rel": -0.1}, "rel must be >= 0"),
    ({"se": 0.1, "k": 0}, "k must be > 0"),
])
def test_agree_rejects_bad_tolerances(kwargs, match):
    with pytest.raises(ValueError, match=match):
        report.agree("x", 1.0, 1.0, **kwargs)


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="predicted must be nonzero"):
        report.agree("x", 1.0, 0.0, rel=0.1)
    with pytest.raises(TypeError, match="measured must be a real number"):
        report.agree("x", "1", 1.0, rel=0.1)
    with pytest.raises(ValueError, match=r"rows\[0\] has 1 entries, the header 2"):
        report.table(["a", "b"], [[1]])
    with pytest.raises(ValueError, match="spec must be one format or 2"):
        report.table(["a", "b"], [[1, 2]], spec=["g"])
