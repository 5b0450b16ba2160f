"""The soak runs on the integration suite's fixtures (a real PostgreSQL,
real floe daemons, real webhook receivers): they are loaded from
tests/integration/conftest.py under a name of their own."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import integration_fixtures  # noqa: E402

fixtures = integration_fixtures.load()

pg_bin_dir = fixtures.pg_bin_dir
postgres = fixtures.postgres
floe_factory = fixtures.floe_factory
psql_bin = fixtures.psql_bin
webhooks = fixtures.webhooks
