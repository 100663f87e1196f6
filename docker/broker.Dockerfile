# The pulsarlike broker: `docker build -f docker/broker.Dockerfile -t pulsarlike-broker .` (context: the repo)
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /opt/pulsarlike
# the package alone: metadata first, then the code (see .dockerignore)
COPY setup.cfg pyproject.toml README.md ./
COPY broker_core/ broker_core/
COPY dispatch/ dispatch/
COPY connector/ connector/
COPY jobs/ jobs/
COPY pyspark_pulsarlike/ pyspark_pulsarlike/
COPY pulsarlike/ pulsarlike/
COPY docker/gen_keys.py docker/gen_keys.py
RUN pip install --no-cache-dir . \
    && groupadd --system --gid 10001 pulsarlike \
    && useradd --system --uid 10001 --gid pulsarlike --no-create-home --shell /usr/sbin/nologin pulsarlike \
    && mkdir -p /data /keys \
    && chown pulsarlike:pulsarlike /data /keys

COPY docker/broker.conf /etc/pulsarlike/broker.conf

USER 10001:10001
VOLUME ["/data"]
# gRPC + Pulsar binary (pulsar://), the same over TLS (pulsar+ssl://), HTTP (/metrics, /status.html)
EXPOSE 6650 6651 8080

# the standard gRPC health service: SERVING once the broker accepts clients, NOT_SERVING while it stops
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
    CMD ["pulsarlike", "health", "--url", "pulsar://127.0.0.1:6650", "--timeout", "4"]

# the same `pulsarlike broker` command as everywhere else; 0.0.0.0 so that other containers reach it.
# SIGTERM (docker stop) makes it flush, fsync and exit 0.
ENTRYPOINT ["pulsarlike", "broker"]
CMD ["--data-dir", "/data", "--host", "0.0.0.0", "--port", "6650", "--config", "/etc/pulsarlike/broker.conf"]
