"""What a worker says about its catalog, schemas and functions besides their signatures.

An engine shows it in SQL: DuckDB's ``duckdb_databases()`` (the catalog's comment and tags),
``duckdb_schemas()`` (each schema's) and ``duckdb_functions()`` (a function's comment, tags,
example queries and categories). Tags are free-form strings; VGI's metadata linter reads keys
such as ``vgi.title``, ``vgi.doc_llm``, ``vgi.category`` and ``vgi.source_url``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Example:
    """An example query: the SQL, what it shows, and (optionally) what it prints."""

    sql: str
    description: str = ""
    expected_output: str | None = None

    def row(self) -> dict[str, Any]:
        return {"sql": self.sql, "description": self.description, "expected_output": self.expected_output}


@dataclass(frozen=True)
class Docs:
    """A function's comment, tags, example queries and categories."""

    comment: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    examples: Sequence[Example | str] = ()
    categories: Sequence[str] = ()

    def example_rows(self) -> list[dict[str, Any]]:
        return [(e if isinstance(e, Example) else Example(e)).row() for e in self.examples]


@dataclass(frozen=True)
class Schema:
    """A schema of the worker's catalog, with its comment and tags."""

    name: str
    comment: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)


def tag_items(tags: Mapping[str, str]) -> list[tuple[str, str]]:
    """Tags as the wire's ``map<utf8, utf8>``: every key and value a string."""
    for key, value in tags.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"tag {key!r}: keys and values are strings (encode JSON values with json.dumps)")
    return list(tags.items())
