# Spark jobs on pulsarlike (python + a JRE + pyspark, local[*] by default):
# `docker build -f docker/spark.Dockerfile -t pulsarlike-spark .` (context: the repo)
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYSPARK_PYTHON=python \
    PYSPARK_DRIVER_PYTHON=python

# Spark 4 runs on Java 17; its launch scripts call `ps`
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless=17.0.* procps=2:4.0.* \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/pulsarlike
COPY setup.cfg pyproject.toml README.md ./
COPY broker_core/ broker_core/
COPY dispatch/ dispatch/
COPY connector/ connector/
COPY jobs/ jobs/
COPY pyspark_pulsarlike/ pyspark_pulsarlike/
COPY pulsarlike/ pulsarlike/
# the project itself with its spark extra: setup.cfg bounds the versions (hadolint reads ".[spark]" as a name)
# hadolint ignore=DL3013
RUN pip install --no-cache-dir ".[spark]" \
    && groupadd --system --gid 10001 spark \
    && useradd --system --uid 10001 --gid spark --create-home --home-dir /home/spark --shell /usr/sbin/nologin spark

USER 10001:10001
WORKDIR /home/spark

# the streaming demo against the broker named by PULSARLIKE_SERVICE_URL (compose sets it); any other job:
# `docker run ... pulsarlike-spark pulsarlike job NAME ...`
CMD ["python", "-m", "jobs.stream_demo"]
