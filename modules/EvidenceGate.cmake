#[=======================================================================[.rst:
EvidenceGate
------------

Run a pytest suite as evidence: several seed-shuffled orders with fixture leases, a
per-test ledger, and a gate that fails exactly when a row blocks. All as CTest tests.

.. command:: evidence_gate_add_suite

  .. code-block:: cmake

    evidence_gate_add_suite(<name>
                            [ROOT dir]
                            [TESTS path...]
                            [SEEDS n]
                            [ORDERS mixed|module|global]
                            [ALONE AUTO|ON|OFF]
                            [RERUNS n]
                            [LOCALISE n]
                            [FIXTURES file]
                            [BASELINE file [BASELINE_TOLERANCE n]]
                            [QUARANTINE file]
                            [RUNNER_BUNDLES path...]
                            [PERTURB ON|OFF]
                            [PER_TEST ON|OFF]
                            [PYTHON exe]
                            [PYTEST_ARGS arg...]
                            [ENVIRONMENT VAR=value...]
                            [PYTHON_PATH_PREPEND path...]
                            [LIBRARY_PATH_PREPEND path...]
                            [DEPENDS target...]
                            [TIMEOUT seconds]
                            [TEST_TIMEOUT seconds]
                            [ISOLATION fork|process]
                            [LABELS label...])

  Registers the CTest tests ``<name>.manifest``, ``<name>.fixtures`` and ``<name>.restore``
  (when there are fixture groups), ``<name>.receipt``, ``<name>.seed.<k>`` for k = 0..SEEDS,
  ``<name>.perturbed`` (unless ``PERTURB OFF``), ``<name>.alone`` (unless ``ALONE OFF``), ``<name>.rerun``,
  ``<name>.localise``, ``<name>.ledger``,
  ``<name>.gate``, ``<name>.release`` and one ``<name>/<node id>`` entry per test (unless ``PER_TEST OFF``), tied by CTest fixtures so that
  ``ctest -L evidence``, ``ctest -R '<name>\.gate'`` and ``ctest -j N`` all work. Every
  test carries the labels ``evidence`` and ``<name>``. Everything is written below
  ``${CMAKE_CURRENT_BINARY_DIR}/evidence/<name>/``; nothing is written to the source tree.
  ``<name>.restore`` runs after every step that touches the fixture groups, whether they
  passed or not, and completes the restore of a run whose step was killed (by its CTest
  ``TIMEOUT``, say).

  ``ctest`` runs a directory's tests only where testing is enabled, there and in every
  directory above it: call ``enable_testing()`` (or ``include(CTest)``) in the top-level
  ``CMakeLists.txt``, before any ``add_subdirectory()``. Once the whole project is configured,
  configuration warns when it is not: naming the file that declares the suite and the fix, or,
  for a suite in a subdirectory that enables testing itself, the directory to run ``ctest`` in.

  One ``ctest`` at a time per build tree: each step claims the evidence directory for the
  ``ctest`` that runs it (its parent process, known by pid and start time); the steps of one
  invocation share it, a second ``ctest`` started meanwhile fails its steps at once with
  ``another ctest is running in this build tree (pid N)``. A claim whose ``ctest`` is gone
  is taken over. ``evgate`` commands run by hand claim nothing.

  Every pytest process runs in a sandbox: a ``HOME`` and ``TMPDIR`` of its own below
  ``evidence/<name>/sandbox/<run>/``, empty when its run starts, so runs that go side by side
  never meet there and the user's home is never written. A test that needs something in the
  home directory (``~/.myapp.ini``) does not find it, where plain ``pytest`` would:
  ``receipt.json`` records the sandbox (``sandbox``), and the ledger's ``WARN`` row ``sandbox``
  names every test skipped in every run for a reason that points at the home or temp
  directory. Give such a test what it needs (a fixture that writes it), or pin ``HOME`` with
  ``ENVIRONMENT``.

  Paths (ROOT, the build directory) may hold ``;``: the module escapes it wherever a CMake
  list would split it.

  Generator expressions (``$<TARGET_FILE_DIR:mymodule>``, ``$<CONFIG>``) work in ``PYTHON``,
  ``PYTEST_ARGS``, ``ENVIRONMENT``, ``PYTHON_PATH_PREPEND``, ``LIBRARY_PATH_PREPEND``: they
  are evaluated per configuration when the build system is generated (``file(GENERATE)``
  writes ``suite.json``; with a multi-config generator one ``suite-<config>.json`` each, the
  one of ``ctest -C`` used). A value they produce is written as it is: it must not hold
  ``"``, ``\`` or a line break.

  Every step also needs ``<name>_NOT_BUILT``, an entry ``ctest`` registers only when evgate or
  a ``DEPENDS`` target is not built yet: it fails naming each with its file, and the steps do
  not run (``Failed test dependencies: <name>_NOT_BUILT``), so nothing passes with zero results.

  Labels: every step and entry carries ``evidence`` and ``<name>``, so ``ctest -LE evidence``
  is the C++ loop: it runs none of them, and the per-test discovery ``ctest`` runs when it
  starts collects nothing either (it reads ctest's ``-L``/``-LE`` options), so no Python runs
  at all. A plain ``ctest`` runs the suite, as CI does: a gate one has to remember to ask for
  is no gate.

  ``ROOT dir``
    The pytest project root: pytest always runs with ``--rootdir`` = ROOT and cwd = ROOT.
    Relative to ``CMAKE_CURRENT_SOURCE_DIR``. Default: ``CMAKE_CURRENT_SOURCE_DIR``.

  ``TESTS path...``
    Paths handed to pytest, relative to ROOT; each must exist and lie below ROOT (pytest names
    tests by their path below its rootdir). Default: pytest's own ``testpaths``.

  ``SEEDS n``
    Number of shuffled orders; the collection order (seed 0) runs as well. A seed whose order
    is one an earlier seed already ran (a suite of one test has one order, of two tests two) is
    skipped, and the ledger's ``orders`` row says how many distinct orders ran and why. From 0
    to 1,000. Default: 8.

  ``ORDERS mixed|module|global``
    Which family each seed's order is; seed 0 is always the collection order. ``mixed``:
    seed 1 is the reversed collection order, then module-contiguous shuffles (even seeds:
    modules, then classes, then tests, each shuffled by a keyed hash, so a module's set-up and
    tear-down stay around its tests) and global shuffles (odd seeds: any test anywhere) in
    turn. ``module``: seed 1 reversed, then module-contiguous shuffles only. ``global``: every
    seed a global shuffle. Every order is a pure, subset-stable function of the seed and the
    node ids. Default: ``mixed``.

  ``ALONE AUTO|ON|OFF``
    The alone pass, ``<name>.alone``: every test once as the first test after the collection,
    a fork each (runs ``first.<n>``, n its place in the collection). A test that fails there
    but passes in the orders needs an earlier test to set state up: it is rerun alone, and
    ``<name>.localise`` names that test. ``AUTO`` spends on the pass at most a quarter of what
    the seed runs cost (from what a seed run took), or 5 s when that is more, in collection
    order; the tests it did not reach run alone in the next ``ctest`` on the same tree, whose kept runs hold the rest
    (``ON``: every test not yet run alone). Default: ``AUTO``.

  ``RERUNS n``
    How often an order is rerun when a test's outcome differs between orders, to tell
    order dependence (same outcome every time in one order) from nondeterminism. From 0 to
    100. Default: 2.

  ``LOCALISE n``
    The pytest runs (forks) ``<name>.localise`` may spend on each order-dependent test to
    name the partner it hangs on (what one test leaves unused, the next may spend): the
    partner sets found for earlier tests first, then delta debugging over the order that
    broke it, verified several times. A nondeterministic test is never given a partner, nor
    is a best candidate the budget cut short. ``0`` turns it off. From 0 to 1,000. Default: 30.

  ``FIXTURES file``
    The fixture-group manifest (``name: glob`` a line), relative to ROOT. Default:
    ``ROOT/fixtures.manifest`` if it exists.

  ``BASELINE file``
    The committed collection baseline ``{"collected": N, "tests": [...]}``, relative to
    ROOT. Default: none.

  ``BASELINE_TOLERANCE n``
    How many tests the collection may drop below the baseline before it blocks. From 0 to
    1,000,000. Default: 0.
    ``EVIDENCE_GATE_UPDATE_BASELINE=1 ctest -R '<name>\.baseline-update'`` writes or
    refreshes the baseline from the current collection (the test is not in the ``evidence``
    label, and ``ctest`` registers it only when the variable is set: a plain ``ctest`` does
    not list a step it would skip).

  ``QUARANTINE file``
    Dated exceptions, one JSON object a line, relative to ROOT. Default: none.

  ``RUNNER_BUNDLES path...``
    Results from other machines (evidence directories or JUnit XML files). Default: none;
    the environment variable ``EVIDENCE_GATE_RUNNER_BUNDLES`` (a ``;`` list) adds more.

  ``PERTURB ON|OFF``
    An extra run of the collection order in a deliberately different environment on this
    machine: a half-hour timezone far from the local one, another locale, another
    ``PYTHONHASHSEED``, a fresh ``HOME`` and temp dir, one CPU. A test that passes locally
    and fails there is a ``portability-gap``. Default: ``ON``.

  ``PER_TEST ON|OFF``
    One CTest entry per pytest test, named ``<name>/<node id>`` (control characters
    written as ``\xHH``), whose result mirrors its ledger row: ``block`` fails, ``pass``
    and ``defer`` pass (the output says why and until when), ``skipped`` is skipped, and a
    test the ledger does not know fails. The first line of its output is the ledger's reason
    (``order-dependent: fails after ...``), and so is its CTest completion status (what CDash
    and ``ctest -T Test`` show). The entries are discovered by ``ctest`` itself each
    time it starts (collection with the suite's interpreter, arguments and environment), so
    new tests appear without re-running CMake; the collection runs again only when what it
    depends on changed (see the README). Default: ``ON``.

  ``PYTHON exe``
    The interpreter that runs pytest; a generator expression (``$<TARGET_FILE:...>``) is
    checked when the manifest step runs. When none can ``import pytest``, configuration warns
    naming every one it tried and the suite is one failing test ``<name>_NO_PYTEST`` saying
    the same (the rest of the project configures, and its tests run);
    ``EVIDENCE_GATE_REQUIRE_PYTEST=ON`` makes it a configure error. Configuration says which
    interpreter the suite takes and why, and warns when a ``DEPENDS`` target is an extension
    module built for another interpreter (its file name's tag, ``.cpython-312-...so``, is not
    the suite interpreter's). Default: the interpreter the project found, if any:
    ``Python3_EXECUTABLE``, ``Python_EXECUTABLE`` or ``PYTHON_EXECUTABLE``, in that order
    (``find_package(Python3)``, ``find_package(Python)``, pybind11's and ``FindPythonInterp``'s:
    the interpreter an extension module is built for), taken or refused but never swapped for
    another; else the first of ``python3`` on ``PATH``, ``/usr/bin/python3`` and
    ``/usr/local/bin/python3`` that can ``import pytest``.

  ``PYTEST_ARGS arg...``
    Extra pytest arguments for every run. Default: none.

  ``ENVIRONMENT VAR=value...``
    Extra environment for every run; a variable set here is pinned (``HOME``, ``TMPDIR``
    and the XDG directories are otherwise each run's own). A ``PYTHONPATH`` given here is
    appended after the plugin's directory, never replacing it. Default: none.

  ``PYTHON_PATH_PREPEND path...``
    Directories put first on ``PYTHONPATH`` of every pytest process (collections, runs,
    probes, replays), after the plugin's own directory, which nothing displaces: where the
    build puts an extension module (``$<TARGET_FILE_DIR:mymodule>``). Relative to ROOT; no
    ``:``. The per-test discovery collects again when a module appears in one or is rebuilt.
    Default: none.

  ``LIBRARY_PATH_PREPEND path...``
    Directories put first on ``LD_LIBRARY_PATH`` of every pytest process: where the build puts
    a shared library the tests load (``ctypes``, or an extension's dependency). Relative to
    ROOT; no ``:``. Default: none.

  ``DEPENDS target...``
    Targets whose files the suite needs built (an extension module, a library). While one's
    file does not exist, ``ctest`` registers the failing entry ``<name>_NOT_BUILT`` naming it,
    and no step runs. The per-test discovery collects again when one is rebuilt, so the first
    ``ctest`` after the build has every per-test entry. Default: none.

  ``TIMEOUT seconds``
    Bound on each pytest process; the test that hangs is ``interrupted`` and the rest of
    its order runs in a fresh process. From 1 to 86,400 (a day). Default: 600. Every CTest
    step gets a CTest ``TIMEOUT`` derived from it (T), so that a step that is stuck itself (a test that stops
    ``evgate`` with ``SIGSTOP``) still ends: ``2T + 30`` for a step that runs at most one
    pytest process (fixtures, manifest, receipt, restore, ledger, gate, baseline-update:
    the process and a wait for another build tree's run over the same ROOT); ``3T + 30``
    for a run (``seed.<k>``, ``perturbed``: the run, the rest of its order after a hang,
    and that wait); ``(SEEDS + 2) x (2 x RERUNS + 2) x T + 30`` for ``rerun`` (every run
    redone alone and every order rerun, one after another, and each rerun once more alone to
    confirm a disagreement); ``(10 x LOCALISE + 2) x T + 30`` for
    ``localise`` (its whole budget of pytest runs); 60 s for the per-test entries, which
    read one record. A step ended by its timeout fails; the steps that need it do not run,
    so the gate is never PASS, and ``<name>.restore`` puts the fixture groups back.

  ``TEST_TIMEOUT seconds``
    Bound on one test, setup and teardown included, in every run, rerun and localisation
    probe: a test past it is ``interrupted`` ("exceeded TEST_TIMEOUT"), its pytest process is
    killed and the rest of its order goes on in a new one, so a hanging test costs at most
    this per occurrence. ``0`` turns it off (``TIMEOUT`` still bounds each process).
    From 0 to 86,400. Default: 120.

  ``ISOLATION fork|process``
    How the runs' pytest processes start. ``fork``: the receipt's collection stays, collected,
    as a server, and every run, rerun and localisation probe is a fork of it (the perturbed
    run is always a fresh interpreter); where forking is unsafe (not Linux, threads or child
    processes alive after collection, a collection error, a plugin answering
    ``pytest_evidence_gate_fork_unsafe``, ``ctest`` not running the steps) each run starts a
    process instead, and the receipt and every run record say why. ``process``: a fresh
    interpreter each. Either way every process of an invocation has the same
    ``PYTHONHASHSEED`` (chosen at random by the receipt step and recorded in
    ``receipt.json``, unless the suite sets one), so both give the same ledger. ``<name>.release``
    stops the server after the last run; it also ends when its ``ctest`` is gone, or after 15
    minutes without a run. Default: ``fork``.

  ``LABELS label...``
    Extra CTest labels. Default: none.

  State kept outside the build tree (the lock, the span log and the registry of build trees
  of each ROOT: what decides what a restore writes into a source tree) is per user:
  ``EVIDENCE_GATE_STATE_DIR`` if set in the environment, else ``$XDG_RUNTIME_DIR/evidence-gate``,
  else ``<temp dir>/evidence-gate-<uid>``. It is created with mode 0700 and refused, with an
  error naming it, unless it is a directory (not a link) of the running user with no group or
  other permission bits.
#]=======================================================================]

include_guard(GLOBAL)
# Quoting, the interpreter, argument checks and the per-test entries: beside this file.
include("${CMAKE_CURRENT_LIST_DIR}/EvidenceGateHelpers.cmake")

function(evidence_gate_add_suite name)
  set(options "")
  set(one_value ROOT SEEDS RERUNS LOCALISE FIXTURES BASELINE BASELINE_TOLERANCE QUARANTINE PERTURB PER_TEST PYTHON TIMEOUT TEST_TIMEOUT ISOLATION ORDERS ALONE)
  set(multi_value TESTS RUNNER_BUNDLES PYTEST_ARGS ENVIRONMENT LABELS PYTHON_PATH_PREPEND LIBRARY_PATH_PREPEND DEPENDS)
  cmake_parse_arguments(PARSE_ARGV 1 arg "${options}" "${one_value}" "${multi_value}")

  # What is not understood is rejected, never ignored: a typo must not pass for a default.
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "Unknown keywords given to evidence_gate_add_suite(): \"${arg_UNPARSED_ARGUMENTS}\"")
  endif()
  # An empty list is a fine value for a list keyword (PYTEST_ARGS ${maybe_empty}); a
  # one-value keyword without its value is a mistake.
  set(missing ${arg_KEYWORDS_MISSING_VALUES})
  if(missing)
    list(REMOVE_ITEM missing ${multi_value})
  endif()
  if(missing)
    message(FATAL_ERROR "Keywords given to evidence_gate_add_suite() without a value: \"${missing}\"")
  endif()
  if(NOT name MATCHES "^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
    message(FATAL_ERROR "evidence_gate_add_suite(): the suite name \"${name}\" may hold only letters, digits, '_', '.' and '-'")
  endif()
  get_property(taken DIRECTORY PROPERTY _EVIDENCE_GATE_SUITES)
  if(name IN_LIST taken)
    message(FATAL_ERROR "evidence_gate_add_suite(): a suite named \"${name}\" already exists in this directory")
  endif()
  set_property(DIRECTORY APPEND PROPERTY _EVIDENCE_GATE_SUITES "${name}")

  # One default per keyword, as the documentation above gives them (ROOT is relative to
  # CMAKE_CURRENT_SOURCE_DIR: `.` is that directory, whatever its path holds).
  set(defaults ROOT . SEEDS 8 RERUNS 2 LOCALISE 30 BASELINE_TOLERANCE 0 TIMEOUT 600 TEST_TIMEOUT 120 ISOLATION fork
      ORDERS mixed ALONE AUTO PERTURB ON PER_TEST ON)
  while(defaults)
    list(POP_FRONT defaults keyword default)
    if(NOT DEFINED arg_${keyword})
      set(arg_${keyword} "${default}")
    endif()
  endwhile()

  # Every value checked, in CMake's words; paths other than ROOT are relative to ROOT.
  cmake_path(ABSOLUTE_PATH arg_ROOT BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE OUTPUT_VARIABLE root)
  string(REGEX REPLACE "(.)/$" "\\1" root "${root}")
  if(NOT IS_DIRECTORY "${root}")
    message(FATAL_ERROR "evidence_gate_add_suite(): ROOT is not a directory:\n  Path: '${root}'")
  endif()
  # ROOT and the build tree by their real paths, once: pytest names tests from the real path of
  # its working directory, and evgate compares paths below both (a link on the way, as with
  # `cmake -S link`, would otherwise cost every node id its prefix).
  file(REAL_PATH "${root}" root)
  file(REAL_PATH "${CMAKE_CURRENT_BINARY_DIR}" binary_dir)
  foreach(path IN LISTS arg_TESTS)
    string(REGEX REPLACE "::.*" "" file_part "${path}")
    # pytest names a test by its path below the rootdir: one outside ROOT is no test of this suite.
    cmake_path(ABSOLUTE_PATH file_part BASE_DIRECTORY "${root}" NORMALIZE OUTPUT_VARIABLE tests_path)
    cmake_path(IS_PREFIX root "${tests_path}" NORMALIZE inside)
    if(NOT inside)
      message(FATAL_ERROR "evidence_gate_add_suite(): TESTS is outside ROOT (pytest collects below its rootdir, ROOT):\n"
                          "  Path: '${tests_path}'\n  ROOT: '${root}'")
    endif()
    _evidence_gate_existing_path(ignored TESTS "${file_part}" "${root}")
  endforeach()
  # Each count within its bound: beyond it a value is a typo or a plan that cannot finish (SEEDS
  # registers a CTest step per seed, and every CTest timeout is a product of the counts).
  set(bounds SEEDS 0 1000 RERUNS 0 100 LOCALISE 0 1000 BASELINE_TOLERANCE 0 1000000 TIMEOUT 1 86400 TEST_TIMEOUT 0 86400)
  while(bounds)
    list(POP_FRONT bounds number low high)
    if(NOT arg_${number} MATCHES "^[0-9]+$")
      message(FATAL_ERROR "evidence_gate_add_suite(): ${number} must be a whole number, not \"${arg_${number}}\"")
    endif()
    string(REGEX REPLACE "^0+([0-9])" "\\1" value "${arg_${number}}")
    string(LENGTH "${value}" digits)
    if(digits GREATER 9 OR value LESS low OR value GREATER high)
      message(FATAL_ERROR "evidence_gate_add_suite(): ${number} must be from ${low} to ${high}, not \"${arg_${number}}\"")
    endif()
    set(arg_${number} "${value}")
  endwhile()
  if(NOT arg_ORDERS MATCHES "^(mixed|module|global)$")
    message(FATAL_ERROR "evidence_gate_add_suite(): ORDERS must be mixed, module or global, not \"${arg_ORDERS}\"")
  endif()
  if(NOT arg_ISOLATION MATCHES "^(fork|process)$")
    message(FATAL_ERROR "evidence_gate_add_suite(): ISOLATION must be fork or process, not \"${arg_ISOLATION}\"")
  endif()
  if(NOT arg_ALONE MATCHES "^(AUTO|auto|ON|OFF|TRUE|FALSE|YES|NO|1|0|on|off|true|false|yes|no)$")
    message(FATAL_ERROR "evidence_gate_add_suite(): ALONE must be AUTO, ON or OFF, not \"${arg_ALONE}\"")
  endif()
  set(alone auto)
  if(NOT arg_ALONE MATCHES "^(AUTO|auto)$")
    if(arg_ALONE)
      set(alone on)
    else()
      set(alone off)
    endif()
  endif()
  foreach(switch PERTURB PER_TEST)
    if(NOT arg_${switch} MATCHES "^(ON|OFF|TRUE|FALSE|YES|NO|1|0|on|off|true|false|yes|no)$")
      message(FATAL_ERROR "evidence_gate_add_suite(): ${switch} must be ON or OFF, not \"${arg_${switch}}\"")
    endif()
  endforeach()
  set(fixtures "")
  if(DEFINED arg_FIXTURES)
    _evidence_gate_existing_path(fixtures FIXTURES "${arg_FIXTURES}" "${root}")
  elseif(EXISTS "${root}/fixtures.manifest")
    set(fixtures "${root}/fixtures.manifest")
  endif()
  set(quarantine "")
  if(DEFINED arg_QUARANTINE)
    _evidence_gate_existing_path(quarantine QUARANTINE "${arg_QUARANTINE}" "${root}")
  endif()
  set(baseline "")
  if(DEFINED arg_BASELINE)
    cmake_path(ABSOLUTE_PATH arg_BASELINE BASE_DIRECTORY "${root}" NORMALIZE OUTPUT_VARIABLE baseline)
  endif()
  set(bundles "")
  foreach(bundle IN LISTS arg_RUNNER_BUNDLES)
    _evidence_gate_existing_path(path RUNNER_BUNDLES "${bundle}" "${root}")
    _evidence_gate_list_item(path "${path}")
    list(APPEND bundles "${path}")
  endforeach()
  foreach(entry IN LISTS arg_ENVIRONMENT)
    if(NOT entry MATCHES "^[A-Za-z_][A-Za-z0-9_]*=")
      message(FATAL_ERROR "evidence_gate_add_suite(): ENVIRONMENT entries are VAR=value, not \"${entry}\"")
    endif()
  endforeach()
  foreach(keyword PYTHON_PATH_PREPEND LIBRARY_PATH_PREPEND)
    set(${keyword} "")
    foreach(path IN LISTS arg_${keyword})
      _evidence_gate_search_path(path ${keyword} "${path}" "${root}")
      list(APPEND ${keyword} "${path}")
    endforeach()
  endforeach()
  foreach(target IN LISTS arg_DEPENDS)
    if(NOT target MATCHES "^[A-Za-z0-9_.+:-]+$")
      message(FATAL_ERROR "evidence_gate_add_suite(): DEPENDS names targets, not \"${target}\"")
    endif()
  endforeach()

  # An interpreter named by a generator expression is known only per configuration: the
  # manifest step finds out whether it imports pytest. Without one, the rest of the project
  # still configures and runs its tests; the suite is one failing test that says why.
  set(ext_suffix "")
  if(arg_PYTHON MATCHES "\\$<")
    set(python "${arg_PYTHON}")
  else()
    _evidence_gate_search_python(python ext_suffix problem "suite '${name}'" "${arg_PYTHON}")
  endif()
  # Whether ctest will see the suite at all, and can import what it DEPENDS on: checked once the
  # whole project is configured.
  _evidence_gate_check_later(${name} "${python}" "${ext_suffix}" "${arg_DEPENDS}")
  if(NOT python)
    _evidence_gate_without_python(${name} "${problem}" ${arg_LABELS})
    return()
  endif()

  # suite.json: everything the tool needs. Generator expressions (in PYTHON, PYTEST_ARGS,
  # ENVIRONMENT, the search paths and DEPENDS) are evaluated per configuration when the build
  # system is generated; file(GENERATE) writes the file only when it changes.
  set(evidence_dir "${binary_dir}/evidence/${name}")
  cmake_path(SET plugin_dir NORMALIZE "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../templates/pytest")
  if(arg_PERTURB)
    set(perturb true)
  else()
    set(perturb false)
  endif()
  foreach(key name root evidence_dir plugin_dir python fixtures baseline quarantine)
    _evidence_gate_json_string(json_${key} "${${key}}")
  endforeach()
  _evidence_gate_json_list(json_tests ${arg_TESTS})
  _evidence_gate_json_list(json_pytest_args ${arg_PYTEST_ARGS})
  _evidence_gate_json_list(json_environment ${arg_ENVIRONMENT})
  _evidence_gate_json_list(json_bundles ${bundles})
  _evidence_gate_json_list(json_python_path ${PYTHON_PATH_PREPEND})
  _evidence_gate_json_list(json_library_path ${LIBRARY_PATH_PREPEND})
  set(depends "")
  foreach(target IN LISTS arg_DEPENDS)
    _evidence_gate_json_string(json_target "${target}")
    list(APPEND depends "{\"target\": ${json_target}, \"file\": \"$<TARGET_FILE:${target}>\"}")
  endforeach()
  list(JOIN depends ", " json_depends)
  _evidence_gate_suite_file(suite_file "${evidence_dir}")
  set(draft "${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/evidence_gate_${name}.json")
  file(WRITE "${draft}" "{\n"
    "  \"schema\": 1,\n"
    "  \"name\": ${json_name},\n"
    "  \"root\": ${json_root},\n"
    "  \"evidence_dir\": ${json_evidence_dir},\n"
    "  \"plugin_dir\": ${json_plugin_dir},\n"
    "  \"python\": ${json_python},\n"
    "  \"tests\": ${json_tests},\n"
    "  \"seeds\": ${arg_SEEDS},\n"
    "  \"reruns\": ${arg_RERUNS},\n"
    "  \"localise\": ${arg_LOCALISE},\n"
    "  \"fixtures\": ${json_fixtures},\n"
    "  \"baseline\": ${json_baseline},\n"
    "  \"quarantine\": ${json_quarantine},\n"
    "  \"runner_bundles\": ${json_bundles},\n"
    "  \"perturb\": ${perturb},\n"
    "  \"pytest_args\": ${json_pytest_args},\n"
    "  \"environment\": ${json_environment},\n"
    "  \"python_path_prepend\": ${json_python_path},\n"
    "  \"library_path_prepend\": ${json_library_path},\n"
    "  \"depends\": [${json_depends}],\n"
    "  \"baseline_tolerance\": ${arg_BASELINE_TOLERANCE},\n"
    "  \"timeout\": ${arg_TIMEOUT},\n"
    "  \"test_timeout\": ${arg_TEST_TIMEOUT},\n"
    "  \"isolation\": \"${arg_ISOLATION}\",\n"
    "  \"orders\": \"${arg_ORDERS}\",\n"
    "  \"alone\": \"${alone}\"\n"
    "}\n")
  file(GENERATE OUTPUT "${suite_file}" INPUT "${draft}")
  foreach(input IN ITEMS "${fixtures}" "${quarantine}")
    if(input)
      _evidence_gate_list_item(input "${input}")
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${input}")
    endif()
  endforeach()
  _evidence_gate_check_inputs("${draft}")  # the input files it names need no generator expression

  # The CTest steps, tied by fixtures: manifest and receipt (and the fixture snapshot)
  # set up the seed runs, the runs set up the reruns, and the gate needs them all.
  set(tool "$<TARGET_FILE:EvidenceGate::evgate>")
  set(suite_arg "--suite=${suite_file}")  # quoted wherever it is used: the path may hold ';'
  set(labels evidence ${name} ${arg_LABELS})
  string(SHA1 root_hash "${root}")
  # CTest timeouts, for a step that is stuck itself (see TIMEOUT in the documentation above).
  math(EXPR one_process_timeout "2 * ${arg_TIMEOUT} + 30")
  math(EXPR run_timeout "3 * ${arg_TIMEOUT} + 30")
  math(EXPR rerun_timeout "(${arg_SEEDS} + 2) * (2 * ${arg_RERUNS} + 2) * ${arg_TIMEOUT} + 30")
  math(EXPR localise_timeout "(10 * ${arg_LOCALISE} + 2) * ${arg_TIMEOUT} + 30")
  # Seed runs share the fixture groups side by side (evgate locks them and runs again, alone,
  # whatever ran beside a run that changed them); the steps that mostly need them alone take
  # turns in CTest's schedule too.
  set(lock "evidence-gate-fixtures-${root_hash}")
  set(run_fixtures ${name}.receipt ${name}.env)  # env: a merge compares the shards' manifests with it
  set(run_lock "")
  set(one_process_steps ${name}.manifest ${name}.receipt ${name}.ledger ${name}.gate ${name}.release)
  if(fixtures)
    add_test(NAME ${name}.fixtures COMMAND ${tool} fixtures "${suite_arg}")
    set_tests_properties(${name}.fixtures PROPERTIES FIXTURES_SETUP ${name}.fixtures RESOURCE_LOCK ${lock})
    list(APPEND run_fixtures ${name}.fixtures)
    set(run_lock ${lock})
    # After every step that touches the groups, passed or failed: a step killed mid-run (by its
    # TIMEOUT) left a restore pending, and nothing after it in this invocation would complete it.
    add_test(NAME ${name}.restore COMMAND ${tool} restore "${suite_arg}" --pending)
    set_tests_properties(${name}.restore PROPERTIES FIXTURES_CLEANUP ${name}.fixtures)
    list(APPEND one_process_steps ${name}.fixtures ${name}.restore)
  endif()
  add_test(NAME ${name}.manifest COMMAND ${tool} manifest "${suite_arg}")
  set_tests_properties(${name}.manifest PROPERTIES FIXTURES_SETUP ${name}.env)
  add_test(NAME ${name}.receipt COMMAND ${tool} receipt "${suite_arg}")
  # After the manifest: the key of the runs an earlier ctest left (runs/evidence_reuse.hpp) holds it.
  set_tests_properties(${name}.receipt PROPERTIES FIXTURES_SETUP ${name}.receipt FIXTURES_REQUIRED ${name}.env)
  # After the last step that runs pytest: the collected session the receipt left serving forks.
  add_test(NAME ${name}.release COMMAND ${tool} release "${suite_arg}")
  set_tests_properties(${name}.release PROPERTIES FIXTURES_CLEANUP ${name}.receipt)
  if(fixtures)
    set_tests_properties(${name}.receipt PROPERTIES FIXTURES_REQUIRED "${name}.fixtures;${name}.env")
  endif()
  set(steps ${name}.manifest ${name}.receipt ${name}.release)
  set(run_steps "")
  foreach(seed RANGE 0 ${arg_SEEDS})
    add_test(NAME ${name}.seed.${seed} COMMAND ${tool} run "${suite_arg}" --seed ${seed})
    set_tests_properties(${name}.seed.${seed} PROPERTIES SKIP_RETURN_CODE 77  # another shard's seed
      FIXTURES_REQUIRED "${run_fixtures}" FIXTURES_SETUP ${name}.runs)
    list(APPEND run_steps ${name}.seed.${seed})
  endforeach()
  if(arg_PERTURB)
    add_test(NAME ${name}.perturbed COMMAND ${tool} perturbed "${suite_arg}")
    set_tests_properties(${name}.perturbed PROPERTIES SKIP_RETURN_CODE 77
      FIXTURES_REQUIRED "${run_fixtures}" FIXTURES_SETUP ${name}.runs)
    list(APPEND run_steps ${name}.perturbed)
  endif()
  if(NOT alone STREQUAL "off")
    add_test(NAME ${name}.alone COMMAND ${tool} alone "${suite_arg}")
    # After seed.0 (when both run): ALONE AUTO budgets the pass by what a seed run took.
    set_tests_properties(${name}.alone PROPERTIES SKIP_RETURN_CODE 77 DEPENDS ${name}.seed.0
      FIXTURES_REQUIRED "${run_fixtures}" FIXTURES_SETUP ${name}.runs)
    list(APPEND run_steps ${name}.alone)
  endif()
  list(APPEND steps ${run_steps})
  set_tests_properties(${run_steps} PROPERTIES TIMEOUT ${run_timeout})
  add_test(NAME ${name}.rerun COMMAND ${tool} rerun "${suite_arg}")
  set_tests_properties(${name}.rerun PROPERTIES
    FIXTURES_REQUIRED "${run_fixtures};${name}.runs" FIXTURES_SETUP ${name}.reruns RESOURCE_LOCK "${run_lock}"
    TIMEOUT ${rerun_timeout})
  # The ledger step builds the ledger and passes when it could; the gate and the per-test
  # entries read it, so they run (and show) even when rows block.
  add_test(NAME ${name}.localise COMMAND ${tool} localise "${suite_arg}")
  set_tests_properties(${name}.localise PROPERTIES
    FIXTURES_REQUIRED "${run_fixtures};${name}.runs;${name}.reruns" FIXTURES_SETUP ${name}.localised
    RESOURCE_LOCK "${run_lock}" TIMEOUT ${localise_timeout})
  add_test(NAME ${name}.ledger COMMAND ${tool} ledger "${suite_arg}")
  set_tests_properties(${name}.ledger PROPERTIES
    FIXTURES_REQUIRED "${name}.env;${name}.receipt;${name}.runs;${name}.reruns;${name}.localised"
    FIXTURES_SETUP ${name}.ledger)
  add_test(NAME ${name}.gate COMMAND ${tool} gate "${suite_arg}" --from-ledger)
  _evidence_gate_list_item(attached_dir "${evidence_dir}")
  set_tests_properties(${name}.gate PROPERTIES FIXTURES_REQUIRED ${name}.ledger
    ATTACHED_FILES "${attached_dir}/ledger.jsonl;${attached_dir}/report.html")
  list(APPEND steps ${name}.rerun ${name}.localise ${name}.ledger ${name}.gate)
  if(fixtures)
    list(APPEND steps ${name}.fixtures ${name}.restore)
  endif()
  set_tests_properties(${steps} PROPERTIES LABELS "${labels}")
  set_tests_properties(${one_process_steps} PROPERTIES TIMEOUT ${one_process_timeout})
  # What ctest itself decides when it starts (a file it includes): whether evgate and the
  # DEPENDS targets are built (if not, one failing <name>_NOT_BUILT entry, which every step
  # needs), the baseline-update step when asked for, and the per-test entries.
  set_property(TEST ${steps} APPEND PROPERTY FIXTURES_REQUIRED ${name}.built)
  _evidence_gate_ctest_time(${name} "${suite_file}" "${evidence_dir}" "${labels}" "${run_fixtures}"
                            ${one_process_timeout} ${arg_PER_TEST} "${arg_DEPENDS}")
endfunction()
