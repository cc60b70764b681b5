"""The Flight SQL front door's credentials and TLS, driven by ADBC (and pyarrow.flight for a raw ticket):
every refusal is "authentication failed" and nothing more.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import adbc_driver_flightsql.dbapi as flightsql
import pyarrow as pa
import pyarrow.compute
import pytest

from flight_sql_support import flight_sql_server, refusal
from server_support import ServerProcess


@pytest.fixture(scope="module")
def server(extension: Path) -> Iterator[ServerProcess]:
    yield from flight_sql_server(extension)


def test_a_wrong_token_is_refused_with_nothing_more(server: ServerProcess) -> None:
    message = refusal(server.flight_sql, {"adbc.flight.sql.authorization_header": "Bearer wrong"})
    assert "authentication failed" in message and "Bearer" not in message and "wrong" not in message


def _any(type_name: str, handle: bytes) -> bytes:
    """A protobuf `Any` packing a Flight SQL message whose field 1 is the bytes `handle`."""

    def length_delimited(field: int, payload: bytes) -> bytes:
        assert len(payload) < 128, "one-byte lengths keep this encoder trivial"
        return bytes([field << 3 | 2, len(payload)]) + payload

    type_url = f"type.googleapis.com/arrow.flight.protocol.sql.{type_name}".encode()
    return length_delimited(1, type_url) + length_delimited(2, length_delimited(1, handle))


def test_a_data_ticket_needs_the_token_too(server: ServerProcess) -> None:
    # DoGet of the two data tickets is served on a path of its own (flight_sql/do_get.rs): it must
    # refuse exactly as every other call does, before it looks at the ticket.
    import pyarrow.flight as flight

    client = flight.FlightClient(server.flight_sql)
    good = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {server.token}".encode())])
    wrong = flight.FlightCallOptions(headers=[(b"authorization", b"Bearer wrong")])
    for kind in ("TicketStatementQuery", "CommandPreparedStatementQuery"):
        ticket = flight.Ticket(_any(kind, b"no such handle"))
        for options in (flight.FlightCallOptions(), wrong):
            with pytest.raises(flight.FlightUnauthenticatedError, match="authentication failed"):
                client.do_get(ticket, options=options).read_all()
        # With the token the ticket itself is judged: its handle names nothing.
        with pytest.raises(pa.ArrowException) as raised:
            client.do_get(ticket, options=good).read_all()
        assert not isinstance(raised.value, flight.FlightUnauthenticatedError), raised.value
        assert "authentication failed" not in str(raised.value)
    client.close()


def test_basic_auth_handshake_yields_the_bearer_token(server: ServerProcess) -> None:
    db_kwargs = {"username": "anyone", "password": server.token}
    with flightsql.connect(server.flight_sql, db_kwargs=db_kwargs) as conn, conn.cursor() as cur:
        cur.execute("SELECT 7")
        assert cur.fetchone() == (7,)
    wrong = {"username": "anyone", "password": "not-the-token"}
    assert "authentication failed" in refusal(server.flight_sql, wrong)


@pytest.mark.parametrize("user", ["u", "us", "usr", "user", "admin", "anyone"])
def test_basic_auth_takes_every_user_name_length(server: ServerProcess, user: str) -> None:
    # ADBC's Go driver sends Basic credentials as base64 without padding: every length of
    # user:token modulo 3 must reach the token.
    db_kwargs = {"username": user, "password": server.token}
    with flightsql.connect(server.flight_sql, db_kwargs=db_kwargs) as conn, conn.cursor() as cur:
        cur.execute("SELECT 8")
        assert cur.fetchone() == (8,)


def test_no_token_is_refused(server: ServerProcess) -> None:
    assert "authentication failed" in refusal(server.flight_sql)


def test_a_no_auth_server_takes_any_client(extension: Path) -> None:
    process = ServerProcess("--listen", "grpc://127.0.0.1:0", "--no-auth", env={"QUIVER_EXTENSION": str(extension)})
    try:
        assert process.token is None
        with flightsql.connect(process.flight_sql) as conn, conn.cursor() as cur:
            cur.execute("SELECT 'open'")
            assert cur.fetchone() == ("open",)
    finally:
        assert process.stop() == 0


def self_signed(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def test_tls_with_a_self_signed_certificate(extension: Path, tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    process = ServerProcess(
        "--listen", "grpc+tls://127.0.0.1:0", "--tls-cert", str(cert), "--tls-key", str(key),
        env={"QUIVER_EXTENSION": str(extension)},
    )  # fmt: skip
    try:
        assert process.flight_sql is not None and process.flight_sql.startswith("grpc+tls://127.0.0.1:")
        db_kwargs = {
            "adbc.flight.sql.authorization_header": f"Bearer {process.token}",
            "adbc.flight.sql.client_option.tls_root_certs": cert.read_text(),
        }
        with flightsql.connect(process.flight_sql, db_kwargs=db_kwargs) as conn, conn.cursor() as cur:
            cur.execute("SELECT 'secret' AS word")
            assert cur.fetchone() == ("secret",)
        untrusted = {"adbc.flight.sql.authorization_header": f"Bearer {process.token}"}
        assert "certificate" in refusal(process.flight_sql, untrusted)
    finally:
        assert process.stop() == 0


def test_tls_files_are_checked_at_start(extension: Path, tmp_path: Path) -> None:
    env = {"QUIVER_EXTENSION": str(extension)}
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    cases = [
        (["--listen", "grpc+tls://127.0.0.1:0"], "needs both tls_cert and tls_key"),
        (["--listen", "grpc://127.0.0.1:0", "--tls-cert", str(garbage), "--tls-key", str(garbage)], "grpc+tls"),
        (["--listen", "grpc+tls://127.0.0.1:0", "--tls-cert", str(tmp_path / "absent.pem"),
          "--tls-key", str(garbage)], "cannot read the TLS certificate"),
        (["--listen", "grpc+tls://127.0.0.1:0", "--tls-cert", str(garbage), "--tls-key", str(garbage)], "TLS"),
    ]  # fmt: skip
    for arguments, message in cases:
        with pytest.raises(AssertionError) as refused:
            ServerProcess(*arguments, env=env)
        assert message in str(refused.value), arguments
