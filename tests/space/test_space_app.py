"""The launched Space over HTTP (gradio_client, 127.0.0.1 only): label leaks, concurrent submissions, fuzzing."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("gradio")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from gradio_client import Client, handle_file  # noqa: E402
from helpers.clients import gradio_client  # noqa: E402
from helpers.fakes import ScriptedModel, code, search_then_cite  # noqa: E402
from helpers.ports import free_port
from helpers.space_fixtures import gold as gold_rows

pytestmark = pytest.mark.server

#: A submitter's contact is stored but must never reach a visitor: it is checked like a test label.
CONTACT = "contact-secret-5b1e@example.org"
FORM = ["sys", "tester", "agent", "model", CONTACT, "none", "none", "1 CPU-minute"]
FORM_KEYS = ["system", "submitter", "agent", "model", "contact", "models_used", "training_data", "compute"]
FAKE_ANSWER = "fake-answer-xyz"
FAKE_SPEC = "py:test_space_app:fake_model"


def fake_reply(text: str, tools: list[str]) -> Any:
    """BM25 agent: one search, then an answer citing the first page shown; code-REPL agent: one print, then the
    same constant answer (never a label)."""
    if not tools:  # the code-REPL agent: Python in a code block
        return code(
            "print(documents[0])"
            if "Observation:" not in text
            else f"final_answer(answer=['{FAKE_ANSWER}'], citations=[{{'document': documents[0], 'page': 1}}])"
        )
    return search_then_cite(FAKE_ANSWER, "riverton OR invoice OR report")(text, tools)


def fake_model(**_: Any) -> ScriptedModel:
    return ScriptedModel([fake_reply], text_only=True, usage=None, model_id="fake")


@pytest.fixture(scope="module")
def app(layout, tmp_path_factory) -> Iterator[dict[str, Any]]:
    from madqa.space.app import launch
    from madqa.space.config import SpaceConfig
    from madqa.space.services import create_services

    folder = tmp_path_factory.mktemp("space")
    config = SpaceConfig.from_env(
        {
            "MADQA_HOME": str(layout.root),
            "MADQA_SPACE_DB": str(folder / "db.sqlite"),
            "MADQA_SPACE_RATE_LIMIT": "0",
            "MADQA_SPACE_MAX_MB": "2",
            "MADQA_SPACE_RESAMPLES": "200",
            "MADQA_SPACE_AGENT_MODEL": FAKE_SPEC,
        }
    )
    services = create_services(config, seed=True)
    from madqa.space.submission import clean_form  # a row with a contact exists before the page config is built

    early = "".join(json.dumps({"id": r["id"], "answer": ["early"]}) + "\n" for r in gold_rows(layout))
    services.scorer.submit_text(early, clean_form(dict(zip(FORM_KEYS, ["early sys", *FORM[1:]], strict=True))))
    port = free_port()
    demo = launch(services, port=port, host="127.0.0.1", prevent_thread_lock=True, quiet=True)
    try:
        yield {"services": services, "client": gradio_client(f"http://127.0.0.1:{port}/"), "dir": folder}
    finally:
        demo.close()


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def secret_strings(layout) -> list[str]:
    """Gold answer strings of the test split that appear nowhere in public data (so any occurrence is a leak)."""
    from madqa.loading_script.load import load_questions

    # Page texts are not excluded: the Space shows pages only as rendered images, never as text.
    public = " ".join(q["question"] for split in ("train", "dev", "test") for q in load_questions(split))
    public += " ".join(
        a for split in ("train", "dev") for q in load_questions(split) for v in q["answer_variants"] for a in v
    )
    golds = {s for r in gold_rows(layout) for v in r["answer_variants"] for s in v}
    return sorted(g for g in golds if len(g) >= 4 and g not in public)


def test_board_is_seeded_with_honest_baselines(app) -> None:
    subs = app["services"].store.submissions()
    seeds = [s for s in subs if s.origin == "seed"]
    assert len(seeds) >= 3 and all(s.form["system"].startswith("Baseline:") for s in seeds)
    board = app["client"].predict("", api_name="/refresh")
    assert "Baseline: no answer (floor)" in json.dumps(board)


def test_no_test_label_in_any_endpoint_output(app, layout, tmp_path: Path) -> None:
    client: Client = app["client"]
    secrets = secret_strings(layout)
    assert len(secrets) >= 10
    endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    rows = gold_rows(layout)
    good = write(
        tmp_path / "good.jsonl",
        [{"id": r["id"], "answer": r["answer_variants"][0], "citations": r["evidence"], "steps": 1} for r in rows],
    )
    wrong = write(tmp_path / "wrong.jsonl", [{"id": r["id"], "answer": ["nope"]} for r in rows])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "q0001", "answer": {"x": 1}}\nnot json\n', encoding="utf-8")
    dup = write(tmp_path / "dup.jsonl", [{"id": rows[0]["id"], "answer": []}] * 2)
    ids = [s.id for s in app["services"].store.submissions()]
    from madqa.loading_script.load import load_questions

    dev_id = load_questions("dev")[0]["id"]
    dev_file = write(
        tmp_path / "dev.jsonl",
        [{"id": q["id"], "answer": q["answer_variants"][0], "steps": 1} for q in load_questions("dev")],
    )
    calls: dict[str, list[tuple[Any, ...]]] = {
        "/search": [("",), ("Baseline",), (rows[0]["answer_variants"][0][0],), ("' OR 1=1 --",)],
        "/refresh": [("",), ("zzz",)],
        "/official": [()],
        "/plot": [(ids[:3],), ([],), ([10**9],)],
        "/submit": [(handle_file(str(p)), *FORM) for p in (good, wrong, bad, dup)] + [(None, *FORM)],
        "/run_agent": [
            (None, "Who signed the letter?", "BM25 search agent", FAKE_SPEC),
            (dev_id, "", "BM25 search agent", FAKE_SPEC),
            (None, "", "nope", "x"),
            (dev_id, "", "code-REPL agent", FAKE_SPEC),
        ],
        # Explore tab: a file of test ids and the test split are refused; a dev file is explored (public labels)
        "/explore_load": [
            ([handle_file(str(good))], "dev"),
            ([handle_file(str(good))], "test"),
            (None, "dev"),
            ([handle_file(str(dev_file))], "dev"),
        ],
        "/explore_filter": [
            (None,) * 10 + ("",),
            ("x", "y", "(any)", None, None, None, None, None, 0, 99, rows[0]["answer_variants"][0][0]),
        ],
        "/explore_question": [(dev_id, []), (rows[0]["id"], []), (None, None)],
    }
    assert set(endpoints) <= set(calls), f"endpoint without leak checks: {set(endpoints) - set(calls)}"
    outputs = []
    for name in endpoints:
        for args in calls[name]:
            try:
                outputs.append(json.dumps(client.predict(*args, api_name=name), default=str))
            except Exception as exc:  # noqa: BLE001 - invalid inputs may be refused; the message is checked too
                outputs.append(f"{type(exc).__name__}: {exc}")
    text = "\n".join(outputs)
    assert "Accepted" in text and "Rejected" in text and FAKE_ANSWER in text and "Gold (dev)" in text
    assert "step 1: code" in text and "step 1: search" in text
    assert "**Refused:**" in text and "Loaded **dev**" in text and "explore-question" in text
    import httpx

    base = client.src.rstrip("/")
    for route in (
        f"/gradio_api/file={layout.test_labels}",
        f"/file={layout.test_labels}",
        "/gradio_api/file=../../private/test_labels.jsonl",
        f"/gradio_api/file={app['dir']}/db.sqlite",
    ):
        response = httpx.get(base + route, timeout=30)
        assert response.status_code >= 400, route
        text += "\n" + response.text
    text += "\n" + unnamed_handler_outputs(client)
    config = ""
    for route in ("/config", "/gradio_api/info", "/gradio_api/info?all_endpoints=true"):  # what every visitor gets
        response = httpx.get(base + route, timeout=30)
        assert response.status_code == 200, route
        config += "\n" + response.text
    assert any(s.form["contact"] == CONTACT for s in app["services"].store.submissions())  # stored: it could leak
    # Whole words only: outputs hold random hex names (gradio's cached files), which contain short numeric labels
    # such as "3412" by chance (seen once in CI); a label shown to a visitor is a word of its own.
    leaked = [s for s in [*secrets, CONTACT] if re.search(rf"(?<!\w){re.escape(s)}(?!\w)", text)]
    # the page config names components (e.g. "CheckboxGroup"), so labels count there as whole words too
    leaked += [s for s in [*secrets, CONTACT] if re.search(rf"(?<!\w){re.escape(s)}(?!\w)", config)]
    assert not leaked, f"test labels or a contact leaked: {leaked[:5]}"


def unnamed_handler_outputs(client: Client) -> str:
    """Outputs of every event handler the API hides (``api_name=False``): a browser, or anyone, can call them."""
    outputs = []
    for index, dep in enumerate(client.config["dependencies"]):
        fn = dep.get("id", index)
        endpoint = client.endpoints.get(fn)
        if endpoint is None or endpoint.is_valid or dep.get("backend_fn") is False:
            continue
        endpoint.is_valid = True  # the client refuses private handlers; the server does not
        try:
            outputs.append(json.dumps(client.predict(*([None] * len(dep["inputs"])), fn_index=fn), default=str))
        except Exception as exc:  # noqa: BLE001 - a handler may refuse None inputs; its message is checked too
            outputs.append(f"{type(exc).__name__}: {exc}")
    assert outputs, "no unnamed handler was called"
    return "\n".join(outputs)


def test_twenty_concurrent_submissions_each_scored_right(app, layout, tmp_path: Path) -> None:
    from madqa.metric.inputs import parse_references, parse_results_text
    from madqa.metric.report import ReportOptions, evaluate_predictions

    store = app["services"].store
    rows = gold_rows(layout)
    public = app["services"].scorer.public_ids  # every shown number is the public part's
    refs = [r for r in parse_references(rows, "gold") if r.id in public]
    before = store.count()
    files, expected = [], {}
    for i in range(20):
        lines = [
            {
                "id": r["id"],
                "answer": r["answer_variants"][0] if j % 20 < i else ["no"],
                "citations": r["evidence"][: (i + j) % 2],
                "steps": 1 + (i + j) % 4,
            }
            for j, r in enumerate(rows)
        ]
        path = write(tmp_path / f"c{i}.jsonl", lines)
        files.append(path)
        report = evaluate_predictions(parse_results_text(path.read_text(), "x"), refs, ReportOptions(n_resamples=10))
        expected[f"concurrent-{i}"] = report

    def send(i: int) -> str:
        client = gradio_client(app["client"].src)
        form = [f"concurrent-{i}", *FORM[1:]]
        return str(client.predict(handle_file(str(files[i])), *form, api_name="/submit")[0])

    with ThreadPoolExecutor(max_workers=20) as pool:
        messages = list(pool.map(send, range(20)))
    assert all(m.startswith("**Accepted**") for m in messages), messages
    assert store.count() == before + 20
    mine = {s.form["system"]: s for s in store.submissions() if s.form["system"].startswith("concurrent-")}
    assert sorted(mine) == sorted(expected)
    for name, sub in mine.items():
        for key in ("accuracy", "anls", "page_f1", "doc_f1", "mean_steps"):
            assert sub.report[key] == pytest.approx(expected[name][key]), (name, key)
        assert len(store.item_scores(sub.id)) == len(refs) < len(rows)


def hostile_files(folder: Path, layout) -> list[Path]:
    """≥ 200 malformed or hostile results files."""
    from madqa.loading_script.load import load_questions

    rows = gold_rows(layout)
    tid = rows[0]["id"]
    dev_ids = [q["id"] for q in load_questions("dev")][:20]
    train_ids = [q["id"] for q in load_questions("train")][:20]
    texts: list[tuple[str, bytes]] = []
    bad_values = [5, 1.5, True, {"a": 1}, [[1]], [None], [True], [{"x": "y"}], float("nan")]
    for n, value in enumerate(bad_values):
        texts.append((f"answer{n}.jsonl", json.dumps({"id": tid, "answer": value}).encode()))
    bad_cites = [
        5,
        "p1",
        [5],
        [{"page": 1}],
        [{"document": "", "page": 1}],
        [{"document": "a.pdf", "page": 0}],
        [{"document": "a.pdf", "page": -3}],
        [{"document": "a.pdf", "page": 1.5}],
        [{"document": "a.pdf", "page": "abc"}],
        [{"document": "a.pdf", "page": True}],
        [{"document": 7}],
    ]
    for n, value in enumerate(bad_cites):
        texts.append((f"cite{n}.jsonl", json.dumps({"id": tid, "answer": ["x"], "citations": value}).encode()))
    for n, value in enumerate([-1, 1.5, "3", True, {"a": 1}]):
        texts.append((f"steps{n}.jsonl", json.dumps({"id": tid, "answer": [], "steps": value}).encode()))
    texts.append(("history.jsonl", json.dumps({"id": tid, "answer": [], "search_history": "q"}).encode()))
    raw = [
        "",
        "\n\n",
        "not json",
        "[1, 2]",
        "null",
        "42",
        '"str"',
        "{",
        '{"id": "q0001", "answer": NaN}',
        '{"id": "q0001", "answer": ["x"], "steps": Infinity}',
        '{"answer": ["x"]}',
        '{"id": "", "answer": []}',
        '{"id": null, "question": null, "answer": []}',
        '{"id": ["q"], "answer": []}',
        "\ufeff\ufeff{}",
        "\x00\x01\x02",
        '{"id": "q0001", "answer": []}\n{"id": "q0001", "answer": ["y"]}',
    ]
    # (a line without 'answer', as the public harness writes a failed question, is scored as no answer: issue 22)
    texts += [(f"raw{n}.jsonl", t.encode("utf-8")) for n, t in enumerate(raw)]
    texts.append(("latin1.jsonl", '{"id": "q0001", "answer": ["caf\u00e9"]}\n'.encode("latin-1")))
    texts.append(("binary.jsonl", bytes(range(256)) * 20))
    texts.append(("huge_line.jsonl", ('{"id": "q0001", "answer": ["' + "a" * 1_500_000 + '"], "x": }').encode()))
    texts.append(("oversize.jsonl", b'{"id": "q0001", "answer": []}\n' * 90_000))  # > the 2 MB upload limit
    texts.append(("deep.jsonl", ("[" * 100_000 + "]" * 100_000).encode()))
    for n, other in enumerate(dev_ids + train_ids):
        texts.append((f"other{n}.jsonl", json.dumps({"id": other, "answer": ["x"]}).encode()))
    for n in range(40):
        hostile_id = f"../../etc/passwd{n}\u202e\U0001f600"
        texts.append((f"unknown{n}.jsonl", json.dumps({"id": hostile_id, "answer": []}).encode()))
    for n in range(40):  # one valid line followed by a broken one: nothing partial may be stored
        good = {"id": rows[n % len(rows)]["id"], "answer": ["x"]}
        broken = json.dumps({"id": tid, "answer": n})
        texts.append((f"partial{n}.jsonl", (json.dumps(good) + "\n" + broken + "\n").encode()))
    for n in range(30):
        line = json.dumps({"id": rows[n % len(rows)]["id"], "answer": []}) + "\n"
        texts.append((f"dup{n}.jsonl", (line * 2).encode()))
    names = [
        "..%2F..%2Fevil.jsonl",
        "con.jsonl",
        "\u00fcn\u00efc\u00f8d\u00e9 \u65e5\u672c.jsonl",
        "a b;rm -rf.jsonl",
        "....jsonl",
        "-rf.jsonl",
        "'; DROP TABLE submissions;--.jsonl",
    ]
    for n, name in enumerate(names):
        texts.append((name, json.dumps({"id": tid, "answer": {"bad": n}}).encode()))
    out = []
    for n, (name, data) in enumerate(texts):
        sub = folder / f"f{n:03d}"
        sub.mkdir()
        path = sub / name
        path.write_bytes(data)
        out.append(path)
    return out


def answer_or_none(job) -> str | None:
    """The Space's answer to one submitted file, or None where the upload gate shed it with 503 (send it again)."""
    try:
        return str(job.result(timeout=300)[0])
    except ValueError as exc:  # the client refuses files over the upload limit before sending them
        return f"client refused: {exc}"
    except httpx.HTTPStatusError as exc:  # the upload gate refuses a name starting with a dot or escaped
        if exc.response.status_code == 503:
            return None
        assert exc.response.status_code == 415, exc
        return f"gate refused: {exc.response.text}"


