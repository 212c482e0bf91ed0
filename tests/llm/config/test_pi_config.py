"""``save_model`` and ``fit_pi_compaction`` beside other writers: saves at once in separate
processes, and beside the real Pi's SettingsManager, lose nothing; fields pinb does not
model are kept."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pinb.errors import UserFileError
from pinb.llm.config.pi_config import fit_pi_compaction, save_model
from tests.pi.settings import pi_compaction, pi_save_themes

#: One writer process: waits for the start file, then makes its ``count`` calls at once.
_WRITER = textwrap.dedent("""\
    import os, sys, time
    from pathlib import Path
    from pinb.llm.config.pi_config import fit_pi_compaction, save_model
    what, agent, name, count, go = sys.argv[1:]
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.001)
    for i in range(int(count)):
        if what == "save":
            save_model(f"{name}-{i}/m", "http://127.0.0.1:9", window=4096 + i, agent=Path(agent))
        else:
            fit_pi_compaction(f"{name}/m-{i}", 4096 + 64 * i, Path(agent))
    """)


def _writers(
    what: str, agent: Path, names: list[str], count: int, go: Path
) -> list[subprocess.Popen[str]]:
    """Writer processes, started and ready: they all begin when ``go`` is made."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, what, str(agent), name, str(count), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    for process in processes:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
    return processes


def _finish(processes: list[subprocess.Popen[str]]) -> None:
    for process in processes:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err


def test_saves_at_once_in_separate_processes_keep_every_provider(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "models.json").write_text(
        json.dumps({"providers": {"mine": {"baseUrl": "http://x/v1", "api": "anthropic-messages"}}})
    )
    expected = {"mine"}
    for round_ in range(4):
        go = tmp_path / f"go-{round_}"
        names = [f"r{round_}w{w}" for w in range(3)]
        processes = _writers("save", agent, names, 10, go)
        go.touch()
        _finish(processes)
        expected |= {f"{name}-{i}" for name in names for i in range(10)}
        providers = json.loads((agent / "models.json").read_text())["providers"]
        assert set(providers) == expected, f"round {round_}: lost {expected - set(providers)}"
    assert len(expected) == 121
    assert providers["r3w2-9"]["models"] == [{"id": "m", "contextWindow": 4105, "maxTokens": 1026}]
    assert providers["mine"] == {"baseUrl": "http://x/v1", "api": "anthropic-messages"}
    assert sorted(p.name for p in agent.iterdir()) == ["models.json"]  # no lock or temp left


def test_fits_beside_pis_own_settings_writes_lose_nothing(pi_install: Path, tmp_path: Path) -> None:
    """pinb's fits in two processes while the real Pi's SettingsManager saves settings:
    every fit and every one of Pi's saves lands, and Pi resolves the fitted values."""
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({"theme": "dark", "quietStartup": True}))
    go = tmp_path / "go"
    processes = _writers("fit", agent, ["a", "b"], 10, go)
    go.touch()
    themes = [f"theme-{i}" for i in range(20)]
    errors = pi_save_themes(pi_install, agent, *themes)
    _finish(processes)
    assert errors == []
    settings = json.loads((agent / "settings.json").read_text())
    assert settings["theme"] == "theme-19" and settings["quietStartup"] is True
    specs = [f"{name}/m-{i}" for name in ("a", "b") for i in range(10)]
    assert sorted(settings["compaction"]["modelOverrides"]) == sorted(specs)
    resolved = pi_compaction(pi_install, agent, "a/m-0", "b/m-9")
    assert resolved == {
        "a/m-0": {"reserveTokens": 1024, "keepRecentTokens": 1024},
        "b/m-9": {"reserveTokens": 1168, "keepRecentTokens": 1168},
        "errors": [],
    }


def test_a_save_keeps_what_pinb_does_not_model(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    theirs = {
        "providers": {
            "local": {
                "baseUrl": "http://old/v1",
                "api": "openai-responses",
                "apiKey": "$LOCAL_KEY",
                "headers": {"X-Team": "a"},
                "compat": {"supportsDeveloperRole": False},
                "models": [
                    {"id": "other", "contextWindow": 1},
                    {"id": "small", "name": "Small", "reasoning": True, "cost": {"input": 1}},
                ],
            }
        },
        "somethingNew": [1, 2],
    }
    path.write_text(json.dumps(theirs))
    edited = save_model("local/small", "http://127.0.0.1:8000", window=8192, agent=tmp_path)
    assert edited.changed and edited.path == path
    entry = json.loads(path.read_text())["providers"]["local"]
    assert entry["baseUrl"] == "http://127.0.0.1:8000/v1"
    assert entry["api"] == "openai-responses" and entry["apiKey"] == "$LOCAL_KEY"
    assert entry["headers"] == {"X-Team": "a"}
    assert entry["compat"] == {"supportsDeveloperRole": False}
    assert entry["models"] == [
        {"id": "other", "contextWindow": 1},
        {"id": "small", "name": "Small", "reasoning": True, "cost": {"input": 1},
         "contextWindow": 8192, "maxTokens": 2048},
    ]  # fmt: skip
    assert json.loads(path.read_text())["somethingNew"] == [1, 2]


@pytest.mark.parametrize(
    ("file", "message"),
    [
        ({"providers": []}, "'providers' is not an object"),
        ({"providers": {"local": "x"}}, "provider 'local' is not an object"),
        ({"providers": {"local": {"models": {}}}}, "the models of provider 'local' are not a list"),
    ],
)
def test_a_models_json_of_another_shape_is_refused_untouched(
    tmp_path: Path, file: dict[str, object], message: str
) -> None:
    path = tmp_path / "models.json"
    path.write_text(json.dumps(file))
    before = path.read_bytes()
    with pytest.raises(UserFileError) as caught:
        save_model("local/small", "http://127.0.0.1:8000", window=8192, agent=tmp_path)
    assert str(caught.value) == f"{path}: {message}; fix it by hand first"
    assert path.read_bytes() == before


def test_a_fit_keeps_the_other_fields_of_the_models_override(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"compaction": {"modelOverrides": {"l/s": {"extra": True}}}}))
    fit_pi_compaction("l/s", 4096, tmp_path)
    assert json.loads(path.read_text())["compaction"]["modelOverrides"]["l/s"] == {
        "extra": True, "reserveTokens": 1024, "keepRecentTokens": 1024,
    }  # fmt: skip
