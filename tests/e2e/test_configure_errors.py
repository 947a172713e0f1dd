"""Configure-time errors, RunCMake style.

Every directory tests/cmake/errors/<case>/ holds a tiny consumer CMakeLists.txt (and the
input files it names) plus expected-stderr.txt, a Python regular expression. Each case is
configured against EVIDENCE_GATE_BUILD_DIR; configuring must fail and its stderr, with
every run of whitespace folded to one space (CMake wraps long messages), must match.
With the build-tree package the tool is an imported target, so the module validates the
suite's input files (fixtures manifest, quarantine) at configure time with `evgate check`.
"""

import re

import pytest

from harness import REPO, cmake_configure, source_tree_untouched

CASES_DIR = REPO / "tests" / "cmake" / "errors"
CASES = sorted(p.name for p in CASES_DIR.iterdir() if (p / "CMakeLists.txt").is_file())


def folded(text):
    return re.sub(r"\s+", " ", text).strip()


def test_every_case_has_an_expectation():
    assert len(CASES) >= 9, f"expected the configure-error cases in {CASES_DIR}, found {CASES}"
    lacking = [case for case in CASES if not (CASES_DIR / case / "expected-stderr.txt").is_file()]
    assert not lacking, f"cases without expected-stderr.txt: {lacking}"


@pytest.mark.parametrize("case", CASES)
def test_configure_fails_with_a_message_naming_the_fault(case, tmp_path, build_dir):
    source = CASES_DIR / case
    expected = (source / "expected-stderr.txt").read_text().strip()
    with source_tree_untouched(source):
        result = cmake_configure(source, tmp_path / "build", f"EvidenceGate_DIR={build_dir}")
    assert result.returncode != 0, f"configuring {case} must fail:\n{result.describe()}"
    assert re.search(expected, folded(result.stderr)), (
        f"stderr of {case} does not match {expected!r} (whitespace folded):\n{result.stderr}")
    assert "CMake Error" in result.stderr and "evidence_gate_add_suite" in result.stderr, (
        f"the error must point at the consumer's evidence_gate_add_suite() call:\n{result.stderr}")


def test_the_module_documents_every_keyword_and_its_default():
    """The reST block atop EvidenceGate.cmake is the reference: every keyword the function
    parses is in the synopsis and has a paragraph giving its default, and the defaults the
    function sets are the documented ones."""
    text = (REPO / "modules" / "EvidenceGate.cmake").read_text()
    doc = text[:text.index("#]=====")]
    code = text[text.index("function(evidence_gate_add_suite"):]
    keywords = [kw for kind in ("one_value", "multi_value")
                for kw in re.search(rf"set\({kind} ([A-Z_ ]+)\)", code).group(1).split()]
    assert len(keywords) >= 17, keywords
    synopsis = doc[doc.index(".. code-block:: cmake"):doc.index("Registers the CTest tests")]
    paragraphs = dict(re.findall(r"\n  ``([A-Z_]+)[^`\n]*``\n((?:    .*\n)+)", doc))
    for keyword in keywords:
        assert f"[{keyword} " in synopsis, f"{keyword} is missing from the synopsis:\n{synopsis}"
        assert keyword in paragraphs, f"{keyword} has no paragraph in the module's documentation"
        assert "Default:" in paragraphs[keyword], f"the paragraph of {keyword} does not give its default"
    # Every count has a bound, and its paragraph says it.
    bounds = re.search(r"set\(bounds ([^)]*)\)", code).group(1).split()
    assert len(bounds) % 3 == 0 and set(bounds[::3]) <= set(keywords), bounds
    for keyword, low, high in zip(bounds[::3], bounds[1::3], bounds[2::3]):
        assert re.search(rf"From {low} to {re.escape(f'{int(high):,}')}\b", folded(paragraphs[keyword])), (
            f"{keyword} is bounded to {low}..{high}, its paragraph does not say so:\n{paragraphs[keyword]}")
    defaults = re.search(r"set\(defaults ([^)]*)\)", code).group(1).split()
    assert len(defaults) % 2 == 0 and set(defaults[::2]) <= set(keywords), defaults
    for keyword, value in zip(defaults[::2], defaults[1::2]):
        documented = "CMAKE_CURRENT_SOURCE_DIR" if value == "." else value  # ROOT: relative to it
        assert re.search(rf"Default: (``)?{re.escape(documented)}\b", paragraphs[keyword]), (
            f"{keyword} defaults to {value}, its paragraph says otherwise:\n{paragraphs[keyword]}")
