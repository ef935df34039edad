"""The page corpus of a prepared release: published to a fake ``HfApi`` and used by another set-up instead of
extracting (``--pages-repo``: a Hub dataset, its folder or a `madqa extract --out` file); an incomplete preparation
is not published."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import helpers.release_host as release_host
from helpers.hub import FakeHfApi
from helpers.release_host import Host, setup_json, write_release

from madqa.cli import main

#: The shared fixtures ``home`` and ``host``, made visible to pytest in this module.
home_fixture, host_fixture = release_host.home_fixture, release_host.host_fixture


def _front_matter(path: Path) -> dict[str, Any]:
    import yaml

    return yaml.safe_load(path.read_text().split("---", 2)[1])


def test_published_page_corpus_replaces_extraction(
    home: Path, host: Host, tmp_path: Path, capsys, monkeypatch
) -> None:
    host.fix()
    folder = write_release(tmp_path / "MADQA", host.url)
    assert setup_json(folder, capsys, "--no-index")[0] == 0
    from madqa.loading_script import extract, release
    from madqa.loading_script.pages_repo import publish_pages

    pushed = tmp_path / "pushed"
    api = FakeHfApi(pushed)
    done = publish_pages(str(folder), "org/madqa-pages", api=api)
    assert done.pages == 18 and done.documents == 9
    assert sorted(done.files) == ["README.md", "data/pages/pages-00000-of-00001.parquet"]
    assert api.calls[0] == (
        "create_repo",
        {"repo_id": "org/madqa-pages", "repo_type": "dataset", "private": False, "exist_ok": True},
    )
    meta = _front_matter(pushed / "README.md")
    assert meta["license"] == "cc-by-nc-4.0" and meta["configs"][0]["config_name"] == "pages"
    assert meta["madqa"]["source_revision"] == release.read_prepared(str(folder))["source_revision"]
    assert meta["madqa"]["extraction"]["ocr_language"] == extract.OCR_LANGUAGE
    assert {f["name"] for f in meta["dataset_info"]["features"]} == {"document", "page", "text", "text_source"}

    def no_extraction(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("extraction must not run with a pages repo")

    monkeypatch.setattr(extract, "extract_corpus", no_extraction)
    other = write_release(tmp_path / "copy" / "MADQA", host.url)
    rc, out = setup_json(other, capsys, "--pages-repo", str(pushed), "--no-index")
    assert rc == 0 and out["stats"]["pages"] == 18
    assert release.read_prepared(str(other))["pages"]["source"] == f"pages repo {pushed}"
    from madqa.loading_script.load import load_pages

    assert load_pages(str(other)) == load_pages(str(folder))

    extracted = tmp_path / "extracted.jsonl"  # what `madqa extract --out` writes is accepted too
    extracted.write_text("".join(json.dumps(r) + "\n" for r in load_pages(str(folder))))
    third = write_release(tmp_path / "third" / "MADQA", host.url)
    assert setup_json(third, capsys, "--pages-repo", str(extracted), "--no-index")[0] == 0
    assert load_pages(str(third)) == load_pages(str(folder))

    monkeypatch.setattr("huggingface_hub.HfApi", lambda token=None: FakeHfApi(tmp_path / "cli-pushed"))
    assert main(["publish", "pages", "--dataset", str(folder), "--repo", "org/pages2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pages"] == 18
    assert main(["publish", "pages", "--dataset", str(folder), "--repo", "not-a-repo"]) == 2


def test_incomplete_corpus_is_not_published(home: Path, host: Host, tmp_path: Path, capsys, caplog) -> None:
    folder = write_release(tmp_path / "MADQA", host.url)
    assert setup_json(folder, capsys, "--no-index")[0] == 1
    assert main(["publish", "pages", "--dataset", str(folder), "--repo", "org/p"]) == 2
    assert "incomplete" in caplog.text
