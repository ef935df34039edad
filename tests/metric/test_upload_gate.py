"""The upload gate (metric/upload_gate.py) against raw multipart bodies, over HTTP on 127.0.0.1 (issue 23).

Each body below is first posted to a bare gradio app without the gate, to show what gradio 6 itself stores from
it (an ``.html`` file, or a nameless temporary file), then to the launched Space and to the metric widget, which
must answer 415 and leave their upload folders as they were. The metric widget also deletes every upload once it
is scored, accepted or not.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.clients import gradio_client

from madqa.space.gradio_launch import launch as launch_gradio

pytest.importorskip("gradio")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import httpx  # noqa: E402
from helpers.ports import free_port  # noqa: E402
from helpers.upload_app import file_upload_app  # noqa: E402

pytestmark = pytest.mark.server

BOUNDARY = "gateTestBoundary"
HEADERS = {"content-type": f"multipart/form-data; boundary={BOUNDARY}"}
CD = 'Content-Disposition: form-data; name="files"; '


def body(*parts: str, close: bool = True) -> bytes:
    """A multipart body of parts given as their header lines (each part's content is ``<p>hi</p>``)."""
    text = "".join(f"--{BOUNDARY}\r\n{headers}\r\n\r\n<p>hi</p>\r\n" for headers in parts)
    return (text + (f"--{BOUNDARY}--\r\n" if close else "")).encode("utf-8")


#: Bodies from which gradio, ungated, stores a file that is not a results file (the names it stores).
BYPASSES: dict[str, tuple[bytes, list[str]]] = {
    "filename* before filename": (body(CD + "filename*=UTF-8''x.jsonl; filename=\"evil.html\""), ["evil.html"]),
    "filename before filename*": (body(CD + "filename=\"evil.html\"; filename*=UTF-8''x.jsonl"), ["evil.html"]),
    "duplicate filename": (body(CD + 'filename="x.jsonl"; filename="evil.html"'), ["evil.html"]),
    "mixed-case FileName": (body(CD + 'filename="x.jsonl"; FileName="evil.html"'), ["evil.html"]),
    "quoted then unquoted": (body(CD + 'filename="x.jsonl"; filename=evil.html'), ["evil.html"]),
    "unquoted": (body("Content-Disposition: form-data; name=files; filename=evil.html"), ["evil.html"]),
    "decoy header line": (body(f'X-Decoy: {CD}filename="x.jsonl"\r\n{CD}filename="evil.html"'), ["evil.html"]),
    "two Content-Disposition": (body(f'{CD}filename="x.jsonl"\r\n{CD}filename="evil.html"'), ["evil.html"]),
    "good part, bad part": (body(CD + 'filename="x.jsonl"', CD + 'filename="evil.html"'), ["x.jsonl", "evil.html"]),
    "windows path": (body(CD + 'filename="C:\\\\x.jsonl\\\\evil.html"'), ["evil.html"]),
    "file of another field": (body('Content-Disposition: form-data; name="other"; filename="x.jsonl"'), []),
}
#: Ambiguous or malformed bodies that store nothing by name but are refused too (stricter than gradio).
REFUSED_TOO: dict[str, bytes] = {
    "harmless duplicate": body(CD + 'filename="evil.html"; filename="x.jsonl"'),
    "no filename": body('Content-Disposition: form-data; name="files"'),
    "filename* only": body(CD + "filename*=UTF-8''x.jsonl"),
    "file without a field name": body('Content-Disposition: form-data; filename="x.jsonl"'),
    "look-alike suffix": body(CD + 'filename="x.\uff4a\uff53\uff4f\uff4e\uff4c"'),
    "no closing delimiter": body(CD + 'filename="x.jsonl"', close=False),
    "extra parameter": body(CD + 'filename="x.jsonl"; size=3'),
    # issue 39: names gradio stores and then will not use (see test_ungated_gradio_keeps_a_dotfile_it_will_not_use)
    "hidden name": body(CD + 'filename=".hidden.jsonl"'),
    "encoded separators": body(CD + 'filename="..%2F..%2Fevil.jsonl"'),
    "encoded separator inside": body(CD + 'filename="x%2Fevil.jsonl"'),
}


#: Two Content-Type headers: gradio (starlette) reads the first boundary, a dict of the headers the last; the body
#: holds a part with ``x.jsonl`` framed by the second boundary inside a part with ``evil.html`` framed by the first.
TWO_TYPES = [
    ("content-type", "multipart/form-data; boundary=AAA"),
    ("content-type", "multipart/form-data; boundary=BBB"),
]
TWO_TYPES_BODY = (
    f'--AAA\r\n{CD}filename="evil.html"\r\n\r\n<p>--BBB\r\n{CD}filename="x.jsonl"\r\n\r\nhi\r\n'
    "--BBB--\r\n</p>\r\n--AAA--\r\n"
).encode()


def files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()} if folder.is_dir() else set()


