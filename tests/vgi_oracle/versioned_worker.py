#!/usr/bin/env python3
"""A small VGI worker written against whichever vgi-python release runs it (0.30.0, 0.39.0,
0.40.0 or 0.47.0, one venv each, made by tools/setup.sh), for the version-skew tests
(tests/test_extension_vgi_versions.py). It uses only the API those releases share; the one shape
that differs is how a schema is declared (0.30's `Schema(name=...)`, later `Schema(path=[...])`).

Catalog "versioned", schema "main":
  shout(s VARCHAR) -> VARCHAR   scalar: upper-cased s with a "!" appended
  countdown(n BIGINT)           table (k): n, n-1, ..., 1 in 100-row batches
  sdk_version()                 table (version): the vgi-python release serving it
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass
from importlib.metadata import version
from typing import Annotated

import pyarrow as pa
import pyarrow.compute as pc
from vgi import Param, Returns, ScalarFunction, Worker
from vgi.arguments import Arg
from vgi.catalog import Catalog, Schema
from vgi.invocation import BindResponse
from vgi.table_function import BindParams, ProcessParams, TableFunctionGenerator, init_single_worker
from vgi_rpc import ArrowSerializableDataclass
from vgi_rpc.rpc import OutputCollector

COUNTDOWN = pa.schema([("k", pa.int64())])
VERSION = pa.schema([("version", pa.string())])


class Shout(ScalarFunction):
    """s upper-cased, with "!" appended."""

    class Meta:
        name = "shout"
        description = "Upper-cases a string and appends an exclamation mark"

    @classmethod
    def compute(cls, s: Annotated[pa.StringArray, Param(doc="the string")]) -> Annotated[pa.StringArray, Returns()]:
        return pc.binary_join_element_wise(pc.utf8_upper(s), "!", "")


@dataclass(frozen=True)
class CountdownArgs:
    n: Annotated[int, Arg(0, doc="where to start", ge=0)]


@dataclass(kw_only=True)
class CountdownState(ArrowSerializableDataclass):
    next: int = -1


@init_single_worker
class Countdown(TableFunctionGenerator[CountdownArgs, CountdownState]):
    """n down to 1."""

    BATCH = 100

    class Meta:
        name = "countdown"
        description = "n down to 1"

    @classmethod
    def on_bind(cls, params: BindParams[CountdownArgs]) -> BindResponse:
        return BindResponse(output_schema=COUNTDOWN)

    @classmethod
    def initial_state(cls, params: ProcessParams[CountdownArgs]) -> CountdownState:
        return CountdownState(next=params.args.n)

    @classmethod
    def process(cls, params: ProcessParams[CountdownArgs], state: CountdownState, out: OutputCollector) -> None:
        if state.next <= 0:
            out.finish()
            return
        end = max(state.next - cls.BATCH, 0)
        out.emit(pa.RecordBatch.from_pydict({"k": list(range(state.next, end, -1))}, schema=COUNTDOWN))
        state.next = end


@dataclass(frozen=True)
class NoArgs:
    pass


@dataclass(kw_only=True)
class OnceState(ArrowSerializableDataclass):
    done: bool = False


@init_single_worker
class SdkVersion(TableFunctionGenerator[NoArgs, OnceState]):
    """One row: the vgi-python release this worker runs on."""

    class Meta:
        name = "sdk_version"
        description = "The vgi-python release serving this worker"

    @classmethod
    def on_bind(cls, params: BindParams[NoArgs]) -> BindResponse:
        return BindResponse(output_schema=VERSION)

    @classmethod
    def initial_state(cls, params: ProcessParams[NoArgs]) -> OnceState:
        return OnceState()

    @classmethod
    def process(cls, params: ProcessParams[NoArgs], state: OnceState, out: OutputCollector) -> None:
        if state.done:
            out.finish()
            return
        state.done = True
        out.emit(pa.RecordBatch.from_pydict({"version": [version("vgi-python")]}, schema=VERSION))


FUNCTIONS = [Shout, Countdown, SdkVersion]
# vgi-python 0.31 replaced a schema's `name` with a `path` (protocol 1.x -> 2.0).
if "path" in inspect.signature(Schema).parameters:
    MAIN = Schema(path=["main"], functions=FUNCTIONS)
else:
    MAIN = Schema(name="main", functions=FUNCTIONS)


class VersionedWorker(Worker):
    catalog = Catalog(name="versioned", schemas=[MAIN])


# VERSIONED_WORKER_PROTOCOL="<name> <version>" makes the worker declare another protocol than its
# release's: a version no release speaks (the engine must fail naming both), or a newer one over
# this release's method shapes (the engine must fall back to the older parameter shape).
if declared := os.environ.get("VERSIONED_WORKER_PROTOCOL"):
    from typing import ClassVar

    from vgi.protocol import VgiProtocol

    declared_name, declared_version = declared.split()

    class DeclaredProtocol(VgiProtocol):
        protocol_name: ClassVar[str] = declared_name
        protocol_version: ClassVar[str] = declared_version

    VersionedWorker.protocol_class = DeclaredProtocol  # type: ignore[assignment]


if __name__ == "__main__":
    VersionedWorker.main()
