# syntax=docker/dockerfile:1
# dralloc operator image: `docker build -t dralloc:0.1.0 .`
# Stage 1 builds wheels for dralloc and its runtime dependencies (never the `test`
# extra); stage 2 installs them from those wheels only, offline, and carries no
# compiler, no pip cache and no source tree.

FROM python:3.11-slim AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY operator/ ./operator/
RUN pip wheel --wheel-dir /wheels .

FROM python:3.11-slim AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# A named user for uid 65532: kopf works out an identity when it starts, standalone too,
# from POD_ID or else the user name, and getpass.getuser() fails for a uid without one.
# (dralloc's own leader election names a replica by POD_NAME: handlers/leading.py.)
RUN groupadd --gid 65532 dralloc \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin dralloc
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels dralloc
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["dralloc"]
CMD ["run", "--in-cluster"]