@pytest.fixture(scope="module")
def bare(tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """A gradio app with a File and no gate (its own upload folder), to show what gradio stores."""
    folder = tmp_path_factory.mktemp("bare-uploads")
    with file_upload_app(folder) as port:
        yield f"http://127.0.0.1:{port}/gradio_api/upload", folder


@pytest.fixture()
def space(layout, tmp_path: Path, monkeypatch) -> Iterator[tuple[str, Path]]:
    from helpers.guarded_space import Clock, Space

    folder = tmp_path / "uploads"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(folder))
    app = Space(layout, tmp_path / "db.sqlite", Clock(1000.0))
    try:
        yield app.url, folder
    finally:
        app.close()


@pytest.fixture()
def widget(layout, tmp_path: Path, monkeypatch) -> Iterator[tuple[str, Path]]:
    from madqa.metric import app

    folder = tmp_path / "widget-uploads"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(folder))
    monkeypatch.setenv("MADQA_DATASET", str(layout.dataset_dir))
    port = free_port()
    demo = app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/", folder
    finally:
        demo.close()


@pytest.mark.parametrize("case", sorted(BYPASSES))
def test_ungated_gradio_stores_what_the_bypass_names(bare, case: str) -> None:
    """The attack is real: gradio parses these bodies and stores a non-results file (the gate's reason to be)."""
    url, folder = bare
    data, names = BYPASSES[case]
    for old in folder.iterdir():  # the same content lands in the same folder: start empty
        shutil.rmtree(old) if old.is_dir() else old.unlink()
    response = httpx.post(url, content=data, headers=HEADERS)
    assert response.status_code == 200, response.text
    assert [Path(p).name for p in response.json()] == names and all(Path(p).is_file() for p in response.json())
    assert files_under(folder), "gradio keeps a file on disk (for another field: a nameless temp file)"


def test_ungated_gradio_reads_the_first_of_two_content_types(bare) -> None:
    url, _ = bare
    response = httpx.post(url, content=TWO_TYPES_BODY, headers=TWO_TYPES)
    assert response.status_code == 200 and [Path(p).name for p in response.json()] == ["evil.html"]


def check_refused(url: str, folder: Path) -> None:
    before = files_under(folder)
    for case, data in [*((c, d) for c, (d, _) in BYPASSES.items()), *REFUSED_TOO.items()]:
        response = httpx.post(url + "gradio_api/upload", content=data, headers=HEADERS)
        assert response.status_code == 415, (case, response.status_code, response.text)
    assert files_under(folder) == before, "nothing stored"
    types = (
        "multipart/form-data; boundary=x; boundary=" + BOUNDARY,
        HEADERS["content-type"] + "; charset=utf-16",
        "multipart/form-data; Boundary=" + BOUNDARY,
    )
    for other in types:
        response = httpx.post(
            url + "gradio_api/upload", content=body(CD + 'filename="x.jsonl"'), headers={"content-type": other}
        )
        assert response.status_code == 415, (other, response.text)
    response = httpx.post(url + "gradio_api/upload", content=TWO_TYPES_BODY, headers=TWO_TYPES)
    assert response.status_code == 415, response.text
    assert (
        httpx.post(
            url + "gradio_api/process_recording", content=body(CD + 'filename="v.mp4"'), headers=HEADERS
        ).status_code
        == 404
    )
    assert files_under(folder) == before
    ok = httpx.post(url + "gradio_api/upload", content=body(CD + 'filename="x.jsonl"'), headers=HEADERS)
    assert ok.status_code == 200 and Path(ok.json()[0]).name == "x.jsonl"  # the same framing, a good name


def test_the_space_refuses_every_bypass_and_stores_nothing(space) -> None:
    check_refused(*space)


def test_the_metric_widget_refuses_every_bypass_and_stores_nothing(widget) -> None:
    url, folder = widget
    for name in ("page.html", "notes.txt", "results.jsonl.sh"):
        response = httpx.post(url + "gradio_api/upload", files={"files": (name, b"<p>hi</p>", "text/html")})
        assert response.status_code == 415, (name, response.status_code)
    big = {"files": ("big.jsonl", b"x" * (25 * 1024 * 1024 + 70_000), "text/plain")}
    assert httpx.post(url + "gradio_api/upload", files=big).status_code == 413
    check_refused(url, folder)


