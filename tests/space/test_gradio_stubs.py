"""gradio imported through the Space writes no ``.pyi`` stubs (:mod:`madqa.space.gradio_stubs`, issue 47).

Each case runs in a fresh interpreter (gradio is imported once per process). A component class defined in a
module of the test's folder is what gradio's stub writer would write a ``.pyi`` beside: the file is the evidence.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

#: A gradio component of its own module (what gradio's ComponentMeta writes a stub for, beside the module).
COMPONENT_MODULE = """
from gradio.components.base import Component


class Probe(Component):
    EVENTS = ["change"]

    def preprocess(self, payload):
        return payload

    def postprocess(self, value):
        return value

    def example_payload(self):
        return None

    def example_value(self):
        return None

    def api_info(self):
        return {"type": "string"}
"""


def _python(code: str, folder: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=folder,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(folder), *sys.path]),
            "GRADIO_ANALYTICS_ENABLED": "False",
        },
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "probe_component.py").write_text(COMPONENT_MODULE, encoding="utf-8")
    return tmp_path


def test_gradio_imported_through_the_space_writes_no_stub_and_works(folder: Path) -> None:
    out = _python(
        "import sys\n"
        "import madqa.space\n"
        "import gradio as gr\n"
        "import gradio.component_meta as meta\n"
        "import probe_component\n"
        "print(meta.create_or_modify_pyi.__module__)\n"
        "print(any(type(f).__name__ == '_SkipStubWriting' for f in sys.meta_path))\n"
        "with gr.Blocks() as demo:\n"
        "    box = gr.Textbox(value='kept')\n"
        "print(demo.get_config_file()['components'][0]['props']['value'])\n",
        folder,
    )
    assert out.split() == ["madqa.space.gradio_stubs", "False", "kept"]  # hook gone after its one use; app built
    assert not (folder / "probe_component.pyi").exists()


def test_gradio_alone_still_writes_its_stub(folder: Path) -> None:
    """The counter-check: without the Space's package the same component gets its stub (what was skipped)."""
    _python("import gradio\nimport probe_component\n", folder)
    assert "class Probe" in (folder / "probe_component.pyi").read_text(encoding="utf-8")


@pytest.mark.slow
def test_gradio_imported_first_is_left_as_it_is(folder: Path) -> None:
    out = _python(
        "import gradio.component_meta as meta\n"
        "from madqa.space.gradio_stubs import skip_stub_writing\n"
        "print(skip_stub_writing(), meta.create_or_modify_pyi.__module__)\n",
        folder,
    )
    assert out.split() == ["False", "gradio.component_meta"]