def test_fuzz_hostile_files_are_rejected_and_nothing_is_stored(app, layout, tmp_path: Path) -> None:
    store = app["services"].store
    files = hostile_files(tmp_path, layout)
    assert len(files) >= 200
    before, before_items = store.count(), store.count_items()

    client: Client = app["client"]
    jobs = [client.submit(handle_file(str(path)), *FORM, api_name="/submit") for path in files]
    # The gate sheds a flood with 503 ("try again in a moment"). A file sent again goes to the back of the queue, so
    # it is sent again only once the flood is answered, and alone: waiting on it inside the flood would time it out
    # behind every file still queued (a CI run on a busy machine did).
    answers = [answer_or_none(job) for job in jobs]
    for n, path in enumerate(files):
        for _ in range(60):
            if answers[n] is not None:
                break
            time.sleep(0.5)
            answers[n] = answer_or_none(client.submit(handle_file(str(path)), *FORM, api_name="/submit"))
        assert answers[n] is not None, f"{path.name}: the upload gate answered 503 sixty-one times"
    messages = [answer for answer in answers if answer is not None]
    for path, message in zip(files, messages, strict=True):
        assert message.startswith(("**Rejected:**", "client refused", "gate refused")), (path.name, message[:300])
        if message.startswith("gate refused"):  # with the reason, naming the file
            assert f"the file name {path.name!r}" in message and "rename it" in message, (path.name, message)
        assert len(message) > len("**Rejected:** ") + 10, (path.name, message)
        assert "internal error" not in message, (path.name, message)
        if message.startswith("**Rejected:**"):  # the server never echoes a server-side path
            assert str(tmp_path) not in message and "/tmp/" not in message, (path.name, message)
    assert store.count() == before and store.count_items() == before_items
    assert sum(m.startswith("client refused") for m in messages) == 1  # only the file over the upload limit
    refused_names = {p.name for p, m in zip(files, messages, strict=True) if m.startswith("gate refused")}
    assert refused_names == {"....jsonl", "..%2F..%2Fevil.jsonl"}
    # the server enforces the limit too (not only the client)

    big = {"files": ("big.jsonl", b"x" * (3 * 1024 * 1024), "application/octet-stream")}
    assert httpx.post(client.src.rstrip("/") + "/gradio_api/upload", files=big, timeout=60).status_code == 413
    assert str(app["client"].predict("", api_name="/refresh"))  # still up
    line_named = [m for m in messages if "line " in m]
    assert len(line_named) >= 150


