#!/usr/bin/env bash
# Downloads what floe's Spark engine tests (tests/spark) need besides the
# Python packages: the Apache Iceberg Spark runtime jar and Iceberg's AWS
# bundle (the AWS SDK that S3FileIO needs, for the tests on an s3://
# warehouse), from Maven Central, each checked against the SHA-1 published
# next to it. A jar already present and intact is kept. Prints the runtime
# jar's path on the last line.
#
#   scripts/spark-deps.sh                 # into .cache/spark-jars
#   SPARK_JARS_DIR=/some/dir scripts/spark-deps.sh
#
# Environment:
#   SPARK_JARS_DIR    where the jars go (default: <repo>/.cache/spark-jars)
#   ICEBERG_VERSION   Iceberg release (default below; must match tests/spark/conftest.py)
#   MAVEN_REPO        Maven repository base URL (default: Maven Central)
set -euo pipefail
cd "$(dirname "$0")/.."

ICEBERG_VERSION=${ICEBERG_VERSION:-1.10.1}
SPARK_SCALA=3.5_2.12
MAVEN_REPO=${MAVEN_REPO:-https://repo1.maven.org/maven2}
JARS_DIR=${SPARK_JARS_DIR:-$PWD/.cache/spark-jars}

command -v curl >/dev/null || { echo "spark-deps: curl is required" >&2; exit 1; }
command -v sha1sum >/dev/null || { echo "spark-deps: sha1sum is required" >&2; exit 1; }
mkdir -p "$JARS_DIR"

sha1_of() { sha1sum "$1" | cut -d' ' -f1; }

# fetch GROUP_PATH ARTIFACT: ARTIFACT-$ICEBERG_VERSION.jar of Maven Central,
# checked against its published SHA-1, into $JARS_DIR.
fetch() {
	local artifact=$2
	local jar="$artifact-$ICEBERG_VERSION.jar"
	local url="$MAVEN_REPO/$1/$artifact/$ICEBERG_VERSION/$jar"
	local dest="$JARS_DIR/$jar" expected got

	# The published checksum (kept next to the jar, so a later run can check
	# the jar offline).
	if [[ ! -s "$dest.sha1" ]]; then
		curl -fsSL --retry 3 -o "$dest.sha1.part" "$url.sha1"
		mv "$dest.sha1.part" "$dest.sha1"
	fi
	expected=$(tr -dc '0-9a-f' < <(cut -c1-40 "$dest.sha1"))
	if [[ ${#expected} -ne 40 ]]; then
		rm -f "$dest.sha1"
		echo "spark-deps: $url.sha1 is not a SHA-1 checksum" >&2
		exit 1
	fi

	if [[ -f "$dest" && "$(sha1_of "$dest")" == "$expected" ]]; then
		echo "spark-deps: $jar present and verified" >&2
	else
		echo "spark-deps: downloading $url" >&2
		rm -f "$dest"
		curl -fsSL --retry 3 -o "$dest.part" "$url"
		got=$(sha1_of "$dest.part")
		if [[ "$got" != "$expected" ]]; then
			rm -f "$dest.part"
			echo "spark-deps: SHA-1 mismatch for $jar: expected $expected, got $got" >&2
			exit 1
		fi
		mv "$dest.part" "$dest"
		echo "spark-deps: $jar verified (sha1 $expected)" >&2
	fi

}

fetch org/apache/iceberg "iceberg-spark-runtime-$SPARK_SCALA"
# The AWS SDK bundle Iceberg's S3FileIO needs (tests/spark/test_spark_s3.py).
fetch org/apache/iceberg iceberg-aws-bundle

command -v java >/dev/null || echo "spark-deps: warning: no java on PATH; Spark needs Java 17 (Debian: openjdk-17-jre-headless)" >&2
echo "$JARS_DIR/iceberg-spark-runtime-$SPARK_SCALA-$ICEBERG_VERSION.jar"
