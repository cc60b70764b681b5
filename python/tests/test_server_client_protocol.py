"""``quiver.server_protocol`` says what ``crates/quiver-server-protocol`` says: read from the Rust sources."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from quiver import server_protocol as sp
from quiver.rpc import protocol_spec

CRATE = Path(__file__).resolve().parents[2] / "crates" / "quiver-server-protocol" / "src"
_STR_CONST = re.compile(r'pub const ([A-Z_]+): &str = "([^"]*)";')
_INT_CONST = re.compile(r"pub const ([A-Z_]+): (?:i64|usize|u64) = (\d+)(?: << (\d+))?;")
_TYPED = {"utf8": pa.string(), "binary": pa.binary(), "int64": pa.int64()}


def source(name: str) -> str:
    return (CRATE / name).read_text()


def strings(text: str) -> dict[str, str]:
    return dict(_STR_CONST.findall(text))


def module(text: str, name: str) -> str:
    """The body of ``pub mod name { ... }`` (no nested braces in these modules)."""
    match = re.search(rf"pub mod {name} \{{(.*?)\n\}}", text, re.DOTALL)
    assert match, f"no module {name}"
    return match.group(1)


def test_protocol_name_version_and_methods() -> None:
    lib = strings(source("lib.rs"))
    assert (lib["PROTOCOL_NAME"], lib["PROTOCOL_VERSION"]) == (sp.PROTOCOL_NAME, sp.PROTOCOL_VERSION)
    methods_rs = source("methods.rs")
    top = {k: v for k, v in strings(methods_rs.split("pub mod param")[0]).items()}
    assert {k: getattr(sp, k) for k in top} == top
    assert tuple(top.values()) == sp.METHODS
    assert set(protocol_spec(sp.QuiverServer).methods) == set(sp.METHODS)
    for rust_module, python_class in (("param", sp.Param), ("prepared", sp.Prepared), ("tables", sp.Tables)):
        names = strings(module(methods_rs, rust_module))
        assert {k: getattr(python_class, k) for k in names} == names, rust_module


def _rust_params(methods_rs: str, function: str) -> list[tuple[str, pa.DataType, bool]]:
    param = strings(module(methods_rs, "param"))
    body = re.search(rf"fn {function}\(\) -> Vec<Field> \{{(.*?)\n\}}", methods_rs, re.DOTALL)
    assert body, function
    fields: list[tuple[str, pa.DataType, bool]] = []
    for token in re.finditer(r"table_ref\(\)|(utf8|binary|int64)\(param::([A-Z_]+), (true|false)\)", body.group(1)):
        if token.group(0) == "table_ref()":
            fields += _rust_params(methods_rs, "table_ref")
        else:
            fields.append((param[token.group(2)], _TYPED[token.group(1)], token.group(3) == "true"))
    return fields


@pytest.mark.parametrize("method", sp.METHODS)
def test_parameters_match_the_rust_table_in_order_type_and_nullability(method: str) -> None:
    spec = protocol_spec(sp.QuiverServer).methods[method]
    python = [(f.name, f.type, f.nullable) for f in spec.params_schema]
    assert python == _rust_params(source("methods.rs"), f"{method}_params")


def test_insert_handshake_errors_and_limits() -> None:
    insert_rs = source("insert.rs")
    insert = strings(insert_rs)
    assert (insert["COMMIT_KEY"], insert["COMMIT_VALUE"], insert["ROWS_FIELD"]) == (
        sp.COMMIT_KEY,
        sp.COMMIT_VALUE,
        sp.ROWS_FIELD,
    )
    assert set(re.findall(r'InsertMode::\w+ => "(\w+)"', insert_rs)) == {mode.value for mode in sp.InsertMode}
    errors_rs = source("errors.rs")
    assert {k: getattr(sp, k) for k in strings(errors_rs)} == strings(errors_rs)
    for error_type in (
        sp.AUTHENTICATION_ERROR,
        sp.LIMIT_EXCEEDED_ERROR,
        sp.PROTOCOL_ERROR,
        sp.NOT_FOUND_ERROR,
        sp.SERVER_STOPPING_ERROR,
        sp.SERVER_BUSY_ERROR,
    ):
        assert f'"{error_type}"' in errors_rs
    limits = {name: int(base) << int(shift or 0) for name, base, shift in _INT_CONST.findall(source("limits.rs"))}
    assert len(limits) == 13
    assert {k: getattr(sp, k) for k in limits} == limits
    session = _INT_CONST.findall(source("session.rs"))
    assert [(name, int(value)) for name, value, _ in session] == [("SESSION_ID_HEX_DIGITS", sp.SESSION_ID_HEX_DIGITS)]


def test_addresses_parse_as_the_rust_parser_does() -> None:
    for text in ("tcp://127.0.0.1:0", "tcp://[::1]:5432", "tcp://db.example:9", "unix:///tmp/q.sock"):
        assert str(sp.Address.parse(text)) == text
    assert sp.Address.parse("tcp://localhost:1").is_local() and sp.Address.parse("unix:///x").is_local()
    assert not sp.Address.parse("tcp://0.0.0.0:1").is_local()
    for text, why in (
        ("http://x:1", "scheme"),
        ("unix://relative", "absolute"),
        ("tcp://host", "port"),
        ("tcp://host:99999", "port"),
        ("tcp://:5", "host"),
    ):
        with pytest.raises(ValueError, match=why):
            sp.Address.parse(text)


def test_session_info_checks_the_reply() -> None:
    reply = {"server_version": "0.1.0", "duckdb_version": "v2.0.0", "session_id": "0" * 32, "database": ":memory:"}
    assert sp.SessionInfo.from_reply(reply).session_id == "0" * 32
    with pytest.raises(ValueError, match="session id"):
        sp.SessionInfo.from_reply({**reply, "session_id": "A" * 32})
    with pytest.raises(ValueError, match="database"):
        sp.SessionInfo.from_reply({k: v for k, v in reply.items() if k != "database"})