def test_agent_tab_streams_the_trajectory_and_scores_a_dev_question(app) -> None:
    from madqa.loading_script.load import load_questions

    # A session of its own: the leak test calls every hidden handler in the shared client's session, the tab's Run
    # and Stop included, and a Stop pressed in a session ends that session's next run (one queued behind the click).
    client = gradio_client(app["client"].src)
    row = load_questions("dev")[0]
    bm25 = json.dumps(
        client.predict(row["id"], "", "BM25 search agent", FAKE_SPEC, api_name="/run_agent"), ensure_ascii=False
    )
    assert "`riverton OR invoice OR report` →" in bm25 and "step 1: search" in bm25  # the query, then thumbnails
    assert bm25.count('"component": "image"') >= 2  # result thumbnails and the cited page
    assert f"**Final answer:** {FAKE_ANSWER}" in bm25 and "step(s)" in bm25
    gold = " | ".join("; ".join(v) for v in row["answer_variants"])
    shown_gold = json.dumps(f"**Gold (dev):** {gold}", ensure_ascii=False)[1:-1]
    assert shown_gold in bm25 and "score 0" in bm25  # dev labels are public
    repl = json.dumps(client.predict(row["id"], "", "code-REPL agent", FAKE_SPEC, api_name="/run_agent"))
    assert "print(documents[0])" in repl and f"**Final answer:** {FAKE_ANSWER}" in repl and "cited: " in repl
    rag = json.dumps(
        client.predict(row["id"], "", "static RAG (one retrieval)", FAKE_SPEC, api_name="/run_agent"),
        ensure_ascii=False,
    )
    assert "step 1: search" in rag and f"**Final answer:** {FAKE_ANSWER}" in rag  # the retrieval, then the answer
    with pytest.raises(Exception, match="not in the list of choices"):  # only configured models run
        client.predict(row["id"], "", "BM25 search agent", "openai:gpt-4.1", api_name="/run_agent")
