"""`madqa publish pages` refuses an incomplete preparation unless told otherwise, both ways (issue 29).

Documented (loading_script/pages_repo.py ``publish_pages``, the CLI's ``--allow-incomplete``): an incomplete
preparation is not published (a corpus missing documents would silently change everyone's results) unless
``allow_incomplete``; a complete one is published without it. Pushes go to a fake ``HfApi``.
"""

from __future__ import annotations

import json
from pathlib import Path

import helpers.release_host as release_host
import pytest
from helpers.hub import FakeHfApi
from helpers.release_host import Host, setup_json, write_release

from madqa.cli import main

home_fixture, host_fixture = release_host.home_fixture, release_host.host_fixture


def test_publish_guard_refuses_incomplete_and_allows_it_on_request_and_complete_ones(
    home: Path, host: Host, tmp_path: Path, capsys, monkeypatch
) -> None:
    from madqa.loading_script.load import DatasetUnavailableError
    from madqa.loading_script.pages_repo import publish_pages

    folder = write_release(tmp_path / "MADQA", host.url)
    assert setup_json(folder, capsys, "--no-index")[0] == 1  # some documents could not be fetched: incomplete

    api = FakeHfApi(tmp_path / "refused")
    with pytest.raises(DatasetUnavailableError, match="incomplete"):
        publish_pages(str(folder), "org/pages", api=api)
    assert api.calls == [] and not (tmp_path / "refused").exists()

    apis: list[FakeHfApi] = []

    def fake_api(token: str | None = None) -> FakeHfApi:
        apis.append(FakeHfApi(tmp_path / "cli"))
        return apis[-1]

    monkeypatch.setattr("huggingface_hub.HfApi", fake_api)
    assert main(["publish", "pages", "--dataset", str(folder), "--repo", "org/pages"]) == 2
    assert all(a.calls == [] for a in apis) and not (tmp_path / "cli").exists()
    capsys.readouterr()

    allowed = publish_pages(str(folder), "org/pages", api=FakeHfApi(tmp_path / "allowed"), allow_incomplete=True)
    assert 0 < allowed.documents < 9 and (tmp_path / "allowed" / "README.md").is_file()
    assert (
        main(["publish", "pages", "--dataset", str(folder), "--repo", "org/pages", "--allow-incomplete", "--json"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["documents"] == allowed.documents

    host.fix()
    assert setup_json(folder, capsys, "--no-index")[0] == 0  # now complete
    api = FakeHfApi(tmp_path / "complete")
    done = publish_pages(str(folder), "org/pages", api=api)
    assert done.documents == 9 and api.methods == ["create_repo", "upload_folder"]
