"""The soak runs on the integration suite's fixtures (a real PostgreSQL,
real floe daemons, real webhook receivers): they are loaded from
tests/integration/conftest.py under a name of their own."""
import importlib.util
import sys
from pathlib import Path

_INTEGRATION = Path(__file__).resolve().parent.parent / "integration"
sys.path.insert(0, str(_INTEGRATION))

_spec = importlib.util.spec_from_file_location("floe_integration_fixtures",
                                               _INTEGRATION / "conftest.py")
fixtures = importlib.util.module_from_spec(_spec)
sys.modules["floe_integration_fixtures"] = fixtures
_spec.loader.exec_module(fixtures)

pg_bin_dir = fixtures.pg_bin_dir
postgres = fixtures.postgres
floe_factory = fixtures.floe_factory
psql_bin = fixtures.psql_bin
webhooks = fixtures.webhooks
