"""A Spark application for tests/spark/test_spark_s3.py, run as a process
of its own so that its environment is only what the test gives it.

    python spark_s3_app.py PLAN.json

PLAN.json is {"conf": {spark setting: value}, "steps": [{"id": ..., "sql": ...}]}.
Each step's SQL runs in order; one JSON line per step goes to stdout,
{"id": ..., "rows": [[...], ...]} or {"id": ..., "error": "<Java class: message, causes>"}.

A step {"id": ..., "refresh": [CATALOG, "NS.TABLE"]} instead has Iceberg's
AWS client properties build the credentials provider S3FileIO builds
from the table's FileIO properties, with the table's credentials taken
as expiring now, and resolves credentials with it: Iceberg's
VendedCredentialsProvider, which fetches them from the table's
client.refresh-credentials-endpoint. Its line: {"id": ..., "endpoint":
the endpoint, "provider": the provider's class, "same-key": whether the
key it got is the one the table's load answered}.
The first line, {"id": "environment", ...}, says what storage credentials
the process and its JVM could have found: AWS_* variables, the JVM's
user.home and whether an .aws directory is under it.
"""

from __future__ import annotations

import json
import os
import sys


def error_text(e: BaseException) -> str:
    """The Java exception and its causes (Py4J's text), or Python's."""
    java = getattr(e, "java_exception", None)
    if java is None:
        return f"{type(e).__name__}: {e}"
    parts = []
    while java is not None and len(parts) < 12:
        parts.append(f"{java.getClass().getName()}: {java.getMessage()}")
        java = java.getCause()
    return " | caused by ".join(parts)


def refreshed(spark, catalog: str, table: str) -> dict:
    jvm = spark._jvm
    iceberg = spark._jsparkSession.sessionState().catalogManager().catalog(catalog).icebergCatalog()
    io = iceberg.loadTable(jvm.org.apache.iceberg.catalog.TableIdentifier.parse(table)).io()
    props = jvm.java.util.HashMap(io.properties())
    loaded_key = props.get("s3.access-key-id")
    props.remove("s3.session-token-expires-at-ms")  # as if they expired now
    provider = jvm.org.apache.iceberg.aws.AwsClientProperties(props).credentialsProvider(
        props.get("s3.access-key-id"), props.get("s3.secret-access-key"),
        props.get("s3.session-token"))
    creds = provider.resolveCredentials()
    return {"endpoint": props.get("client.refresh-credentials-endpoint"),
            "provider": provider.getClass().getName(),
            "same-key": creds.accessKeyId() == loaded_key}


def main(argv: list[str]) -> int:
    with open(argv[0]) as f:
        plan = json.load(f)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for k, v in plan["conf"].items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark._jvm
    home = jvm.java.lang.System.getProperty("user.home")
    env = {
        "id": "environment",
        "python_aws": sorted(k for k in os.environ if k.upper().startswith("AWS")),
        "jvm_aws": sorted(str(k) for k in jvm.java.lang.System.getenv().keySet()
                          if str(k).upper().startswith("AWS")),
        "jvm_aws_properties": sorted(str(k) for k in jvm.java.lang.System.getProperties().keySet()
                                     if str(k).lower().startswith("aws.")),
        "user_home": home,
        "aws_dir": os.path.exists(os.path.join(home, ".aws")),
    }
    print(json.dumps(env), flush=True)
    for step in plan["steps"]:
        out = {"id": step["id"]}
        try:
            if "refresh" in step:
                out.update(refreshed(spark, *step["refresh"]))
            else:
                out["rows"] = [list(r) for r in spark.sql(step["sql"]).collect()]
        except Exception as e:  # noqa: BLE001 - every failure is reported to the test
            out["error"] = error_text(e)
        print(json.dumps(out, default=str), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
