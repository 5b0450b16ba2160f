"""The integration suite's fixtures (tests/integration/conftest.py: the
PostgreSQL binaries, the floe daemon, webhook receivers), for the suites
that run on them (tests/soak, tests/failover, tests/patroni), loaded once
under a name of their own: `floe_integration_fixtures`."""
import importlib.util
import sys
from pathlib import Path

INTEGRATION = Path(__file__).resolve().parent / "integration"
NAME = "floe_integration_fixtures"


def load():
    """The module of tests/integration/conftest.py (loaded on first use);
    tests/integration is put on sys.path for its helpers (webhook.py)."""
    if NAME in sys.modules:
        return sys.modules[NAME]
    sys.path.insert(0, str(INTEGRATION))
    spec = importlib.util.spec_from_file_location(NAME, INTEGRATION / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[NAME] = module
    spec.loader.exec_module(module)
    return module
