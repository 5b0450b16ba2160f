# The reference audit webhook (examples/auditor) as a container image.
#
#   docker build -f docker/auditor.Dockerfile -t floe-auditor .   (from the repository root)
#
# It serves on 0.0.0.0:8282 and reads the audited snapshots' files itself, so
# it needs the warehouse mounted at the path floe writes it to
# (/var/lib/floe/warehouse in docker/docker-compose.yml; read-only is enough).
# The same image, with PyIceberg and PyArrow, serves as a PyIceberg client
# next to floe (the pyiceberg service of docker/docker-compose.yml).
#
#   FLOE_AUDIT_SECRET      the audit hook's shared secret (unset: signatures are not checked)
#   AUDITOR_MAX_AGE        seconds a signed delivery stays acceptable (default 300)
#   AUDITOR_EXPECTATIONS   the expectations file (default: the shipped examples/auditor/expectations.json)

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10002 auditor \
 && useradd --system --uid 10002 --gid auditor --home-dir /opt/auditor --no-create-home \
        --shell /usr/sbin/nologin auditor
COPY examples/auditor/requirements.txt /opt/auditor/requirements.txt
RUN python3 -m venv /opt/auditor/venv \
 && /opt/auditor/venv/bin/pip install --no-cache-dir --disable-pip-version-check \
        -r /opt/auditor/requirements.txt \
 && /opt/auditor/venv/bin/python -c 'import pyiceberg, pyarrow'
COPY examples/auditor/auditor.py examples/auditor/expectations.json /opt/auditor/
RUN /opt/auditor/venv/bin/python /opt/auditor/auditor.py --check \
        --expectations /opt/auditor/expectations.json >/dev/null
ENV PATH=/opt/auditor/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    AUDITOR_LISTEN=0.0.0.0:8282 \
    AUDITOR_EXPECTATIONS=/opt/auditor/expectations.json
WORKDIR /opt/auditor
USER auditor
EXPOSE 8282
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8282/healthz', timeout=4)"]
CMD ["python", "/opt/auditor/auditor.py"]
