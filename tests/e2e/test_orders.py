"""What the order families and the alone pass find that global shuffles miss.

Two generated consumer projects, each run with real CMake and CTest: a dependence inside one
module that a module-scoped fixture hides whenever another module's test runs in between (as a
global shuffle nearly always puts one), and a test that needs any one of seven state-setters,
so that only an order putting it before all seven exposes it.
"""

import textwrap

import pytest

from harness import Ledger, cmake_configure, ctest

SUITE = "orders"


def project(tmp_path, files, arguments):
    root = tmp_path / "src"
    for rel, text in {**files, "pytest.ini": "[pytest]\n",
                      "CMakeLists.txt": "cmake_minimum_required(VERSION 3.21)\nproject(orders NONE)\nenable_testing()\n"
                                        "find_package(EvidenceGate CONFIG REQUIRED)\n"
                                        f"evidence_gate_add_suite({SUITE} TESTS tests PERTURB OFF PER_TEST OFF {arguments})\n"}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def evidence(tmp_path, build_dir, files, arguments):
    root = project(tmp_path, files, arguments)
    binary = tmp_path / "build"
    configured = cmake_configure(root, binary, f"EvidenceGate_DIR={build_dir}")
    assert configured.returncode == 0, configured.describe()
    result = ctest(binary, "-j2", "-L", "evidence")
    return result, Ledger(binary, SUITE)


# A module whose tests share a module-scoped fixture that starts them from a clean slate; the
# polluter leaves the slate dirty for any later test of the same module, until the module's
# fixture is set up again (which pytest does when another module's test ran in between).
SLATE = {
    "tests/test_slate.py": """
        import pytest

        SLATE = {}

        @pytest.fixture(scope="module", autouse=True)
        def clean_slate():
            SLATE.clear()
            yield

        def test_a_victim():
            assert "dirty" not in SLATE

        def test_b_polluter():
            SLATE["dirty"] = True
    """,
    **{f"tests/test_other_{m}.py": "".join(f"\ndef test_{i}():\n    pass\n" for i in range(6)) for m in range(8)},
}


@pytest.mark.parametrize("orders, found", [("global", False), ("mixed", True)])
def test_a_dependence_inside_a_module_shows_in_module_contiguous_orders(tmp_path, build_dir, orders, found):
    _, ledger = evidence(tmp_path, build_dir, SLATE, f"SEEDS 4 ORDERS {orders} ALONE OFF")
    victim = ledger.tests["tests/test_slate.py::test_a_victim"]
    if found:
        assert victim["verdict"] == "order-dependent", ledger
        assert victim.get("partner") == "tests/test_slate.py::test_b_polluter", ledger
    else:  # every global shuffle of these seeds puts another module between the two
        assert victim["verdict"] == "stable", ledger


# test_needs passes after any one of seven setters, collected among them: the collection order
# and the reversed one both run a setter first, a shuffle exposes it only when it comes before
# all seven (1 order in 8); the alone pass runs it first after the collection.
SETTERS = {
    "tests/test_state.py": "".join([
        "STATE = set()\n",
        *(f"\ndef test_setter_{i}():\n    STATE.add({i})\n" for i in range(3)),
        "\ndef test_needs():\n    assert STATE, 'nothing set up'\n",
        *(f"\ndef test_setter_{i}():\n    STATE.add({i})\n" for i in range(3, 7)),
    ]),
}


@pytest.mark.parametrize("alone", ["OFF", "AUTO"])
def test_the_alone_pass_finds_a_test_that_needs_a_state_setter(tmp_path, build_dir, alone):
    _, ledger = evidence(tmp_path, build_dir, SETTERS, f"SEEDS 1 ALONE {alone}")
    needs = ledger.tests["tests/test_state.py::test_needs"]
    if alone == "OFF":
        assert needs["verdict"] == "stable", ledger
        return
    assert needs["verdict"] == "order-dependent", ledger
    assert needs.get("partner_role") == "state-setter", ledger
    assert needs.get("partner", "").startswith("tests/test_state.py::test_setter_"), ledger
    assert any(run.startswith("first.") for run in needs["outcomes"]), needs
