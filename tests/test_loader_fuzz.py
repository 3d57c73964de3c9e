"""Crafted and mutated parameter files against the loaders (pgdiag.adapters.archives), each loaded in a child
process under a 2 GiB address-space cap (benchmarks/fuzz_loaders.py; a longer run is that script's own command).

Every case must end in one short printable refusal or a value: no signal, no MemoryError (the loaders' own caps,
at most 512 MiB of arrays a file, come first), no code run (a marker file the hostile cases would create). A file
inside a zip loads as the original or not at all (members carry CRC-32s); a plain pickle whose bytes changed may
load with other numbers. The mutations are seeded (seed 0), so the suite's verdict is the same on any host."""

import importlib.util
import os
import pathlib

import pytest

PATH = pathlib.Path(__file__).parent.parent / "benchmarks" / "fuzz_loaders.py"
spec = importlib.util.spec_from_file_location("fuzz_loaders", PATH)
fuzz = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fuzz)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fuzz")
    marker = tmp / "code-ran"
    cases = fuzz.crafted(str(marker)) + fuzz.fixture_cases(mutations=400, seed=0)
    rows = fuzz.check(cases, str(tmp))
    return {"rows": rows, "ran": marker.exists(), "by_name": {row[1]: row for row in rows}}


def test_no_file_crashes_runs_code_or_exhausts_memory(outcomes):
    failed = [row for row in outcomes["rows"] if row[3] != "ok"]
    assert not failed, failed[:5]
    assert not outcomes["ran"]
    families = {row[0] for row in outcomes["rows"]}
    assert {"code", "dtype", "view", "bomb", "poison", "zip", "truncation", "mutation"} <= families


@pytest.mark.parametrize("name, says", [
    ("os.system by REDUCE", "refusing to load os.system"),
    ("INST", "refusing the pickle opcode INST"),
    ("object dtype", "an array of numpy type 'O8'"),
    ("object flag on a float dtype", "a numpy dtype 'f8' with a state other than a plain number's"),
    ("stride (100000, 1)", "reaches element 6300010 of a storage holding 704"),   # 63·100000 + 10
    ("storage offset 100", "reaches element 803 of a storage holding 704"),       # 100 + 63·11 + 10
    ("negative stride", "a tensor's stride must be an integer ≥ 0, got '-11'"),
    ("declared storage of 1e10 over 704 floats", "holds 2816 bytes, not the 10000000000 elements"),
    ("a 4-byte storage as 256 MiB", "(8192, 8192) holds more than 16777216 elements"),
    ("a 96 MiB deflate bomb", "member archive/data/0 would decompress to more than 64 MiB"),
    ("one storage referenced 4,000 times", "past 512 MiB of arrays"),
    ("billion laughs", "expand to more than 1048576"),
    ("tuples nested 100,000 deep", "nests tuples more than 64 deep"),
    ("a list that holds itself", "(a cycle)"),
    ("corrupt compression", "member archive/data/0 cannot be read"),
])
def test_each_crafted_file_is_refused_naming_what_it_asked(outcomes, name, says):
    _, _, outcome, _, line = outcomes["by_name"][name]
    assert outcome == "refused" and says in line, line


def test_a_file_that_tried_to_poison_the_loader_leaves_the_next_file_intact(outcomes):
    assert outcomes["by_name"]["the real CleanRL file after it"][2:4] == ("loaded", "ok")
