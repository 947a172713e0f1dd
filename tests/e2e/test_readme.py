"""The README's quickstart, run as written on a copy of the checkout (issue 25, item 9 and the
C++ quickstart): the install lines build only what a user needs (evgate and evgate-verdict, no
unit tests) and install the package; the C++ quickstart configures, builds and runs
examples/cpp-extension, each command doing what the README says it does. Only
`scripts/install-deps` is left out: it installs Debian's packages as root, which this machine
already has.

It compiles the product and the example once each (minutes on two cores; through ccache when
the machine has it, set by the environment, so the commands stay as written).
"""

import re
import shutil
from pathlib import Path

from harness import REPO, CTestRun, child_env, run
from harness.product import product_source_dir

README = REPO / "README.md"


def block_after(text, heading, language):
    """The first ```<language> block after `heading`, as commands: continuation lines joined."""
    section = text[text.index(heading):]
    body = re.search(rf"^```{language}\n(.*?)^```", section, re.M | re.S).group(1)
    return body.replace("\\\n", " ").splitlines()


def checkout_copy(tmp_path):
    """The source tree without its build trees, VCS data and caches: what a fresh clone holds."""
    def ignored(directory, names):
        top = Path(directory) == source
        return [n for n in names if n in (".git", "__pycache__", ".pytest_cache") or (top and n.startswith("build"))]
    source = product_source_dir()
    copy = tmp_path / "checkout"
    shutil.copytree(source, copy, ignore=ignored, symlinks=True)
    return copy


# A command may compile the whole product from nothing on a loaded two-core machine.
COMMAND_TIMEOUT = 1500


def shell(line, cwd, env):
    return run(["bash", "-c", line], cwd=cwd, env=env, timeout=COMMAND_TIMEOUT)


def test_the_readme_quickstart_runs_as_written(tmp_path):
    text = README.read_text(encoding="utf-8")
    install = [line for line in block_after(text, "## Quickstart", "sh") if not line.startswith("scripts/install-deps")]
    cpp = block_after(text, "### A C++ project", "sh")
    snippet = block_after(text, "### A C++ project", "cmake")
    checkout = checkout_copy(tmp_path)

    # The README's CMake lines are the example's own.
    example = (checkout / "examples" / "cpp-extension" / "CMakeLists.txt").read_text()
    for line in snippet:
        code = line.split("#", 1)[0].strip()
        assert code and code in example, f"the README's line {code!r} is not in examples/cpp-extension/CMakeLists.txt"
    assert "enable_testing()" in [line.split("#", 1)[0].strip() for line in snippet]

    home = tmp_path / "home"
    home.mkdir()
    env = child_env(HOME=str(home))
    if shutil.which("ccache"):  # the commands as written; the compiler cache comes from the environment
        env.update(CMAKE_CXX_COMPILER_LAUNCHER="ccache", CCACHE_BASEDIR=str(checkout))

    for line in install:
        result = shell(line, checkout, env)
        assert result.returncode == 0, result.describe()
    # Only what a user needs: the tools, no unit test or test fixture program.
    assert (checkout / "build" / "tools" / "evgate").is_file()
    built = sorted(str(p.relative_to(checkout / "build")) for p in (checkout / "build").rglob("*")
                   if p.is_file() and p.stat().st_mode & 0o111 and "CMakeFiles" not in p.parts)
    assert built == ["tools/evgate", "tools/evgate-verdict"], built
    assert (home / ".local" / "bin" / "evgate").is_file()
    assert (home / ".local" / "share" / "EvidenceGate" / "cmake" / "EvidenceGateConfig.cmake").is_file()

    for line in cpp:
        result = shell(line, checkout, env)
        if "# before the build" in line:
            assert result.returncode != 0 and "geo_NOT_BUILT" in result.stdout, result.describe()
            assert re.search(r"pygeo: '.*pygeo[^']*\.so' does not exist", result.stdout), result.describe()
        elif "# everything" in line:
            assert result.returncode != 0, result.describe()
            assert "evidence-gate geo: 4 tests over" in result.stdout and "-> BLOCKED" in result.stdout, result.describe()
            assert "BLOCK tests/python/test_area.py::test_unit_square_has_area_one: order-dependent" in result.stdout
        else:
            assert result.returncode == 0, result.describe()
        if "-LE evidence" in line:
            ran = CTestRun(result, checkout / "build" / "geo").ran
            assert ran and all(name.startswith("geo_tests.") for name in ran), result.describe()
