"""The mutation list stays seedable: every snippet of ``scripts/mutants.yaml`` occurs once in its file and every
test it names exists. A snippet lost to a refactor or to ``ruff format`` would make its mutant impossible to seed."""

from __future__ import annotations

import sys

from helpers.paths import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

from mutants import check_snippets, load_mutants  # noqa: E402


def test_every_mutant_can_be_seeded_and_names_existing_tests():
    mutants = load_mutants()
    assert mutants, "scripts/mutants.yaml lists no mutants"
    problems = check_snippets(mutants, ROOT)
    for mutant in mutants:
        for test in mutant.tests:
            if not (ROOT / test.split("::", 1)[0]).is_file():
                problems.append(f"{mutant.id}: names {test}, which does not exist")
    assert not problems, "\n".join(problems)