def test_the_metric_widget_deletes_each_upload_after_scoring(widget, layout, tmp_path: Path) -> None:
    from gradio_client import handle_file

    from madqa.loading_script.load import load_gold

    url, folder = widget
    gold = load_gold("dev", layout.dataset_dir)
    good, bad = tmp_path / f"good-{uuid.uuid4().hex[:6]}.jsonl", tmp_path / f"bad-{uuid.uuid4().hex[:6]}.jsonl"
    good.write_text(
        "".join(json.dumps({"id": g["id"], "answer": g["answer_variants"][0], "steps": 1}) + "\n" for g in gold),
        encoding="utf-8",
    )
    bad.write_text('{"id": "x", "answer": {"a": 1}}\n', encoding="utf-8")
    client = gradio_client(url)
    markdown, _, report = client.predict(handle_file(str(good)), "dev", api_name="/score")
    assert report["accuracy"] == 1.0, markdown
    markdown, _, report = client.predict(handle_file(str(bad)), "dev", api_name="/score")
    assert markdown.startswith("**Not scored.**") and report["problem_count"] == 1
    leftover = [p for name in (good.name, bad.name) for p in folder.rglob(name)]
    assert not leftover, leftover


# -- names gradio stores and then will not use (issue 39) ----------------------------------------------------------

HIDDEN = {
    ".hidden.jsonl": "starts with a dot",
    "..%2F..%2Fevil.jsonl": "starts with a dot",
    "x%2Fevil.jsonl": "holds a percent-encoded character (%2F)",
}


def test_ungated_gradio_keeps_a_dotfile_it_will_not_use(tmp_path: Path, monkeypatch, capfd) -> None:
    """Why the gate refuses these names: gradio stores them, then refuses the dotfile to the event (its upload
    folder under the working directory, as on a Space) with a bare error, and the file stays in its cache."""
    import gradio as gr
    from gradio_client import handle_file
    from gradio_client.exceptions import AppError
    from helpers.clients import gradio_client

    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "uploads"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(folder))
    with gr.Blocks() as demo:
        upload, out = gr.File(), gr.Textbox()
        gr.Button().click(lambda path: Path(path).read_text(encoding="utf-8"), upload, out, api_name="read")
    port = free_port()
    launch_gradio(demo, server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        url = f"http://127.0.0.1:{port}/"
        for name in (".hidden.jsonl", "..%2F..%2Fevil.jsonl"):
            response = httpx.post(url + "gradio_api/upload", content=body(CD + f'filename="{name}"'), headers=HEADERS)
            assert response.status_code == 200 and Path(response.json()[0]).name == name, response.text
        plain = tmp_path / "plain.jsonl"
        plain.write_text("<p>hi</p>", encoding="utf-8")
        client = gradio_client(url)
        assert client.predict(handle_file(str(plain)), api_name="/read") == "<p>hi</p>"  # the app works
        hidden = tmp_path / ".hidden.jsonl"
        hidden.write_text("<p>hi</p>", encoding="utf-8")
        capfd.readouterr()
        with pytest.raises(AppError) as refused:
            client.predict(handle_file(str(hidden)), api_name="/read")
        assert "Dotfiles" not in str(refused.value)  # the visitor is not told why; the server log has a traceback
        assert "InvalidPathError: Dotfiles located in the temporary directory" in capfd.readouterr().err
        assert {".hidden.jsonl", "..%2F..%2Fevil.jsonl"} <= {p.name for p in folder.rglob("*") if p.is_file()}
    finally:
        demo.close()


def test_the_space_refuses_hidden_and_encoded_names_with_their_reason(space, tmp_path: Path) -> None:
    from gradio_client import handle_file
    from helpers.clients import gradio_client
    from helpers.guarded_space import FORM

    url, folder = space
    before = files_under(folder)
    for name, reason in HIDDEN.items():
        response = httpx.post(url + "gradio_api/upload", content=body(CD + f'filename="{name}"'), headers=HEADERS)
        assert response.status_code == 415, (name, response.text)
        assert response.text.startswith(f"the file name {name!r} {reason}") and "rename it" in response.text
    hidden = tmp_path / ".hidden.jsonl"  # the same through the Space's own client API: refused at the upload
    hidden.write_text('{"id": "x", "answer": ["y"]}\n', encoding="utf-8")
    with pytest.raises(httpx.HTTPStatusError) as refused:
        gradio_client(url).predict(handle_file(str(hidden)), *FORM, api_name="/submit")
    assert refused.value.response.status_code == 415 and "starts with a dot" in refused.value.response.text
    assert files_under(folder) == before, "nothing stored, so nothing left in the cache"
