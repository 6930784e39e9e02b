"""Throwaway PostgreSQL databases on the local server (``$HELMFLOW_TEST_PG``, trust authentication)."""

from __future__ import annotations

import asyncio
import os
import uuid

PG_URL = os.environ.get("HELMFLOW_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


async def _pg(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(PG_URL)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def create_pg_database(prefix: str = "helmflow_test") -> str:
    """A throwaway PostgreSQL database; returns its name (drop it with :func:`drop_pg_database`)."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    asyncio.run(_pg(f'CREATE DATABASE "{name}"'))
    return name


def drop_pg_database(name: str) -> None:
    asyncio.run(_pg(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def pg_async_url(database: str) -> str:
    base = PG_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    return f"{base}/{database}"
