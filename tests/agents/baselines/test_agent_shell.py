"""The Semtools-style shell agent: the corpus parsed to page files, semantic search, read-only ls/cat/head/grep run in
the REPL worker's walls; nothing outside the corpus folder is readable; its lines are scored by ``madqa evaluate``."""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_cli import evaluate_json, madqa_env, prepare_agent, run_agent_lines
from helpers.fakes import ScriptedModel

#: This file's folder: subprocesses import its model factories (``py:test_…``) by name.
HERE = Path(__file__).resolve().parent

FAKE = "py:test_agent_shell:reader"
SECRET = "the-launch-code-7731"


def _first_hit(text: str) -> str:
    return re.findall(r"--- (\S+/page_\d+\.txt) \(", text)[0]


def reader(**_: Any) -> ScriptedModel:
    """Searches, reads the first hit's file, greps, lists the corpus, then cites that file by its path (stateless:
    the step is told by the tool calls so far, so one model serves every question)."""

    def reply(text: str, tools: list[str]) -> Any:
        n = text.count("Calling tools:")
        if n == 0:
            return "search", {"query": "monthly water service charge"}
        if n == 1:
            return "bash", {"command": f"cat {_first_hit(text)} | head -n 3"}
        if n == 2:
            return "bash", {"command": "grep -ril 'water' ."}
        if n == 3:
            return "bash", {"command": "ls"}
        return "final_answer", {"answer": ["no idea"], "citations": [{"document": _first_hit(text), "page": 1}]}

    return ScriptedModel([reply], text_only=True, model_id="fake-shell")


ATTACKS = [
    "cat ../../secret.txt",
    "cat ../../../secret.txt",
    "cat /corpus/../secret.txt",
    "head -n 5 {home}/secret.txt",
    "grep -r launch /",
    "grep -r launch ..",
    "grep -ri launch .",
    "cat leak/secret.txt",
    "ls -l leak",
    "cat {doc}/page_9999.txt",
    "grep -r launch {home}",
    'cat x"); print(open("{home}/secret.txt").read()) #',
    "cat /etc/passwd",
    "ls /",
    "cat $(echo ../../secret.txt)",
    "cat `ls ..`",
    "ls ; cat ../../secret.txt",
    "cat ../../secret.txt > out.txt",
]


def attacker(**_: Any) -> ScriptedModel:
    """Tries every way out of the corpus folder (``{home}``/``{doc}`` filled in from the test's environment)."""
    home, doc = os.environ["MADQA_TEST_HOME"], os.environ["MADQA_TEST_DOC"]
    script: list[Any] = [("bash", {"command": a.format(home=home, doc=doc)}) for a in ATTACKS]
    script.append(("final_answer", {"answer": ["x"], "citations": []}))
    return ScriptedModel(script, text_only=True, model_id="fake-attacker")


def test_the_corpus_is_one_file_per_page_and_commands_run_in_the_walled_worker(layout) -> None:
    from madqa.loading_script.load import load_gold, load_pages

    row = load_gold("dev")[0]
    # top_k 5: the flat RunConfig's 5, not the shell agent's 3
    prepared = prepare_agent("shell", model=FAKE, max_steps=6, top_k=5)
    try:
        pages = load_pages()
        assert len(prepared.files) == len(pages)
        some = pages[0]
        assert prepared.files[prepared.mapping.path(some["document"], some["page"])] == some["text"]
        assert prepared.settings["retriever"] == "dense:wordllama:256" and prepared.settings["top_k"] == 5
        line = prepared.answer(row)
        (search,) = line["search_history"]
        expected = prepared.retriever.search("monthly water service charge", k=5)
        assert search["results"] == [{"document": h.document, "page": h.page} for h in expected]
        first = search["results"][0]
        cat, grep, ls = line["shell_history"]
        assert cat["pages"] == [first] and cat["error"] is None
        matching = {(r["document"], r["page"]) for r in pages if "water" in r["text"].lower()}
        assert {(p["document"], p["page"]) for p in grep["pages"]} == matching and matching
        assert ls["pages"] == [] and line["steps"] == 4
        head = "\n".join(prepared.files[prepared.mapping.path(first["document"], first["page"])].split("\n")[:3])
        assert line["trajectory"][1]["observation"] == head
        folders = {prepared.mapping.documents[r["document"]] + "/" for r in pages}
        assert set(line["trajectory"][3]["observation"].split("\n")) == folders
        assert line["citations"] == [first]  # the cited page file, mapped back to (document, page)
        walls = line["shell"]["walls"]
        assert walls["network"].startswith("new") and walls["filesystem"].startswith("landlock")
        events = list(prepared.stream(row["question"], row))
        assert [type(e).__name__ for e in events] == [
            "SearchEvent",
            "CodeEvent",
            "CodeEvent",
            "CodeEvent",
            "AnswerEvent",
        ]
        assert events[1].code.startswith("$ cat ") and events[1].output == head
    finally:
        prepared.close()


