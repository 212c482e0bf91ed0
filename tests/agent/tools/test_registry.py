"""The tool set as a whole: names, JSON schemas, the Tool protocol, paths and argument parsing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pinb.agent.tool import Tool, ToolContext
from pinb.agent.tools import (
    ALL_TOOL_NAMES,
    DEFAULT_TOOL_NAMES,
    READ_ONLY_TOOL_NAMES,
    BashTool,
    ReadTool,
    all_tools,
    default_tools,
    read_only_tools,
    tools_by_name,
)
from pinb.agent.tools.paths import (
    ToolInputError,
    expand_path,
    optional_bool,
    optional_int,
    optional_number,
    optional_str,
    required_str,
    resolve_read_path,
)
from pinb.errors import PinbError


def test_default_and_named_sets() -> None:
    assert (
        [tool.name for tool in default_tools()]
        == ["read", "bash", "edit", "write"]
        == list(DEFAULT_TOOL_NAMES)
    )
    assert [tool.name for tool in read_only_tools()] == list(READ_ONLY_TOOL_NAMES)
    assert [tool.name for tool in all_tools()] == list(ALL_TOOL_NAMES)
    assert sorted(ALL_TOOL_NAMES) == ["bash", "edit", "find", "grep", "ls", "read", "write"]
    assert [tool.name for tool in tools_by_name(" grep, read,,grep ")] == ["grep", "read"]
    assert [tool.name for tool in tools_by_name(["ls"])] == ["ls"]


def test_unknown_names_list_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"Unknown tool 'python'; built-in tools are: read, bash"):
        tools_by_name("read,python")


def test_a_pinned_cwd_reaches_every_tool(tmp_path: Path) -> None:
    for tool in all_tools(tmp_path):
        assert getattr(tool, "cwd", None) == tmp_path


@pytest.mark.parametrize("tool", all_tools(), ids=lambda tool: tool.name)
def test_every_tool_meets_the_protocol_with_a_usable_schema(tool: Tool) -> None:
    assert isinstance(tool, Tool)
    assert len(tool.description) > 80
    schema = tool.parameters
    json.dumps(schema)
    assert schema["type"] == "object"
    properties = schema["properties"]
    assert set(schema.get("required", [])) <= set(properties)
    for name, spec in properties.items():
        assert spec["type"] in {"string", "number", "boolean"}, name
        assert spec["description"], name


def test_schemas_are_not_shared_between_instances() -> None:
    first, second = ReadTool(), ReadTool()
    first.parameters["properties"]["extra"] = {"type": "string", "description": "x"}
    assert "extra" not in second.parameters["properties"]


def test_results_are_pi_content_blocks(workdir: Path, context: ToolContext) -> None:
    (workdir / "a.txt").write_text("alpha\n")
    calls = {
        "read": {"path": "a.txt"},
        "write": {"path": "b.txt", "content": "beta\n"},
        "edit": {"path": "b.txt", "oldText": "beta", "newText": "gamma"},
        "bash": {"command": "cat b.txt"},
        "ls": {},
        "grep": {"pattern": "a"},
        "find": {"pattern": "*.txt"},
    }
    for tool in tools_by_name(calls):  # in the order above: write before edit and bash
        result = tool.execute(calls[tool.name], context)
        assert not result.is_error, (tool.name, result)
        assert all(block["type"] in {"text", "image"} for block in result.content)
        json.dumps({"content": result.content, "details": result.details})
    assert (workdir / "b.txt").read_text() == "gamma\n"


# --- paths ---------------------------------------------------------------------------


def test_expand_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    cwd = tmp_path / "cwd"
    assert expand_path("a/../b.txt", cwd) == cwd / "b.txt"
    assert expand_path("/abs/x", cwd) == Path("/abs/x")
    assert expand_path("~", cwd) == tmp_path / "home"
    assert expand_path("~/notes.md", cwd) == tmp_path / "home" / "notes.md"
    assert expand_path("@src/a.py", cwd) == cwd / "src/a.py"
    assert expand_path("with\u00a0space.txt", cwd) == cwd / "with space.txt"


def test_a_real_at_file_keeps_its_name(tmp_path: Path) -> None:
    (tmp_path / "@types").mkdir()
    assert expand_path("@types", tmp_path) == tmp_path / "@types"


def test_read_path_finds_macos_screenshot_names(tmp_path: Path) -> None:
    actual = tmp_path / "Screenshot 2024-01-01 at 10.00.00\u202fAM.png"
    actual.write_bytes(b"x")
    assert resolve_read_path("Screenshot 2024-01-01 at 10.00.00 AM.png", tmp_path) == actual
    curly = tmp_path / "Capture d\u2019écran.png"
    curly.write_bytes(b"x")
    assert resolve_read_path("Capture d'écran.png", tmp_path) == curly
    assert resolve_read_path("missing.png", tmp_path) == tmp_path / "missing.png"


def test_argument_parsing() -> None:
    assert optional_int({"n": 3.9}, "n") == 3
    assert optional_int({"n": " 7 "}, "n") == 7
    assert optional_int({"n": None}, "n") is None
    assert optional_number({}, "n") is None
    assert optional_str({"s": ""}, "s") is None
    assert optional_bool({"b": "TRUE"}, "b") is True
    assert optional_bool({}, "b", default=True) is True
    for arguments, key in (({"n": True}, "n"), ({"n": "inf"}, "n"), ({"n": [1]}, "n")):
        with pytest.raises(ToolInputError):
            optional_number(arguments, key)
    with pytest.raises(ToolInputError, match="at least 1"):
        optional_int({"n": 0}, "n", minimum=1)
    with pytest.raises(ToolInputError, match="must be a string, got an object"):
        optional_str({"s": {}}, "s")


def test_a_bad_argument_is_a_pinb_error_and_still_a_value_error(workdir: Path) -> None:
    with pytest.raises(PinbError) as caught:
        required_str({}, "path")
    assert type(caught.value) is ToolInputError
    assert isinstance(caught.value, ValueError)  # callers that caught a ValueError still do
    assert caught.value._render_traceback_() == [
        "ToolInputError: Missing required argument 'path'."
    ]
    # A tool turns it into an error result the model reads, not an exception.
    result = ReadTool().execute({"path": 7}, ToolContext(cwd=workdir))
    assert result.is_error
    assert result.content == [
        {"type": "text", "text": "Argument 'path' must be a string, got a number."}
    ]


def test_bash_description_mentions_the_limits() -> None:
    assert "2000 lines" in BashTool().description and "50KB" in BashTool().description
