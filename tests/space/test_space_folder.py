"""The Space folder as pushed and its configuration: pinned requirements, no labels or local paths, settings read
from the environment, the rate-limit key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.paths import ROOT

pytest.importorskip("gradio")

SPACE = ROOT / "space"


def test_space_requirements_pin_this_release_of_madqa() -> None:
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((SPACE.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = [x.strip() for x in (SPACE / "requirements.txt").read_text(encoding="utf-8").splitlines()]
    reqs = {r.name: r for r in (Requirement(x) for x in lines if x and not x.startswith("#"))}
    madqa = reqs["madqa"]
    assert madqa.url is None and str(madqa.specifier) == f"=={project['version']}"  # an index release, no path
    assert madqa.extras <= set(project["optional-dependencies"]) and "space" in madqa.extras
    sdk = re.search(r"^sdk_version: (\S+)$", (SPACE / "README.md").read_text(encoding="utf-8"), re.M).group(1)
    assert str(reqs["gradio"].specifier) == f"=={sdk}"


def test_space_folder_is_pushable_and_holds_no_labels_or_local_paths() -> None:
    readme = (SPACE / "README.md").read_text(encoding="utf-8")
    header = readme.split("---")[1]
    assert re.search(r"^sdk: gradio$", header, re.M) and re.search(r"^app_file: app.py$", header, re.M)
    assert (SPACE / "requirements.txt").is_file() and (SPACE / "app.py").is_file()
    for path in SPACE.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            text = path.read_text(encoding="utf-8", errors="replace")
            assert "/work/" not in text and "/home/" not in text and "/tmp/" not in text, path
            assert 'answer_variants": [[' not in text, path
            assert not path.name.startswith("test_labels"), path


def test_config_from_env(tmp_path: Path) -> None:
    from madqa.space.config import SpaceConfig

    cfg = SpaceConfig.from_env({"MADQA_HOME": str(tmp_path), "MADQA_SPACE_MAX_MB": "3", "MADQA_SPACE_JUDGE": "x"})
    assert cfg.db_path == tmp_path / "space" / "leaderboard.sqlite" and cfg.max_file_bytes == 3 * 1024 * 1024
    assert cfg.labels_path == tmp_path / "private" / "test_labels.jsonl" and cfg.mode == "judge"
    assert not cfg.on_spaces and SpaceConfig.from_env({"MADQA_HOME": str(tmp_path), "SPACE_ID": "a/b"}).on_spaces
    many = SpaceConfig.from_env({"MADQA_HOME": str(tmp_path), "MADQA_SPACE_AGENT_MODEL": " local, openai:gpt-4.1 ,"})
    assert many.agent_models == ("local", "openai:gpt-4.1") and many.agent_model == "local"
    assert cfg.agent_models == ("local",)
    with pytest.raises(ValueError, match="MADQA_SPACE_RATE_LIMIT"):
        SpaceConfig.from_env({"MADQA_HOME": str(tmp_path), "MADQA_SPACE_RATE_LIMIT": "many"})


def test_rate_limit_key_prefers_the_hf_user_over_the_ip() -> None:
    from types import SimpleNamespace

    from madqa.space.app import user_key

    request = SimpleNamespace(client=SimpleNamespace(host="10.1.2.3"))
    assert user_key(request, None) == "ip:10.1.2.3"
    assert user_key(request, SimpleNamespace(username="alice")) == "hf:alice"
    assert user_key(None, None) == "ip:unknown"


def test_the_about_tab_cites_the_paper_as_the_dataset_card_does() -> None:
    from madqa.space.content import ABOUT, CITATION

    card = (ROOT / "dataset_card" / "README.md").read_text(encoding="utf-8")
    (entry,) = re.findall(r"```bibtex\n(.*?)```", card, re.S)
    assert CITATION == entry and CITATION in ABOUT  # one citation, no placeholder
    assert "2603.12180" in CITATION and "Borchmann" in CITATION
