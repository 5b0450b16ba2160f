"""Apache Iceberg's REST Compatibility Kit against floe.

The kit is ``org.apache.iceberg.rest.RESTCompatibilityKitCatalogTests`` of
the ``tests`` jar of ``org.apache.iceberg:iceberg-open-api`` (Maven
Central): Iceberg's own catalog tests (``CatalogTests`` of iceberg-core's
``tests`` jar) run through Iceberg's Java ``RESTCatalog`` client against a
REST server. scripts/engine-deps.sh puts the kit, its test dependencies and
JUnit's console launcher into the cache (tests/rck/pom.xml lists them);
this test runs the launcher on Java 17 against a floe of its own and fails
with the kit's own report of every test that failed.

The kit is pointed at floe with its documented switches: ``rck.local=false``
(no embedded server), ``uri`` and ``warehouse`` (the client's catalog
properties), and ``rck.requires-namespace-create=true`` (floe creates no
namespace implicitly, as the REST specification has it). Its view tests,
``RESTCompatibilityKitViewCatalogTests`` (Iceberg's ``ViewCatalogTests``
through the same client), run as a second class.

Nine of the kit's table tests create tables at fixed locations under
``file:/tmp`` (``file:/tmp/ns/tbl``, ``file:/tmp/newdb/newtable``), and floe
refuses any location outside its warehouse. They pass only with floe's
warehouse at ``file:///tmp``, which this run configures; that is not a
setting for a real deployment (a directory every local user can write to).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import cache_dir, it

KIT_CLASSES = {
    "tables": ("org.apache.iceberg.rest.RESTCompatibilityKitCatalogTests", 90),
    "views": ("org.apache.iceberg.rest.RESTCompatibilityKitViewCatalogTests", 40),
}
# The kit's fixed table locations (see the module comment).
KIT_WAREHOUSE = "file:///tmp"


def find_java17() -> Path:
    for home in (os.environ.get("RCK_JAVA_HOME"), os.environ.get("JAVA_HOME"),
                 "/usr/lib/jvm/java-17-openjdk-amd64", "/usr/lib/jvm/java-17-openjdk-arm64"):
        if home and (Path(home) / "bin" / "java").is_file():
            return Path(home) / "bin" / "java"
    java = shutil.which("java")
    if java:
        return Path(java)
    pytest.fail("no Java 17 (RCK_JAVA_HOME, JAVA_HOME or java on PATH): Debian openjdk-17-jre-headless")


TABLE_FILE_SUFFIXES = (".json", ".avro", ".parquet", ".orc", ".crc", ".tmp")


def only_table_files(top: Path) -> bool:
    """Whether a directory holds nothing but Iceberg table files (the kit's
    and floe's metadata, manifests and data files, Hadoop's .crc files)."""
    for p in top.rglob("*"):
        if p.is_symlink() or (p.is_file() and not p.name.endswith(TABLE_FILE_SUFFIXES)):
            return False
    return True


@pytest.fixture
def kit_floe(postgres):
    """A floe whose warehouse is /tmp; the namespace folders the run leaves
    there (new top-level folders of table files only) are removed after it."""
    warehouse = Path("/tmp")
    before = set(os.listdir(warehouse))
    env = {"FLOE_DATABASE_URL": postgres.new_database(), "FLOE_WAREHOUSE": KIT_WAREHOUSE}
    f = it.Floe(env=env)
    try:
        f.wait_ready(30)
        yield f
    finally:
        f.cleanup()
        for name in set(os.listdir(warehouse)) - before:
            top = warehouse / name
            if top.is_dir() and not top.is_symlink() and only_table_files(top):
                shutil.rmtree(top, ignore_errors=True)


def failures(reports: Path) -> tuple[int, list[str]]:
    """(tests run, one line per failed test) from JUnit's XML report."""
    run, failed = 0, []
    for xml in reports.glob("*.xml"):
        for case in ET.parse(xml).getroot().iter("testcase"):
            run += 1
            for kind in ("failure", "error"):
                node = case.find(kind)
                if node is not None:
                    text = node.get("message") or node.text or kind
                    msg = " ".join(line.strip() for line in text.splitlines() if line.strip())
                    failed.append(f"{case.get('name')}: {msg[:300]}")
    return run, failed


@pytest.mark.parametrize("part", sorted(KIT_CLASSES))
def test_rest_compatibility_kit(kit_floe, tmp_path, part):
    kit_class, at_least = KIT_CLASSES[part]
    lib = cache_dir() / "rck" / "lib"
    if not any(lib.glob("iceberg-open-api-*-tests.jar")):
        pytest.fail(f"the kit is not in {lib}: run scripts/engine-deps.sh rck")
    reports = tmp_path / "reports"
    argv = [str(find_java17()), "-Xmx1g", "-cp", f"{lib}/*",
            "-Drck.local=false",
            "-Drck.requires-namespace-create=true",
            f"-Duri={kit_floe.url}",
            f"-Dwarehouse={KIT_WAREHOUSE}",
            "org.junit.platform.console.ConsoleLauncher", "execute",
            "--disable-banner", "--details=summary", "--disable-ansi-colors",
            f"--select-class={kit_class}", f"--reports-dir={reports}"]
    res = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         stdin=subprocess.DEVNULL)
    run, failed = failures(reports)
    summary = "\n".join(line for line in res.stdout.splitlines() if line.startswith("["))
    print(f"REST Compatibility Kit: {run} tests, {len(failed)} failed\n{summary}")
    assert run >= at_least, f"the kit ran only {run} tests:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    assert not failed, f"{len(failed)} of {run} kit tests failed:\n" + "\n".join(failed)
    assert res.returncode == 0, res.stdout[-4000:]