def test_nothing_outside_the_corpus_folder_is_readable(layout, monkeypatch: pytest.MonkeyPatch) -> None:
    from madqa.agents.baselines.shell.corpus import write_corpus
    from madqa.loading_script.load import load_gold, load_pages

    home = layout.root
    folder, mapping = write_corpus(load_pages(), home / "shell")
    doc = next(iter(mapping.folders))
    planted = [home / "secret.txt", folder / "leak", folder / doc / "page_9999.txt"]
    planted[0].write_text(SECRET, encoding="utf-8")
    planted[1].symlink_to(home, target_is_directory=True)  # a link to a folder outside the corpus
    planted[2].symlink_to(home / "secret.txt")  # a page file that is a link to the secret
    monkeypatch.setenv("MADQA_TEST_HOME", str(home))
    monkeypatch.setenv("MADQA_TEST_DOC", doc)
    try:
        prepared = prepare_agent("shell", model="py:test_agent_shell:attacker", max_steps=len(ATTACKS) + 1)
        try:
            assert not any(SECRET in text for text in prepared.files.values())
            assert f"{doc}/page_9999.txt" not in prepared.files and not any(
                p.startswith("leak") for p in prepared.files
            )
            line = prepared.answer(load_gold("dev")[0])
        finally:
            prepared.close()
    finally:
        for path in planted:
            path.unlink()
    commands = [h["command"] for h in line["shell_history"]]
    assert len(commands) == len(ATTACKS)
    dump = json.dumps(line)
    assert SECRET not in dump and "root:x:0" not in dump
    observations = [t["observation"] for t in line["trajectory"][: len(ATTACKS)]]
    assert all(obs and ("No such file" in obs or "not supported" in obs) for obs in observations[:4])
    assert "ls: cannot access 'leak'" in observations[ATTACKS.index("ls -l leak")]
    assert all(h["pages"] == [] for h in line["shell_history"] if "launch" not in h["command"])


def test_commands_behave_like_their_unix_namesakes() -> None:
    from madqa.agents.baselines.shell.coreutils import sh_main

    files = {
        "a/page_0001.txt": "Total revenue 12\nother\nnet Revenue 9",
        "a/page_0002.txt": "none\n",
        "b/page_0001.txt": "revenue\n",
    }

    def out(line: str) -> str:
        reply = sh_main(files, line)
        return reply["output"] + (f"\nERR {reply['error']}" if reply["error"] else "")

    assert out("ls") == "a/\nb/" and out("ls a") == "page_0001.txt\npage_0002.txt"
    assert out("grep -rn -i revenue a") == "a/page_0001.txt:1:Total revenue 12\na/page_0001.txt:3:net Revenue 9"
    assert out("grep revenue a/page_0001.txt") == "Total revenue 12"
    assert out("grep -c -i revenue a/page_0001.txt") == "2"
    assert out("grep -rl revenue .") == "a/page_0001.txt\nb/page_0001.txt"
    assert out("grep revenue a") == "\nERR grep: a: Is a directory"
    assert out("head -n 1 a/page_0001.txt") == "Total revenue 12"
    assert out("head -1 a/*.txt") == "==> a/page_0001.txt <==\nTotal revenue 12\n==> a/page_0002.txt <==\nnone"
    assert out("cat a/page_0002.txt | grep -v none") == ""
    assert out("cat a/page_0001.txt | grep -i 'net revenue'") == "net Revenue 9"
    assert out('grep -E "Total|net" a/page_0001.txt') == "Total revenue 12\nnet Revenue 9"
    assert out("grep -C 1 other a/page_0001.txt") == "Total revenue 12\nother\nnet Revenue 9"
    assert sh_main(files, "cat a/page_0001.txt b/page_0001.txt")["touched"] == ["a/page_0001.txt", "b/page_0001.txt"]
    assert "command not found" in out("rm -rf a") and "not supported" in out("ls && ls")
    assert sh_main(files, "cat a/page_0001.txt", limit=5)["output"].startswith("Total\n[output cut at 5")


