"""A worker whose method bodies are Python on quiver_native's Rust server: ``Calculator`` 1.0.0.

python native_rpc_worker.py              serve stdin/stdout
python native_rpc_worker.py --unix PATH  serve a Unix socket (prints UNIX:<path>)
"""

import sys

import pyarrow as pa
import quiver_native


def fail(reason: str) -> None:
    raise ValueError(f"refused: {reason}")


def service() -> quiver_native.RpcService:
    calculator = quiver_native.RpcService("Calculator", "1.0.0")
    numbers = pa.schema([pa.field("a", pa.float64(), nullable=False), pa.field("b", pa.float64(), nullable=False)])
    calculator.unary("add", numbers, pa.float64(), lambda a, b: a + b)
    calculator.unary(
        "greet", pa.schema([pa.field("name", pa.string(), nullable=False)]), pa.string(), "hello {}".format
    )
    calculator.unary("fail", pa.schema([pa.field("reason", pa.string(), nullable=False)]), None, fail)
    calculator.unary("count", pa.schema([pa.field("n", pa.int64(), nullable=False)]), pa.int64(), lambda n: n + 1)
    return calculator


if __name__ == "__main__":
    if sys.argv[1:2] == ["--unix"]:
        service().serve_unix(sys.argv[2])
    else:
        service().serve_stdio()
