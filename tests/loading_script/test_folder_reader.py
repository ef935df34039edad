"""The pyarrow reader of a local dataset folder (what `madqa info` and `madqa evaluate` use, issue 47) gives the
rows ``datasets.load_dataset`` gives for the same files: every config, every split, every column, in order."""

from __future__ import annotations

import datasets
import pytest

from madqa.loading_script.load import _local_data_files, folder_configs, read_folder_config


@pytest.fixture(scope="module")
def configs(layout) -> list[str]:
    names = folder_configs(layout.dataset_dir)
    assert {"default", "documents", "pages"} <= set(names), names
    return names


def test_the_pyarrow_reader_equals_load_dataset_on_every_config(layout, configs, tmp_path) -> None:
    for config in configs:
        fast = read_folder_config(layout.dataset_dir, config)
        files = _local_data_files(layout.dataset_dir, config)
        slow = datasets.load_dataset("parquet", data_files=files, cache_dir=str(tmp_path / "cache"))
        assert set(fast) == set(slow), config
        for split in slow:
            expected = slow[split].to_list()
            assert len(fast[split]) == len(expected) > 0, (config, split)
            assert fast[split] == expected, (config, split)