def test_the_corpus_reader_takes_regular_files_and_never_follows_a_link(tmp_path: Path) -> None:
    from madqa.agents.baselines.shell.corpus import read_corpus

    outside = tmp_path / "secret.txt"
    outside.write_text(SECRET, encoding="utf-8")
    root = tmp_path / "corpus"
    (root / "doc").mkdir(parents=True)
    (root / "doc" / "page_0001.txt").write_text("one", encoding="utf-8")
    (root / "doc" / "page_0002.txt").symlink_to(outside)
    (root / "up").symlink_to(tmp_path, target_is_directory=True)
    os.mkfifo(root / "doc" / "page_0003.txt")  # a reader that opened it would block
    assert read_corpus(root) == {"doc/page_0001.txt": "one"}


@pytest.mark.slow
def test_shell_runs_from_the_command_line_and_is_scored(layout, tmp_path: Path) -> None:
    out = tmp_path / "shell.jsonl"
    lines = run_agent_lines("shell", out, ["--model", FAKE, "--split", "dev", "--limit", "2"], madqa_env(HERE))
    assert len(lines) == 2 and all(line["agent"] == "shell" and line["error"] is None for line in lines)
    assert lines[0]["config"]["top_k"] == 3 and lines[0]["config"]["retriever"] == "dense:wordllama:256"
    assert all(len(line["search_history"][0]["results"]) == 3 and len(line["shell_history"]) == 3 for line in lines)
    report = evaluate_json(out, madqa_env(HERE))
    assert report["n_predicted"] == 2 and report["page_f1"] is not None


def test_the_space_tab_and_the_explorer_show_the_commands(layout) -> None:
    from madqa.loading_script.load import load_gold
    from madqa.metric.inputs import parse_reference
    from madqa.space import agent_tab
    from madqa.space.explore.detail import steps_of

    assert agent_tab.AGENTS[agent_tab.SHELL] == "shell" and agent_tab.AGENTS[agent_tab.MDOC] == "mdoc"
    row = load_gold("dev")[0]
    prepared = prepare_agent("shell", model=FAKE, retriever="bm25")

    class Runtime:  # the tab's runtime, already prepared
        lock = threading.Lock()

        def prepared(self, name: str, spec: str) -> Any:
            return prepared

        def renderer(self) -> Any:
            from madqa.agents.corpus.render import PageRenderer

            return PageRenderer()

    try:
        history = list(agent_tab.run_agent(Runtime(), {}, None, row["question"], agent_tab.SHELL, FAKE))[-1]
        texts = [str(m.content) for m in history]
        assert any(t.startswith("```\n$ cat ") for t in texts) and any("```\n$ ls" in t for t in texts)
        assert any(t.startswith("**step 1: search** `monthly water service charge`") for t in texts)  # shown open
        assert any(t.startswith("**Final answer:** no idea") for t in texts)
        line = prepared.answer(row)
    finally:
        prepared.close()
    steps = steps_of(parse_reference(dict(row), "gold"), line)
    assert steps[0]["searches"][0]["query"] == "monthly water service charge"
    assert [s["code"] for s in steps[1:4]] == [[h["command"]] for h in line["shell_history"]]
    assert line["shell_history"][2]["command"] == "ls"
